package peers

// The handshake (peers-v2.0.txt §I; src/peers.c peer_getline_* and
// peer_prepare_hellomsg): the peer that connects sends three lines,
//
//	HAProxyS 2.1
//	<the name it expects the other to have>
//	<its own name> <pid> <relative pid>
//
// and the other answers with a status line, "200" when it takes the
// session. fulcrum adds a fourth word to the last line, "fulcrum/1", and a
// fulcrum accepting it answers "200 fulcrum/1": both then know the other
// is fulcrum (aggregate tables, see define.go). HAProxy 2.6 reads only the
// name of that line and only the number of the status, so it never sees
// the difference, and a fulcrum never sends "200 fulcrum/1" to a peer that
// did not ask.

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

const (
	protoName    = "HAProxyS"
	versionMajor = 2
	versionMinor = 1 // 2.1: timed updates; 2.0 peers get untimed ones
	fulcrumToken = "fulcrum/1"
)

// Status codes of the handshake, and the ones HAProxy keeps as a peer's
// last status before a handshake ends (100, 110).
const (
	statusConnect   = 100 // connecting
	statusConnected = 110 // connected, handshake under way
	statusSuccess   = 200
	statusTryAgain  = 300
	statusProtocol  = 501 // not the peers protocol
	statusVersion   = 502 // a version this side does not speak
	statusHost      = 503 // the name asked for is not this side's
	statusPeer      = 504 // the peer's name is not in this side's section
)

// statusName returns the short name `show peers` gives a status
// (HAProxy's statuscode_str).
func statusName(code int) string {
	switch code {
	case statusConnect:
		return "CONN"
	case statusConnected:
		return "HSHK"
	case statusSuccess:
		return "ESTA"
	case statusTryAgain:
		return "RETR"
	case statusProtocol:
		return "PROT"
	case statusVersion:
		return "VERS"
	case statusHost:
		return "NAME"
	case statusPeer:
		return "UNKN"
	}
	return "NONE"
}

// maxLine bounds a handshake line: names are short.
const maxLine = 1024

// errLongLine is a handshake line longer than maxLine.
var errLongLine = errors.New("handshake line too long")

// readLine reads one handshake line without its "\n" (or "\r\n").
func readLine(r *bufio.Reader) (string, error) {
	var line []byte
	for {
		part, err := r.ReadSlice('\n')
		line = append(line, part...)
		if len(line) > maxLine {
			return "", errLongLine
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil {
			return "", unexpected(err)
		}
		break
	}
	line = bytes.TrimSuffix(line[:len(line)-1], []byte("\r"))
	return string(line), nil
}

// appendHello appends the hello of a peer named local to the peer it
// expects to be remote. minor is the protocol's minor version (1, or 0 for
// a peer that refused 2.1).
func appendHello(dst []byte, remote, local string, pid, minor int) []byte {
	return fmt.Appendf(dst, "%s %d.%d\n%s\n%s %d 1 %s\n", protoName, versionMajor, minor, remote, local, pid, fulcrumToken)
}

// pid returns the process id the hello announces.
func pid() int { return os.Getpid() }

// hello is what a connecting peer said.
type hello struct {
	minor   int    // protocol minor version
	peer    string // its name
	fulcrum bool   // it is fulcrum
}

// readHello reads the hello a connecting peer sends to local, and returns
// it with the status to answer: statusSuccess, or the refusal. known
// reports whether a peer name is in the section. As HAProxy, each line is
// judged as it arrives, so a refusal comes without waiting for the rest.
func readHello(r *bufio.Reader, local string, known func(string) bool) (hello, int, error) {
	var h hello
	line, err := readLine(r)
	if err != nil {
		return h, 0, err
	}
	rest, ok := strings.CutPrefix(line, protoName+" ")
	if !ok {
		return h, statusProtocol, nil
	}
	maj, min, ok := parseVersion(rest)
	if !ok || maj != versionMajor || min > versionMinor {
		return h, statusVersion, nil
	}
	h.minor = min
	if line, err = readLine(r); err != nil {
		return h, 0, err
	}
	if line != local {
		return h, statusHost, nil
	}
	if line, err = readLine(r); err != nil {
		return h, 0, err
	}
	name, rest, ok := strings.Cut(line, " ")
	if !ok {
		return h, statusProtocol, nil
	}
	if !known(name) {
		return h, statusPeer, nil
	}
	h.peer = name
	for _, w := range strings.Fields(rest) {
		if w == fulcrumToken {
			h.fulcrum = true
		}
	}
	return h, statusSuccess, nil
}

// parseVersion parses "<major>.<minor>", digits only.
func parseVersion(s string) (maj, min int, ok bool) {
	a, b, found := strings.Cut(s, ".")
	if !found || !isDigits(a) || !isDigits(b) {
		return 0, 0, false
	}
	maj, err1 := strconv.Atoi(a)
	min, err2 := strconv.Atoi(b)
	return maj, min, err1 == nil && err2 == nil
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// appendStatus appends a status line; a success to a fulcrum peer says
// this side is fulcrum too.
func appendStatus(dst []byte, code int, fulcrum bool) []byte {
	if code == statusSuccess && fulcrum {
		return fmt.Appendf(dst, "%d %s\n", code, fulcrumToken)
	}
	return fmt.Appendf(dst, "%d\n", code)
}

// parseStatus reads a status line as HAProxy's atoi: the leading number
// (0 when there is none), and whether the other side is fulcrum.
func parseStatus(line string) (code int, fulcrum bool) {
	num, rest, _ := strings.Cut(line, " ")
	i := 0
	for i < len(num) && num[i] >= '0' && num[i] <= '9' && i < 9 {
		i++
	}
	code, _ = strconv.Atoi(num[:i])
	return code, strings.TrimSpace(rest) == fulcrumToken
}

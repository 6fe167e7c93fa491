package proxy

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fulcrum-proxy/fulcrum/conf"
	"github.com/rs/zerolog"
)

// fuzzServerTimeout is the response fuzzer's timeout_server: a response
// without an end (a body delimited by a close that never comes) costs
// that much, and a shorter one would let a loaded machine turn the
// innocent client's answer into a 504.
const fuzzServerTimeout = time.Second

// FuzzHTTPResponse has a server answer a first client's GET with
// arbitrary bytes (closing after them when closeAfter), through a real
// frontend whose backend has one server and http_reuse always, then sends
// a second, innocent GET from another client connection: the server
// connection the first exchange left in the pool, if any, is the second
// one's. Invariants:
//
//   - nothing panics, and no exchange outlives fuzzReplyDeadline;
//   - what the first client gets is well-framed HTTP/1.1 (possibly cut
//     short: an abort is allowed, relaying broken framing is not), with
//     at most one final response;
//   - the innocent client gets exactly its own response: the echo of its
//     request from the upstream, and nothing else;
//   - the upstream frames only the two requests, whole.
//
// Inputs that are a knownBroken shape of the differential test are
// skipped. With FUZZ_SKIP_KNOWN=1 in the environment, an input that
// fails in a way an open issue 16 point explains is skipped too
// (knownResponseFault), so that a fuzzing run looks for new faults
// rather than finding the known ones again.
func FuzzHTTPResponse(f *testing.F) {
	type script struct {
		resp       []byte
		closeAfter bool
	}
	var cur atomic.Pointer[script]
	cur.Store(&script{})
	up := startRecUpstream(f, "fuzz", "X-Fuzz-Src", func(m *strictMsg) (string, bool, bool) {
		if m.target != "/fuzz" {
			return "", false, false
		}
		s := cur.Load()
		return string(s.resp), s.closeAfter, true
	})
	addr := startFuzzResponseProxy(f, up.addr())
	broken := knownBrokenInputs(false)
	skipKnown := os.Getenv("FUZZ_SKIP_KNOWN") == "1"
	f.Fuzz(func(t *testing.T, resp []byte, closeAfter bool) {
		if name, ok := broken[fmt.Sprint(closeAfter)+string(resp)]; ok {
			t.Skipf("known broken: %s (%s)", name, knownBroken[name])
		}
		cur.Store(&script{resp, closeAfter})
		problems := exchangeFuzzResponse(addr, up)
		if len(problems) == 0 {
			return
		}
		if point := knownResponseFault(resp); skipKnown && point != "" {
			t.Skipf("fails as issue 16 point %s explains: %q", point, problems)
		}
		t.Fatalf("server response %q (close after: %v):\n  %s", resp, closeAfter, strings.Join(problems, "\n  "))
	})
}

// exchangeFuzzResponse runs one input's two exchanges and returns what is
// wrong.
func exchangeFuzzResponse(addr string, up *recUpstream) []string {
	c, port, err := dialDiff(addr, up)
	if err != nil {
		return []string{fmt.Sprintf("dial: %v", err)}
	}
	a := exchange(c, port, []byte("GET /fuzz HTTP/1.1\r\nHost: a\r\n\r\n"), "GET", 1, true)
	c.Close()
	var problems []string
	switch {
	case a.end == "hang":
		problems = append(problems, fmt.Sprintf("first client: no end within %v; got %q", diffDeadline, a.raw))
	case a.malformed != "":
		problems = append(problems, fmt.Sprintf("first client: the proxy relayed broken framing (%s): %q", a.malformed, a.raw))
	case len(a.finals()) > 1:
		problems = append(problems, fmt.Sprintf("first client: one request, %d responses: %q", len(a.finals()), a.raw))
	}
	bport, bprob := innocent(addr, up)
	problems = append(problems, bprob...)
	if !up.waitQuiet(diffDeadline) {
		problems = append(problems, fmt.Sprintf("the upstream is still inside a request %v after the exchanges", diffDeadline))
	}
	stray, rejects := up.take()
	if len(stray) > 0 || len(rejects) > 0 {
		problems = append(problems, fmt.Sprintf("the upstream framed strays %q or refused %q", stray, rejects))
	}
	// The first client's request may have been framed twice: a request
	// without a body that a reused server connection closed on is retried
	// on a new one, as HAProxy does.
	for _, q := range up.framed(port) {
		if q.target != "/fuzz" {
			problems = append(problems, fmt.Sprintf("the upstream framed %v for the first client, which sent GET /fuzz", q))
		}
	}
	return append(problems, checkInnocentFramed(up, bport)...)
}

// startFuzzResponseProxy starts one frontend and a backend with one server
// at upstream, http_reuse always, and the response fuzzer's timeouts.
func startFuzzResponseProxy(tb testing.TB, upstream string) string {
	tb.Helper()
	cfg, err := conf.Parse("fuzzresp.toml", []byte(fmt.Sprintf(`
[[frontend]]
name = "www"
bind = ["127.0.0.1:0"]
default_backend = "web"
http_request = ["set-header X-Fuzz-Src %%[src_port]"]
[[backend]]
name = "web"
http_reuse = "always"
retries = 0
[[backend.server]]
name = "s1"
address = %q
`, upstream)))
	if err != nil {
		tb.Fatalf("config: %v", err)
	}
	fe, be := cfg.Frontends[0], cfg.Backends[0]
	fe.TimeoutClient, fe.TimeoutHTTPRequest = fuzzProxyTimeout, fuzzProxyTimeout
	be.TimeoutConnect, be.TimeoutServer = fuzzProxyTimeout, fuzzServerTimeout
	p, err := New(cfg, zerolog.Nop())
	if err != nil {
		tb.Fatalf("New: %v", err)
	}
	if err := p.Start(); err != nil {
		tb.Fatalf("Start: %v", err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		p.Shutdown(ctx)
	})
	return p.Frontends[0].Addrs()[0].String()
}

// connListsFraming finds a Connection field that lists a framing or
// routing field (issue 16 point 1).
var connListsFraming = regexp.MustCompile(`(?i)\nconnection[ \t]*:[^\n]*(content-length|transfer-encoding|host)`)

// knownResponseFault says which open issue 16 point explains a failure
// with server response resp ("" if none): bytes beyond the first final
// response, or a 101 (point 3); broken chunk framing or trailers (point
// 2); a Connection field listing a framing field, or more than 101
// fields (point 1).
func knownResponseFault(resp []byte) string {
	if connListsFraming.Match(resp) || bytes.Count(resp, []byte("\n")) > 102 {
		return "1"
	}
	r := &strictReader{br: bufio.NewReader(bytes.NewReader(resp))}
	for {
		m, err := r.readResponse("GET")
		switch {
		case err != nil && m != nil && (m.chunked || len(m.trailers) > 0):
			return "2" // the head was fine: the body or trailers broke
		case err != nil:
			return ""
		case m.status == 101:
			return "3"
		case m.status < 200:
			continue
		}
		if _, err := r.br.Peek(1); err == nil {
			return "3" // bytes beyond the response
		}
		return ""
	}
}

// knownRequestFault says which open issue 16 point explains a fuzz
// failure of FuzzHTTPRequest with input data and failure message msg (""
// if none).
func knownRequestFault(data []byte, msg string) string {
	switch {
	case connListsFraming.Match(data) || bytes.Count(data, []byte("\n")) > 102:
		return "1"
	case strings.Contains(msg, "in request target"):
		return "6"
	case strings.Contains(msg, "refuses") && bytes.Contains(bytes.ToLower(data), []byte("chunked")):
		return "2" // the proxy forwards chunk lines and trailers as received
	}
	return ""
}

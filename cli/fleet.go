package cli

import (
	"bufio"
	"cmp"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// Instance is one fulcrum (or HAProxy) of a fleet: the name its results
// are printed under and its Runtime API address.
type Instance struct {
	Name string
	Addr Addr
}

// Member is an instance a Client runs commands on, with its session. A
// Client's commands reach every member at once, one exchange at a time
// per member. A single socket is one member without a name: its replies
// print as they are, without an instance column or prefix.
type Member struct {
	Instance
	Sess *Session

	// dialErr is why the first dial failed: the first command gets it as
	// its result instead of dialling again (the next one dials).
	dialErr error
	payload bool // the server waits for the lines of a payload
	// failed is the member's first failure in a script (Client.KeepGoing
	// false): it then runs nothing more, as a one-socket script stops.
	failed error
}

// DialMembers opens a prompt-mode session on each instance, at most
// parallel at once (<= 0: all at once). An instance that cannot be
// reached still gets a member, whose session dials again at its second
// command; its first command fails with the dial's error. The error
// returned lists the instances that could not be reached, nil when all
// were.
func DialMembers(insts []Instance, timeout time.Duration, parallel int) ([]*Member, error) {
	ms := make([]*Member, len(insts))
	for i, in := range insts {
		ms[i] = &Member{Instance: in}
	}
	var errs []error
	var mu sync.Mutex
	each(ms, parallel, func(_ int, m *Member) {
		s, err := Dial(m.Addr, timeout)
		if err != nil {
			m.Sess = &Session{Addr: m.Addr, Timeout: timeout}
			m.dialErr = err
			mu.Lock()
			errs = append(errs, err)
			mu.Unlock()
			return
		}
		m.Sess = s
	})
	return ms, errors.Join(errs...)
}

// CloseMembers ends the members' sessions.
func CloseMembers(ms []*Member) {
	for _, m := range ms {
		if m.Sess != nil {
			m.Sess.Close()
		}
	}
}

// each runs fn on every member of ms, at most parallel at once (<= 0: all
// at once), and returns when all are done. fn gets the member's index in
// ms, so that it can store its result without a lock.
func each(ms []*Member, parallel int, fn func(i int, m *Member)) {
	if parallel <= 0 || parallel > len(ms) {
		parallel = len(ms)
	}
	if len(ms) == 1 {
		fn(0, ms[0]) // one socket: no goroutine, as before fleets
		return
	}
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	for i, m := range ms {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			fn(i, m)
		}()
	}
	wg.Wait()
}

// DialError returns why m's first dial failed (DialMembers), until a
// command has reported it; nil once it was reached.
func (m *Member) DialError() error { return m.dialErr }

// exec sends one command on m's session (see Session.Exec); the first
// command after a failed dial gets the dial's error.
func (m *Member) exec(cmd string) (string, error) {
	if err := m.dialErr; err != nil {
		m.dialErr = nil
		return "", err
	}
	return m.Sess.Exec(cmd)
}

// prefix is what m's lines start with: "NAME: ", or nothing for an
// unnamed member.
func (m *Member) prefix() string {
	if m.Name == "" {
		return ""
	}
	return m.Name + ": "
}

// prefixLines starts each line of s with p and ends it with a newline.
func prefixLines(p, s string) string {
	s = withNewline(s)
	if p == "" || s == "" {
		return s
	}
	var b strings.Builder
	for _, l := range strings.SplitAfter(s, "\n") {
		if l != "" {
			b.WriteString(p + l)
		}
	}
	return b.String()
}

// memberError is a failure of one member, printed under its name.
type memberError struct {
	m   *Member
	err error
}

func (e *memberError) Error() string { return e.m.prefix() + e.err.Error() }
func (e *memberError) Unwrap() error { return e.err }

// fleetError is the outcome of a command that failed on some members of
// a fleet: each failure was printed under its instance's name. Its exit
// code is the highest of theirs (ExitCode); errors.Is sees each failure.
type fleetError struct{ errs []error }

func (e *fleetError) Error() string {
	var s []string
	for _, err := range e.errs {
		s = append(s, err.Error())
	}
	return strings.Join(s, "; ")
}

func (e *fleetError) Unwrap() []error { return e.errs }

// joinFailures returns nil, the last failure of an unnamed member (one
// socket: ErrReply, ErrUnreachable... as before fleets), or a fleetError.
func joinFailures(errs []error) error {
	if len(errs) == 0 {
		return nil
	}
	var me *memberError
	if errors.As(errs[len(errs)-1], &me) && me.m.Name == "" {
		return me.err
	}
	return &fleetError{errs}
}

// NameInstances names the instances given by address on the command line
// (-s): a Unix socket by the shortest tail of its path, in whole path
// components, that no other address of addrs ends with ("lb1.sock" beside
// "lb2.sock"; "a/admin.sock" beside "b/admin.sock"), a TCP address by its
// "host:port". An address given twice is an error.
func NameInstances(addrs []string) ([]Instance, error) {
	parts := make([][]string, len(addrs))
	seen := map[string]bool{}
	for i, a := range addrs {
		network, address := Addr(a).network()
		if network == "unix" {
			address = filepath.Clean(address)
		}
		key := network + ":" + address
		if seen[key] {
			return nil, fmt.Errorf("%w: %s given twice", ErrUsage, a)
		}
		seen[key] = true
		if network == "unix" {
			parts[i] = strings.Split(address, "/")
		} else {
			parts[i] = []string{address}
		}
	}
	tail := func(p []string, k int) string { return strings.Join(p[max(len(p)-k, 0):], "/") }
	out := make([]Instance, len(addrs))
	names := map[string]bool{}
	for i, p := range parts {
		k := 1
		for ; k < len(p); k++ {
			unique := true
			for j, q := range parts {
				if j != i && tail(q, k) == tail(p, k) {
					unique = false
					break
				}
			}
			if unique {
				break
			}
		}
		out[i] = Instance{Name: cmp.Or(tail(p, k), addrs[i]), Addr: Addr(addrs[i])} // "/" has no tail
		names[out[i].Name] = true
	}
	if len(names) < len(out) { // a TCP "host:port" that is also a file's name
		for i := range out {
			out[i].Name = addrs[i]
		}
	}
	return out, nil
}

// ParseFleet reads a fleet file: one instance per line, "NAME ADDRESS"
// or "ADDRESS" alone (then named as NameInstances does), where ADDRESS is
// a Unix socket path (relative to the file's directory) or a TCP
// "[tcp:]HOST:PORT"; blank lines and comments (from a word that starts
// with '#' to the end of the line) are skipped. file names the file in
// errors ("FILE:LINE: message") and anchors relative paths. Duplicate
// names and addresses, and a file without an instance, are errors; every
// error of the file is reported, not the first.
func ParseFleet(file string, r io.Reader) ([]Instance, error) {
	dir := filepath.Dir(file)
	type entry struct {
		line       int
		name, addr string
	}
	var entries []entry
	var errs []lineError
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 4096), 1<<20)
	for n := 1; sc.Scan(); n++ {
		var f []string
		for _, w := range strings.Fields(sc.Text()) {
			if strings.HasPrefix(w, "#") {
				break
			}
			f = append(f, w)
		}
		var e entry
		switch len(f) {
		case 0:
			continue
		case 1:
			e = entry{n, "", f[0]}
		case 2:
			e = entry{n, f[0], f[1]}
		default:
			errs = append(errs, lineError{n, fmt.Sprintf("expected NAME ADDRESS or ADDRESS, got %d words", len(f))})
			continue
		}
		if network, address := Addr(e.addr).network(); network == "unix" && !filepath.IsAbs(address) {
			e.addr = filepath.Join(dir, address)
		}
		entries = append(entries, e)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if len(entries) == 0 && len(errs) == 0 {
		return nil, fleetFileError{fmt.Errorf("%s: no instance (expected lines of NAME ADDRESS)", file)}
	}
	// Unnamed entries are named among all the addresses, as with -s.
	var addrs []string
	for _, e := range entries {
		addrs = append(addrs, e.addr)
	}
	derived, err := NameInstances(addrs)
	if err != nil {
		derived = make([]Instance, len(entries))
		for i, e := range entries {
			derived[i] = Instance{Name: e.addr}
		}
	}
	var out []Instance
	byName, byAddr := map[string]int{}, map[string]int{}
	for i, e := range entries {
		name := e.name
		if name == "" {
			name = derived[i].Name
		}
		network, address := Addr(e.addr).network()
		key := network + ":" + filepath.Clean(address)
		if network != "unix" {
			key = network + ":" + address
		}
		switch {
		case byName[name] != 0:
			errs = append(errs, lineError{e.line, fmt.Sprintf("instance %q: already named on line %d", name, byName[name])})
		case byAddr[key] != 0:
			errs = append(errs, lineError{e.line, fmt.Sprintf("%s: already listed on line %d", e.addr, byAddr[key])})
		default:
			byName[name], byAddr[key] = e.line, e.line
			out = append(out, Instance{Name: name, Addr: Addr(e.addr)})
		}
	}
	if len(errs) > 0 {
		slices.SortStableFunc(errs, func(a, b lineError) int { return a.line - b.line })
		var all []error
		for _, e := range errs {
			all = append(all, fmt.Errorf("%s:%d: %s", file, e.line, e.msg))
		}
		return nil, fleetFileError{errors.Join(all...)}
	}
	return out, nil
}

// lineError is a problem of one line of a fleet file.
type lineError struct {
	line int
	msg  string
}

// fleetFileError is what is wrong with a fleet file, one "FILE:LINE:
// message" per line. It is a usage error: nothing was sent.
type fleetFileError struct{ error }

func (fleetFileError) Is(target error) bool { return target == ErrUsage }

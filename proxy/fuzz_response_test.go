package proxy

import (
	"context"
	"flag"
	"fmt"
	"os"
	"runtime"
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
// innocent client's answer into a 504. While fuzzing, where most inputs
// have no end, fuzzingServerTimeout keeps the exec rate up.
const (
	fuzzServerTimeout    = time.Second
	fuzzingServerTimeout = 500 * time.Millisecond
)

// fuzzing reports whether the test binary runs with -test.fuzz.
func fuzzing() bool {
	f := flag.Lookup("test.fuzz")
	return f != nil && f.Value.String() != ""
}

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
// skipped.
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
	addr, srv := startFuzzResponseProxy(f, up.addr())
	broken := knownBrokenInputs(false)
	f.Fuzz(func(t *testing.T, resp []byte, closeAfter bool) {
		if name, ok := broken[fmt.Sprint(closeAfter)+string(resp)]; ok {
			t.Skipf("known broken: %s (%s)", name, knownBroken[name])
		}
		cur.Store(&script{resp, closeAfter})
		defer srv.CloseIdle() // each input starts with an empty pool
		defer hangWatch(fmt.Sprintf("response %q (close after: %v)", resp, closeAfter), 3*diffDeadline).Stop()
		problems, innocent504 := exchangeFuzzResponse(addr, up)
		if len(problems) == 0 {
			return
		}
		if innocent504 && fuzzing() {
			// fuzzingServerTimeout is short: on a loaded machine the
			// innocent request may meet it (the input passes with the
			// normal timeout).
			t.Skipf("the innocent client's request timed out: %q", problems)
		}
		t.Fatalf("server response %q (close after: %v):\n  %s", resp, closeAfter, strings.Join(problems, "\n  "))
	})
}

// hangWatch arms a watchdog for one fuzz input: if it still runs after d
// (every exchange has its own deadline, so only a hang gets there), every
// goroutine's stack goes to a file in the temporary directory and the
// process panics naming the input and the file (a fuzz worker's own
// output is lost when the coordinator kills it).
func hangWatch(input string, d time.Duration) *time.Timer {
	return time.AfterFunc(d, func() {
		buf := make([]byte, 16<<20)
		buf = buf[:runtime.Stack(buf, true)]
		f, err := os.CreateTemp("", "fuzz-hang-*.txt")
		name := "(stacks not written)"
		if err == nil {
			f.Write(buf)
			f.Close()
			name = f.Name()
		}
		panic(fmt.Sprintf("input %s hung for %v; stacks in %s", input, d, name))
	})
}

// exchangeFuzzResponse runs one input's two exchanges and returns what is
// wrong, and whether the innocent client got the proxy's 504.
func exchangeFuzzResponse(addr string, up *recUpstream) ([]string, bool) {
	c, port, err := dialDiff(addr, up)
	if err != nil {
		return []string{fmt.Sprintf("dial: %v", err)}, false
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
	innocent504 := len(bprob) > 0 && strings.Contains(bprob[0], "HTTP/1.1 504 ")
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
	return append(problems, checkInnocentFramed(up, bport)...), innocent504
}

// startFuzzResponseProxy starts one frontend and a backend with one server
// at upstream, http_reuse always, and the response fuzzer's timeouts. It
// returns the frontend's address and the server.
func startFuzzResponseProxy(tb testing.TB, upstream string) (string, *Server) {
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
	if fuzzing() {
		be.TimeoutServer = fuzzingServerTimeout
	}
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
	return p.Frontends[0].Addrs()[0].String(), p.Backends[0].Servers()[0]
}

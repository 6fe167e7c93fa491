package runtime

import (
	"context"
	"crypto/tls"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fulcrum-proxy/fulcrum/conf"
	"github.com/fulcrum-proxy/fulcrum/internal/testcert"
)

// handshakeLoop opens new TLS connections to addr one after the other
// (full handshakes, no resumption) until stop is closed, recording the
// serial each one got, in order, and the failures.
type handshakeLoop struct {
	mu      sync.Mutex
	serials []int64
	fails   []error
	done    chan struct{}
}

func startHandshakeLoop(addr string, cfg *tls.Config, stop <-chan struct{}) *handshakeLoop {
	h := &handshakeLoop{done: make(chan struct{})}
	go func() {
		defer close(h.done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			c, err := tls.Dial("tcp", addr, cfg)
			h.mu.Lock()
			if err != nil {
				h.fails = append(h.fails, err)
			} else {
				h.serials = append(h.serials, c.ConnectionState().PeerCertificates[0].SerialNumber.Int64())
				c.Close()
			}
			h.mu.Unlock()
		}
	}()
	return h
}

// count returns how many handshakes succeeded so far.
func (h *handshakeLoop) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.serials)
}

// socatRun sends input to the socket with socat, as an operator's script
// does, and returns the reply.
func socatRun(t *testing.T, socat, sock, input string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, socat, "stdio", "unix-connect:"+sock)
	cmd.Stdin = strings.NewReader(input)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("socat: %v\n%s", err, out)
	}
	return string(out)
}

// TestLiveCertChange: while clients keep handshaking, `set ssl cert` then
// `commit ssl cert` through socat switch the certificate served from the
// old serial to the new one at the commit, without a failed handshake;
// `abort ssl cert` leaves the served one.
func TestLiveCertChange(t *testing.T) {
	socat := needTool(t, "socat", "socat")
	dir, err := os.MkdirTemp("", "live")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	ca := testcert.NewCA(t, "Test CA", testcert.Options{})
	testcert.Write(t, dir, "site.pem", ca.Server(t, testcert.Options{Serial: 1}, "www.test").PEM(true))
	next := ca.Server(t, testcert.Options{Serial: 2, Key: testcert.RSA}, "www.test")
	other := ca.Server(t, testcert.Options{Serial: 3}, "www.test")
	testcert.Write(t, dir, "fulcrum.toml", []byte(`
[[frontend]]
name = "www"
bind = ["127.0.0.1:0 ssl crt site.pem"]
`))
	c, err := conf.Load(filepath.Join(dir, "fulcrum.toml"))
	if err != nil {
		t.Fatal(err)
	}
	e := startEnvConf(t, c)
	sock := e.socks[LevelAdmin]
	addr := e.p.Frontends[0].Addrs()[0].String()
	cfg := &tls.Config{RootCAs: ca.Pool(), ServerName: "www.test"}

	stop := make(chan struct{})
	loop := startHandshakeLoop(addr, cfg, stop)
	stopped := false
	stopLoop := func() {
		if !stopped {
			stopped = true
			close(stop)
			<-loop.done
		}
	}
	defer stopLoop()
	waitFor(t, 10*time.Second, "handshakes on the old certificate", func() bool { return loop.count() >= 20 })
	if got := socatRun(t, socat, sock, "set ssl cert site.pem <<\n"+string(next.PEM(true))+"\n"); got != "Transaction created for certificate site.pem!\n\n" {
		t.Fatalf("set: got %q", got)
	}
	before := loop.count()
	waitFor(t, 10*time.Second, "handshakes while the transaction is open", func() bool { return loop.count() >= before+20 })
	if got := socatRun(t, socat, sock, "commit ssl cert site.pem\n"); got != "Committing site.pem.\nSuccess!\n\n" {
		t.Fatalf("commit: got %q", got)
	}
	// Handshakes recorded by now may have the old serial, and so may the
	// one in flight at the commit; every later one has the new serial.
	committed := loop.count()
	waitFor(t, 10*time.Second, "handshakes after the commit", func() bool { return loop.count() >= committed+20 })

	// abort leaves the committed certificate.
	if got := socatRun(t, socat, sock, "set ssl cert site.pem <<\n"+string(other.PEM(true))+"\n"); got != "Transaction created for certificate site.pem!\n\n" {
		t.Fatalf("set: got %q", got)
	}
	if got := socatRun(t, socat, sock, "abort ssl cert site.pem\n"); got != "Transaction aborted for certificate 'site.pem'!\n\n" {
		t.Fatalf("abort: got %q", got)
	}
	aborted := loop.count()
	waitFor(t, 10*time.Second, "handshakes after the abort", func() bool { return loop.count() >= aborted+20 })

	stopLoop()
	// show info counted every handshake, all full ones (no resumption);
	// the server side of the last connections may take a moment to close.
	var info string
	waitFor(t, 10*time.Second, "CurrSslConns: 0", func() bool {
		info = dialRun(t, "unix", sock, "show info\n")
		return strings.Contains(info, "\nCurrSslConns: 0\n")
	})
	for _, want := range []string{fmt.Sprintf("\nCumSslConns: %d\n", len(loop.serials)), "\nCurrSslConns: 0\n", "\nSslFrontendSessionReuse_pct: 0\n"} {
		if !strings.Contains(info, want) {
			t.Errorf("show info: no %q in\n%s", strings.TrimSpace(want), info)
		}
	}
	if len(loop.fails) > 0 {
		t.Fatalf("%d failed handshakes, first: %v", len(loop.fails), loop.fails[0])
	}
	// The serials: 1 up to the commit, 2 from it on, never 1 again nor 3.
	switched := -1
	for i, s := range loop.serials {
		switch {
		case s == 2 && switched < 0:
			switched = i
		case s == 1 && switched >= 0, s != 1 && s != 2:
			t.Fatalf("handshake %d got serial %d after the switch at %d", i, s, switched)
		}
	}
	if switched < before+20 || switched > committed+1 {
		t.Fatalf("switched to the new certificate at handshake %d, want between %d (set) and %d (commit's reply, plus the one in flight)", switched, before+20, committed+1)
	}
	t.Logf("%d handshakes, switched at %d (commit replied at %d), 0 failed", len(loop.serials), switched, committed)
}

package runtime

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"
)

// getOn sends a keep-alive GET on c and returns its status.
func getOn(c net.Conn, br *bufio.Reader) (int, error) {
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		return 0, err
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return 0, err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}

// refused reports whether connections to addr are refused, within 5 s
// (a closed listener's socket goes once no Accept holds it: a dial just
// before may be accepted and reset).
func refused(addr string) error {
	var err error
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		var c net.Conn
		c, err = net.DialTimeout("tcp", addr, 5*time.Second)
		if c != nil {
			c.Close()
		}
		if errors.Is(err, syscall.ECONNREFUSED) {
			return nil
		}
	}
	return fmt.Errorf("dial %s: %v, want connection refused", addr, err)
}

// disable frontend stops the frontend accepting (connections refused,
// port kept) while its established connections are served; enable
// frontend accepts again; shutdown frontend closes it for good. Replies
// as HAProxy 2.6's (reference golden/frontend-disable.txt, src/proxy.c),
// on both connection layers.
func TestDisableFrontend(t *testing.T) {
	for _, netio := range []string{"epoll", "go"} {
		t.Run(netio, func(t *testing.T) {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })}
			go srv.Serve(l)
			t.Cleanup(func() { srv.Close() })
			up := l.Addr().String()
			// A port of its own: one bound as port 0 is not kept
			// across a pause (Linux), nor by HAProxy.
			addr := freeAddr(t)
			cfg := strings.Replace(twoServers(up, up), `bind = ["127.0.0.1:0"]`, `bind = ["`+addr+`"]`, 1)
			e := startEnv(t, "[global]\ntune_netio = \""+netio+"\"\n"+cfg)
			kept, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer kept.Close()
			kbr := bufio.NewReader(kept)
			if st, err := getOn(kept, kbr); st != 200 {
				t.Fatalf("before: %d, %v", st, err)
			}
			if got := e.run(t, LevelOperator, "disable frontend fe_web"); got != "Permission denied\n\n" {
				t.Errorf("operator: %q", got)
			}
			if got := e.run(t, LevelAdmin, "disable frontend fe_web"); got != "\n" {
				t.Fatalf("disable frontend: %q", got)
			}
			if st := statRow(t, e, "fe_web", "FRONTEND", "status"); st != "PAUSED" {
				t.Errorf("status %q, want PAUSED", st)
			}
			if err := refused(addr); err != nil {
				t.Error(err)
			}
			if st, err := getOn(kept, kbr); st != 200 {
				t.Errorf("established connection while paused: %d, %v", st, err)
			}
			for line, want := range map[string]string{
				"disable frontend fe_web": "All sockets are already disabled.\n\n",
				"disable frontend nofe":   "No such frontend.\n\n",
				"disable frontend":        "A frontend name is expected.\n\n",
			} {
				if got := e.run(t, LevelAdmin, line); got != want {
					t.Errorf("%s: %q, want %q", line, got, want)
				}
			}
			if got := e.run(t, LevelAdmin, "enable frontend fe_web"); got != "\n" {
				t.Fatalf("enable frontend: %q", got)
			}
			if got := e.run(t, LevelAdmin, "enable frontend fe_web"); got != "All sockets are already enabled.\n\n" {
				t.Errorf("enable twice: %q", got)
			}
			if st := statRow(t, e, "fe_web", "FRONTEND", "status"); st != "OPEN" {
				t.Errorf("status %q, want OPEN", st)
			}
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatalf("after enable frontend: %v", err)
			}
			if st, err := getOn(c, bufio.NewReader(c)); st != 200 {
				t.Errorf("new connection after enable: %d, %v", st, err)
			}
			c.Close()

			if got := e.run(t, LevelAdmin, "shutdown frontend fe_web"); got != "\n" {
				t.Fatalf("shutdown frontend: %q", got)
			}
			if st := statRow(t, e, "fe_web", "FRONTEND", "status"); st != "STOP" {
				t.Errorf("status %q, want STOP", st)
			}
			if err := refused(addr); err != nil {
				t.Error(err)
			}
			// Its keep-alive connection gets its next answer, then is
			// closed, as HAProxy's stop.
			if st, err := getOn(kept, kbr); st != 200 {
				t.Errorf("established connection after shutdown: %d, %v", st, err)
			}
			kept.SetReadDeadline(time.Now().Add(5 * time.Second))
			if b, err := kbr.ReadByte(); err != io.EOF {
				t.Errorf("connection after its last answer: read %q, %v; want EOF", b, err)
			}
			for line, want := range map[string]string{
				"shutdown frontend fe_web": "Frontend was already shut down.\n\n",
				"disable frontend fe_web":  "Frontend was previously shut down, cannot disable.\n\n",
				"enable frontend fe_web":   "Frontend was previously shut down, cannot enable.\n\n",
			} {
				if got := e.run(t, LevelAdmin, line); got != want {
					t.Errorf("%s: %q, want %q", line, got, want)
				}
			}
		})
	}
}

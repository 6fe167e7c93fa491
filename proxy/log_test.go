package proxy

import (
	"bytes"
	"encoding/json"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/fulcrum-proxy/fulcrum/conf"
)

// syncBuffer is a goroutine-safe log sink.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) lines() []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(s.b.String()), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil {
			out = append(out, m)
		}
	}
	return out
}

func startLoggedProxy(t *testing.T, cfg *conf.Config) (*Proxy, string, *syncBuffer) {
	t.Helper()
	buf := &syncBuffer{}
	p, err := New(cfg, zerolog.New(buf).Level(zerolog.InfoLevel))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Shutdown(contextBackground()) })
	return p, p.Frontends[0].Addrs()[0].String(), buf
}

func TestAccessLogHTTP(t *testing.T) {
	u := newUpstream(t, "s1")
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	dead := l.Addr().String()
	l.Close()
	cfg := testConfig(conf.ModeHTTP, []string{u.addr(), dead}, []int{1, 1})
	cfg.Backends[0].Retries = 0
	_, addr, buf := startLoggedProxy(t, cfg)
	rc := dialRaw(t, addr)
	rc.do(t, "GET /ok?x=1 HTTP/1.1\r\nHost: a\r\n\r\n") // s1
	rc.do(t, "GET /dead HTTP/1.1\r\nHost: a\r\n\r\n")   // s2: refused, 503
	dialRaw(t, addr).do(t, "BROKEN\r\n\r\n")
	waitFor(t, 2*time.Second, "three log lines", func() bool { return len(buf.lines()) >= 3 })
	// Lines are written after each response is flushed: order them by status.
	byStatus := map[float64]map[string]any{}
	for _, l := range buf.lines() {
		byStatus[l["status"].(float64)] = l
	}
	lines := []map[string]any{byStatus[200], byStatus[503], byStatus[400]}
	want := []map[string]any{
		{"frontend": "www", "backend": "web", "server": "s1", "status": 200.0, "termination_state": "--",
			"request": "GET /ok?x=1 HTTP/1.1", "client_ip": "127.0.0.1", "Tw": 0.0},
		{"backend": "web", "server": "s2", "status": 503.0, "termination_state": "SC",
			"request": "GET /dead HTTP/1.1", "Tc": -1.0, "Tr": -1.0},
		{"backend": "<NOSRV>", "server": "<NOSRV>", "status": 400.0, "termination_state": "PR", "Tw": -1.0,
			"request": "<BADREQ>"},
	}
	for i, w := range want {
		for k, v := range w {
			if lines[i][k] != v {
				t.Errorf("line %d: %s: got %v, want %v (line %v)", i, k, lines[i][k], v, lines[i])
			}
		}
		for _, k := range []string{"Tq", "Tw", "Tc", "Tr", "Ta", "Tt", "bytes_read", "client_port"} {
			if _, ok := lines[i][k]; !ok {
				t.Errorf("line %d: no %s field", i, k)
			}
		}
	}
	if b := lines[0]["bytes_read"].(float64); b <= 0 {
		t.Errorf("bytes_read: got %v, want > 0", b)
	}
}

func TestAccessLogTCP(t *testing.T) {
	echo := tcpServer(t, func(c *net.TCPConn) {
		buf := make([]byte, 5)
		c.Read(buf)
		c.Write(buf)
	})
	_, addr, buf := startLoggedProxy(t, testConfig(conf.ModeTCP, []string{echo}, nil))
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	c.Write([]byte("hello"))
	b := make([]byte, 5)
	c.Read(b)
	c.Close()
	waitFor(t, 2*time.Second, "a log line", func() bool { return len(buf.lines()) >= 1 })
	l := buf.lines()[0]
	if l["server"] != "s1" || l["bytes_read"] != 5.0 || l["termination_state"] != "--" {
		t.Errorf("tcp log line: %v", l)
	}
	if _, ok := l["status"]; ok {
		t.Errorf("tcp log line has an HTTP status: %v", l)
	}
}

package proxy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"regexp"
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
		{"backend": "www", "server": "<NOSRV>", "status": 400.0, "termination_state": "PR", "Tw": -1.0,
			"request": "<BADREQ>", "bytes_read": 0.0},
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

// TestAccessLogJSONOrder checks the JSON line's keys come in
// AccessLogFields' order (console lines keep it too), with the captures,
// the counts and the queue positions.
func TestAccessLogJSONOrder(t *testing.T) {
	u := newUpstream(t, "s1")
	cfg, err := conf.Parse("t.toml", []byte(`
[[frontend]]
name = "www"
bind = ["127.0.0.1:0"]
default_backend = "web"
capture_request_header = [{ name = "User-Agent", len = 5 }, { name = "X-None", len = 8 }]
capture_response_header = [{ name = "X-Server", len = 10 }]
[[backend]]
name = "web"
[[backend.server]]
name = "s1"
address = "`+u.addr()+`"
`))
	if err != nil {
		t.Fatal(err)
	}
	_, addr, buf := startLoggedProxy(t, cfg)
	dialRaw(t, addr).do(t, "GET /x HTTP/1.1\r\nHost: a\r\nUser-Agent: curl/8.0\r\n\r\n")
	waitFor(t, 2*time.Second, "a log line", func() bool { return len(buf.lines()) >= 1 })
	raw := strings.TrimSpace(buf.b.String())
	pos := -1
	for _, k := range AccessLogFields {
		if strings.HasPrefix(k, "ssl_") {
			continue // on TLS connections only
		}
		i := strings.Index(raw, `"`+k+`":`)
		if i < 0 {
			t.Errorf("no %s in %s", k, raw)
			continue
		}
		if i < pos {
			t.Errorf("%s out of order in %s", k, raw)
		}
		pos = i
	}
	l := buf.lines()[0]
	for k, want := range map[string]any{"request_headers": []any{"curl/", ""}, "response_headers": []any{"s1"},
		"actconn": 1.0, "feconn": 1.0, "beconn": 0.0, "srv_conn": 0.0, "retries": 0.0, "srv_queue": 0.0,
		"backend_queue": 0.0, "cookie_status": "--", "bytes_uploaded": 50.0} {
		if got := l[k]; fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: got %v, want %v", k, got, want)
		}
	}
	if _, err := time.Parse("2006-01-02T15:04:05.000Z07:00", l["accept_date"].(string)); err != nil {
		t.Errorf("accept_date: %v", err)
	}
}

// TestAccessLogSyslogFormats sends the access log of an http and a tcp
// frontend to a UDP listener: a custom format with a sample fetch and
// quoted fields, and the default tcplog; a TCP connection that sends
// nothing is not logged with dontlognull.
func TestAccessLogSyslogFormats(t *testing.T) {
	u := newUpstream(t, "s1")
	echo := tcpServer(t, echoConn)
	sink := newSyslogSink(t)
	cfg, err := conf.Parse("t.toml", []byte(fmt.Sprintf(`
[global]
log_tag = "lb1"
[[global.log]]
target = "udp@%[1]s"
facility = "local3"
format = "rfc5424"

[[frontend]]
name = "www"
bind = ["127.0.0.1:0"]
default_backend = "web"
log = [{ target = "global" }]
log_format = "%%{+Q}o %%ci %%HM %%[req.hdr(x-user)] %%b:%%s %%ST %%[src] %%{-Q}tsc %%%% %%H"

[[frontend]]
name = "tcpfe"
mode = "tcp"
bind = ["127.0.0.1:0"]
default_backend = "tcpbe"
dontlognull = true
log = [{ target = "%[1]s", format = "raw" }]

[[backend]]
name = "web"
[[backend.server]]
name = "s1"
address = %[2]q

[[backend]]
name = "tcpbe"
mode = "tcp"
[[backend.server]]
name = "t1"
address = %[3]q
`, sink.addr(), u.addr(), echo)))
	if err != nil {
		t.Fatal(err)
	}
	p, _ := startProxy(t, cfg)
	dialRaw(t, p.Frontends[0].Addrs()[0].String()).do(t, "GET /x HTTP/1.1\r\nHost: a\r\nX-User: bob\r\n\r\n")
	line := sink.nextRaw(t, 0)
	host, _ := os.Hostname()
	host, _, _ = strings.Cut(host, ".")
	want := fmt.Sprintf(` - lb1 %d - - "127.0.0.1" "GET" "bob" "web":"s1" 200 "127.0.0.1" ---- %% "%s"`, os.Getpid(), host)
	if !strings.HasPrefix(line, "<158>1 ") || !strings.HasSuffix(line, want) {
		t.Errorf("rfc5424 line: got %q, want <158>1 DATE%s", line, want)
	}
	tcp := p.Frontends[1].Addrs()[0].String()
	c, err := net.Dial("tcp", tcp)
	if err != nil {
		t.Fatal(err)
	}
	c.Close() // nothing sent: not logged (dontlognull)
	c, err = net.Dial("tcp", tcp)
	if err != nil {
		t.Fatal(err)
	}
	c.Write([]byte("hello"))
	b := make([]byte, 5)
	io.ReadFull(c, b)
	c.Close()
	line = sink.nextRaw(t, 1)
	if !regexp.MustCompile(`^127\.0\.0\.1:\d+ \[\d\d/\w{3}/\d{4}:\d\d:\d\d:\d\d\.\d{3}\] tcpfe tcpbe/t1 \d+/\d+/\d+ 5 -- \d/\d/\d/\d/0 0/0$`).MatchString(line) {
		t.Errorf("tcplog line: got %q", line)
	}
	sink.mu.Lock()
	n := len(sink.lines)
	sink.mu.Unlock()
	if n != 2 {
		t.Errorf("got %d lines, want 2 (the empty connection is not logged)", n)
	}
}

// TestDontLogNormal: with dontlog_normal only failed requests are logged
// (a 503 from a dead server, a 5xx from the server), with
// log_separate_errors at level err (local0: <131>), as HAProxy's options
// dontlog-normal and log-separate-errors; a 404 is a normal request.
func TestDontLogNormal(t *testing.T) {
	u := newUpstream(t, "s1")
	u.handler = func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/missing":
			w.WriteHeader(404)
		case "/broken":
			w.WriteHeader(500)
		}
	}
	dead := freeAddr(t)
	sink := newSyslogSink(t)
	cfg, err := conf.Parse("t.toml", []byte(fmt.Sprintf(`
[defaults]
retries = 0
[[frontend]]
name = "www"
bind = ["127.0.0.1:0"]
default_backend = "web"
use_backend = [{ backend = "dead", if = "{ path_beg /dead }" }]
log = [{ target = %[1]q, format = "short" }]
log_format = "%%ST %%{+Q}r"
dontlog_normal = true
log_separate_errors = true
[[backend]]
name = "web"
[[backend.server]]
name = "s1"
address = %[2]q
[[backend]]
name = "dead"
[[backend.server]]
name = "d1"
address = %[3]q
`, sink.addr(), u.addr(), dead)))
	if err != nil {
		t.Fatal(err)
	}
	p, _ := startProxy(t, cfg)
	addr := p.Frontends[0].Addrs()[0].String()
	for _, path := range []string{"/ok", "/missing", "/broken", "/dead"} {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	want := []string{`<3>500 "GET /broken HTTP/1.1"`, `<3>503 "GET /dead HTTP/1.1"`}
	for i, w := range want {
		if got := sink.nextRaw(t, i); got != w {
			t.Errorf("line %d: %q, want %q", i, got, w)
		}
	}
	// The four requests are logged (or not) in order: once the last is,
	// the normal ones would have been before it.
	sink.mu.Lock()
	defer sink.mu.Unlock()
	if len(sink.lines) != 2 {
		t.Errorf("lines: %q, want the two failed requests only", sink.lines)
	}
}

// TestDroppedLogs: lines a log target could not take count in the
// snapshot's DroppedLogs (show info's): here a TCP collector that is not
// there.
func TestDroppedLogs(t *testing.T) {
	u := newUpstream(t, "s1")
	cfg, err := conf.Parse("t.toml", []byte(fmt.Sprintf(`
[[frontend]]
name = "www"
bind = ["127.0.0.1:0"]
default_backend = "web"
log = [{ target = "tcp@%s" }]
[[backend]]
name = "web"
[[backend.server]]
name = "s1"
address = %q
`, freeAddr(t), u.addr())))
	if err != nil {
		t.Fatal(err)
	}
	p, _ := startProxy(t, cfg)
	addr := p.Frontends[0].Addrs()[0].String()
	resp, err := http.Get("http://" + addr + "/")
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	waitFor(t, 10*time.Second, "the line counted as dropped", func() bool { return p.Snapshot().DroppedLogs == 1 })
}

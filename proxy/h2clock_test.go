package proxy

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestH2ClockHandedOn: an HTTP/2 stream's phases read the clock once
// from its start until the first thing that may wait, and once at its
// end (h2stream.clk): every wait in between must read it again. Each
// request below waits at one place for `hold`, and its log line must
// show that wait where it happened and nowhere else:
//   - /slowhead: the server thinks before its head: Tr >= hold (a clock
//     kept past the send would give Tr 0);
//   - /slowbody: the server sends its head, then its body after hold:
//     Ta - Tr >= hold/2 (an end stamped with the head's time gives 0);
//   - /queued: queued behind /hold at the server's maxconn 1 for hold:
//     Tw >= hold and Tr < Tw (a clock kept through the queue would stamp
//     the send with the stream's start: Tr >= Tw);
//   - POST /upload: the client sends its body hold after the head:
//     Tr >= hold/2, as HAProxy's Tr counts the upload (a clock kept
//     through the body's wait would stamp the head with the send's time).
func TestH2ClockHandedOn(t *testing.T) {
	const hold = 300 * time.Millisecond
	holding := make(chan struct{}, 1)
	up, _ := scriptUpstream(t, func(_ int, c net.Conn, br *bufio.Reader) {
		for {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			io.Copy(io.Discard, req.Body)
			switch req.URL.Path {
			case "/slowhead":
				time.Sleep(hold)
			case "/hold":
				holding <- struct{}{}
				time.Sleep(hold)
			case "/slowbody":
				io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n")
				time.Sleep(hold)
				io.WriteString(c, "ok")
				continue
			}
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		}
	})
	text := fmt.Sprintf(`
[[frontend]]
name = "www"
bind = ["127.0.0.1:0 proto h2"]
default_backend = "web"

[[backend]]
name = "web"
http_reuse = "always"
timeout_queue = "10s"
[[backend.server]]
name = "s1"
address = %q
maxconn = 1
`, up)
	_, addr, logs := startLogged(t, loadConfig(t, t.TempDir(), text))
	tr := h2cTransport()
	defer tr.CloseIdleConnections()
	do := func(method, path string, body io.Reader) {
		req, err := http.NewRequest(method, "http://"+addr+path, body)
		if err != nil {
			t.Errorf("%s %s: %v", method, path, err)
			return
		}
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Errorf("%s %s: %v", method, path, err)
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || string(b) != "ok" {
			t.Errorf("%s %s: %d %q, want 200 \"ok\"", method, path, resp.StatusCode, b)
		}
	}
	do("GET", "/first", nil) // a pooled server connection for the rest
	do("GET", "/slowhead", nil)
	do("GET", "/slowbody", nil)
	var wg sync.WaitGroup
	wg.Go(func() { do("GET", "/hold", nil) })
	<-holding // /hold has the server's one slot: /queued waits for it
	do("GET", "/queued", nil)
	wg.Wait()
	pr, pw := io.Pipe()
	wg.Go(func() {
		time.Sleep(hold)
		io.WriteString(pw, "abc")
		pw.Close()
	})
	do("POST", "/upload", pr)
	wg.Wait()

	waitFor(t, 5*time.Second, "six log lines", func() bool { return len(logLines(t, logs)) == 6 })
	timers := map[string][3]float64{} // Tw, Tr, Ta by path
	for _, l := range logLines(t, logs) {
		req, _ := l["request"].(string)
		f := strings.Fields(req)
		if len(f) != 3 {
			t.Fatalf("log line without a request: %v", l)
		}
		tw, _ := l["Tw"].(float64)
		trr, _ := l["Tr"].(float64)
		ta, _ := l["Ta"].(float64)
		timers[f[1]] = [3]float64{tw, trr, ta}
	}
	ms := float64(hold.Milliseconds())
	if v := timers["/slowhead"]; v[1] < ms || v[2] < v[1] {
		t.Errorf("/slowhead: Tr %v, Ta %v: want Tr >= %v and Ta >= Tr", v[1], v[2], ms)
	}
	// Half the hold, as below: a worker that reads the head a few ms
	// after it came (a loaded machine: the whole suite at once) stamps
	// Tr that much later, and an end stamped with the head's time gives
	// 0 all the same.
	if v := timers["/slowbody"]; v[2]-v[1] < ms/2 {
		t.Errorf("/slowbody: Tr %v, Ta %v: want Ta - Tr >= %v", v[1], v[2], ms/2)
	}
	if v := timers["/queued"]; v[0] < ms/2 || v[1] >= v[0] {
		t.Errorf("/queued: Tw %v, Tr %v: want Tw >= %v and Tr < Tw", v[0], v[1], ms/2)
	}
	if v := timers["/upload"]; v[1] < ms/2 || v[2] < v[1] {
		// HAProxy's Tr runs from the request's send, the body's upload
		// included (its manual warns about POSTs): the body went out
		// beside the response's wait.
		t.Errorf("POST /upload: Tr %v, Ta %v: want Tr >= %v (the upload in it) and Ta >= Tr", v[1], v[2], ms/2)
	}
}

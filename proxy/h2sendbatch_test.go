package proxy

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/http2"
)

// TestH2SendBatch: the requests a client sends in one write, begun by the
// connection's reader on idle pooled connections, are sent together (one
// io_uring_enter for all: InlineCounters.Queued, RingSends, RingEnters),
// each to the server roundrobin gives it, each stream answered by its own
// request's response, the responses read ahead by the epoll layer's
// reaper as it wakes their streams (epoll.Conn.AwaitRead). A stream the
// client resets in the same write, queued but not sent yet, has its
// server connection cut (before its send or after it), the stream logged
// as a client abort, the others served.
func TestH2SendBatch(t *testing.T) {
	const perServer = 4
	var gate sync.WaitGroup
	gate.Add(3 * perServer)
	// release holds the answers to /r* until the test saw their streams
	// parked, so that each response finds its stream waiting to be read
	// ahead (one that came before its stream parked is read by the
	// stream itself).
	release := make(chan struct{})
	servers := make([]string, 3)
	for i := range servers {
		name := fmt.Sprintf("s%d", i+1)
		servers[i] = tcpServer(t, func(c *net.TCPConn) {
			br := bufio.NewReader(c)
			for {
				req, err := http.ReadRequest(br)
				if err != nil {
					return
				}
				if req.URL.Path == "/gate" {
					gate.Done()
					gate.Wait()
				}
				if strings.HasPrefix(req.URL.Path, "/r") {
					<-release
				}
				body := name + " " + req.URL.Path
				if _, err := fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(body), body); err != nil {
					return
				}
			}
		})
	}
	p, addr, logs := startLogged(t, h2Config(servers, ""))
	in := inlineOf(t, p)
	if !p.h2sendBatch {
		if os.Getenv(H2SendBatchEnv) != "0" && p.uringOn {
			t.Fatal("HTTP/2 requests are not sent together by default on tune_netio uring")
		}
		t.Skipf("HTTP/2 requests sent together are off (%s=%q, uring %v)", H2SendBatchEnv, os.Getenv(H2SendBatchEnv), p.uringOn)
	}
	h := dialH2(t, addr)
	next := uint32(1)
	// send writes the HEADERS of paths (and an RST_STREAM for the stream
	// of reset, when not empty) in one write, and returns the ids.
	send := func(paths []string, reset string) (ids []uint32, resetID uint32) {
		var buf bytes.Buffer
		fr := http2.NewFramer(&buf, nil)
		for _, path := range paths {
			fr.WriteHeaders(http2.HeadersFrameParam{StreamID: next, BlockFragment: h.headers(path), EndStream: true, EndHeaders: true})
			if path == reset {
				fr.WriteRSTStream(next, http2.ErrCodeCancel)
				resetID = next
			} else {
				ids = append(ids, next)
			}
			next += 2
		}
		if _, err := h.c.Write(buf.Bytes()); err != nil {
			t.Fatal(err)
		}
		return ids, resetID
	}
	// The first request dials (the connection's first); then twelve held
	// by their servers until all came: four connections to each server,
	// pooled.
	if a := h.get(t, next, "/first"); a.fields[":status"] != "200" {
		t.Fatalf("first request: %v", a.fields)
	}
	next += 2
	gated := make([]string, 3*perServer)
	for i := range gated {
		gated[i] = "/gate"
	}
	ids, _ := send(gated, "")
	for id, a := range h.answers(t, ids) {
		if a.fields[":status"] != "200" || !strings.HasSuffix(a.body, " /gate") {
			t.Fatalf("gated stream %d: %v %q", id, a.fields, a.body)
		}
	}

	queued0, sends0, enters0 := in.Queued.Load(), in.RingSends.Load(), in.RingEnters.Load()
	aheads0, _ := p.group.ReadAheads()
	var paths []string
	for i := range 3 * perServer {
		paths = append(paths, fmt.Sprintf("/r%d", i))
	}
	ids, _ = send(paths, "")
	waitFor(t, 5*time.Second, "the streams parked", func() bool { return p.group.Awaiting() == int64(len(paths)) })
	close(release)
	answers := h.answers(t, ids)
	perSrv := map[string]int{}
	for i, id := range ids {
		a := answers[id]
		name, path, _ := strings.Cut(a.body, " ")
		if a.fields[":status"] != "200" || path != paths[i] {
			t.Errorf("stream %d (%s): %v %q; want 200 and its own path", id, paths[i], a.fields, a.body)
		}
		perSrv[name]++
	}
	if perSrv["s1"] != perServer || perSrv["s2"] != perServer || perSrv["s3"] != perServer {
		t.Errorf("requests per server %v; want %d each", perSrv, perServer)
	}
	queued, sends, enters := in.Queued.Load()-queued0, in.RingSends.Load()-sends0, in.RingEnters.Load()-enters0
	aheads, _ := p.group.ReadAheads()
	aheads -= aheads0
	t.Logf("one write of %d requests: %d queued, %d sent by io_uring in %d calls; %d responses read ahead", len(paths), queued, sends, enters, aheads)
	if aheads != int64(len(paths)) {
		t.Errorf("%d responses read ahead; want all %d", aheads, len(paths))
	}
	if queued != int64(len(paths)) || sends < 2 || enters < 1 || enters > sends/2 {
		t.Errorf("queued %d, ring sends %d in %d calls; want %d queued, sends together", queued, sends, enters, len(paths))
	}

	// A stream reset in the same write as its HEADERS.
	lines0 := len(logLines(t, logs))
	ids, resetID := send([]string{"/a", "/b", "/c"}, "/b")
	answers = h.answers(t, ids)
	for i, id := range ids {
		if a := answers[id]; a.fields[":status"] != "200" || !strings.HasSuffix(a.body, []string{" /a", " /c"}[i]) {
			t.Errorf("stream %d beside the reset one: %v %q", id, a.fields, a.body)
		}
	}
	waitFor(t, 5*time.Second, "the reset stream's log line", func() bool { return len(logLines(t, logs)) == lines0+3 })
	found := false
	for _, l := range logLines(t, logs)[lines0:] {
		if l["path"] == "/b" || strings.Contains(fmt.Sprint(l["request"]), "/b ") {
			found = true
			if ts, _ := l["termination_state"].(string); !strings.HasPrefix(ts, "C") {
				t.Errorf("reset stream %d logged %v; want a client abort", resetID, l)
			}
		}
	}
	if !found {
		t.Errorf("no log line for the reset stream: %v", logLines(t, logs)[lines0:])
	}
	// The connection goes on.
	if a := h.get(t, next, "/after"); a.fields[":status"] != "200" || !strings.HasSuffix(a.body, " /after") {
		t.Errorf("after the reset: %v %q", a.fields, a.body)
	}
}

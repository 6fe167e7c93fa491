package proxy

import (
	"context"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/fulcrum-proxy/fulcrum/conf"
)

// holdUpstream is a server whose /hold requests wait for release.
type holdUpstream struct {
	*upstream
	held    atomic.Int64
	release chan struct{}
}

func newHoldUpstream(t *testing.T) *holdUpstream {
	h := &holdUpstream{upstream: newUpstream(t, "s1"), release: make(chan struct{})}
	h.handler = func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hold" {
			h.held.Add(1)
			<-h.release
		}
		io.WriteString(w, "done")
	}
	t.Cleanup(func() {
		select {
		case <-h.release:
		default:
			close(h.release)
		}
	})
	return h
}

// h2Binds are the two ways a plaintext bind speaks HTTP/2 with prior
// knowledge: proto h2, and the implicit upgrade of a bind without proto.
var h2Binds = []struct {
	name  string
	proto string
}{{"proto h2", "h2"}, {"implicit upgrade", ""}}

// TestH2ReloadKeepsStreams reloads while 200 streams are open on HTTP/2
// connections: the old configuration sends GOAWAY, new requests reach the
// new one, and every open stream completes; on a proto h2 bind and on a
// plain one whose connections switched to HTTP/2.
func TestH2ReloadKeepsStreams(t *testing.T) {
	for _, b := range h2Binds {
		t.Run(b.name, func(t *testing.T) { testH2ReloadKeepsStreams(t, b.proto) })
	}
}

func testH2ReloadKeepsStreams(t *testing.T, proto string) {
	up := newHoldUpstream(t)
	cfg := h2Config([]string{up.addr()}, "")
	cfg.Frontends[0].BindOptions[0].Proto = proto
	cfg.Global.H2MaxStreams = 256
	old, addr := startProxy(t, cfg)
	tr := h2cTransport()
	defer tr.CloseIdleConnections()
	var wg sync.WaitGroup
	var ok, failed atomic.Int64
	for range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := tr.RoundTrip(mustReq(t, "http://"+addr+"/hold"))
			if err != nil {
				failed.Add(1)
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == 200 && string(b) == "done" {
				ok.Add(1)
			} else {
				failed.Add(1)
			}
		}()
	}
	waitFor(t, 20*time.Second, "200 streams held", func() bool { return up.held.Load() == 200 })
	if n := old.Frontends[0].H2Upgrades.Load(); (proto == "") != (n > 0) {
		t.Fatalf("%d connections upgraded on a bind with proto %q", n, proto)
	}

	next := cfgCopyH2(cfg)
	p := reloadTo(t, old, keepBind(next, old))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		p.Shutdown(ctx)
	})
	retired := make(chan error, 1)
	go func() { retired <- p.Retire(context.Background(), old) }()
	waitFor(t, 5*time.Second, "the old proxy stopping", func() bool { return old.stopping.Load() })

	// A new request goes to the new configuration (the old connections
	// had GOAWAY; one that had not yet is refused there and retried).
	resp, err := tr.RoundTrip(mustReq(t, "http://"+addr+"/new"))
	if err != nil {
		t.Fatalf("request after the reload: %v", err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if n := p.Frontends[0].Counters.ReqTot.Load(); resp.StatusCode != 200 || n < 1 {
		t.Errorf("after the reload: got %d, %d requests on the new proxy; want 200, 1", resp.StatusCode, n)
	}
	select {
	case err := <-retired:
		t.Fatalf("the old proxy retired with 200 streams open: %v", err)
	default:
	}
	close(up.release)
	wg.Wait()
	if ok.Load() != 200 || failed.Load() != 0 {
		t.Errorf("streams: %d ok, %d failed; want 200 ok", ok.Load(), failed.Load())
	}
	select {
	case err := <-retired:
		if err != nil {
			t.Errorf("Retire: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the old proxy did not retire once its streams were done")
	}
}

// cfgCopyH2 returns a copy of cfg for a reload.
func cfgCopyH2(cfg *conf.Config) *conf.Config {
	c := *cfg
	fe := *cfg.Frontends[0]
	c.Frontends = []*conf.Frontend{&fe}
	return &c
}

// TestH2StopSendsGoaway: a stop sends GOAWAY naming the last stream, lets
// the stream in flight finish, then closes (proto h2, implicit upgrade).
func TestH2StopSendsGoaway(t *testing.T) {
	for _, b := range h2Binds {
		t.Run(b.name, func(t *testing.T) { testH2StopSendsGoaway(t, b.proto) })
	}
}

func testH2StopSendsGoaway(t *testing.T, proto string) {
	up := newHoldUpstream(t)
	cfg := h2Config([]string{up.addr()}, "")
	cfg.Frontends[0].BindOptions[0].Proto = proto
	p, addr := startProxy(t, cfg)
	f := dialFramer(t, addr)
	f.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: f.headers("/hold"), EndStream: true, EndHeaders: true})
	waitFor(t, 5*time.Second, "the stream held", func() bool { return up.held.Load() == 1 })
	if n := p.Frontends[0].H2Upgrades.Load(); (proto == "") != (n == 1) {
		t.Fatalf("%d connections upgraded on a bind with proto %q", n, proto)
	}
	stopped := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		stopped <- p.Shutdown(ctx)
	}()
	var ga *http2.GoAwayFrame
	for ga == nil {
		fr, err := f.fr.ReadFrame()
		if err != nil {
			t.Fatalf("no GOAWAY: %v", err)
		}
		if g, ok := fr.(*http2.GoAwayFrame); ok {
			ga = g
		}
	}
	if ga.ErrCode != http2.ErrCodeNo || ga.LastStreamID != 1 {
		t.Errorf("GOAWAY: got code %v, last stream %d; want NO_ERROR, 1", ga.ErrCode, ga.LastStreamID)
	}
	close(up.release)
	dec := hpack.NewDecoder(4096, nil)
	var status string
	var body []byte
	for {
		fr, err := f.fr.ReadFrame()
		if err != nil {
			t.Fatalf("stream 1 did not finish: %v", err)
		}
		switch fr := fr.(type) {
		case *http2.HeadersFrame:
			fields, _ := dec.DecodeFull(fr.HeaderBlockFragment())
			status = fields[0].Value
		case *http2.DataFrame:
			body = append(body, fr.Data()...)
		}
		if fr.Header().Flags.Has(http2.FlagDataEndStream) && fr.Header().StreamID == 1 {
			break
		}
	}
	if status != "200" || string(body) != "done" {
		t.Errorf("stream 1: got %s %q, want 200 \"done\"", status, body)
	}
	if err := <-stopped; err != nil {
		t.Errorf("Shutdown: %v", err)
	}
}

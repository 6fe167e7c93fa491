package stats

import (
	"bytes"
	"fmt"
	"io"
	"net/http/httptest"
	"testing"

	"github.com/fulcrum-proxy/fulcrum/proxy"
)

// bigSnapshot is 100 backends of 100 servers each, in mixed states.
func bigSnapshot() *proxy.Snapshot {
	snap := testSnapshot()
	snap.Backends = nil
	for b := 1; b <= 100; b++ {
		bs := proxy.BackendSnapshot{Name: fmt.Sprintf("be%03d", b), ID: b, Mode: "http", Balance: "roundrobin", FullConn: 1}
		for s := 1; s <= 100; s++ {
			ss := proxy.ServerSnapshot{Name: fmt.Sprintf("srv%03d", s), ID: s, Addr: "10.0.0.1:80",
				UserWeight: 1, EffectiveWeight: 1, LastChange: taken.Add(-3600e9),
				CounterValues: proxy.CounterValues{Stot: int64(s * 1000), Bin: int64(s) << 20, Bout: int64(s) << 24}}
			switch s % 10 {
			case 1:
				ss.Op, ss.EffectiveWeight = proxy.OpDown, 0
			case 2:
				ss.Admin, ss.EffectiveWeight = proxy.AdminMaint, 0
			case 3:
				ss.Check = &proxy.CheckSnapshot{Status: "L7OK", Desc: "Layer7 check passed", Code: 200, Rise: 2, Fall: 3, Health: 4}
			}
			bs.Servers = append(bs.Servers, ss)
		}
		snap.Backends = append(snap.Backends, bs)
	}
	return snap
}

func BenchmarkPageHTML(b *testing.B) {
	snap := bigSnapshot()
	pg := newPage(func() *proxy.Snapshot { return snap }, nil, PageConfig{URI: "/stats"})
	r := httptest.NewRequest("GET", "/stats", nil)
	b.ReportAllocs()
	for b.Loop() {
		w := httptest.NewRecorder()
		pg.ServeHTTP(w, r)
	}
}

func BenchmarkCSV(b *testing.B) {
	snap := bigSnapshot()
	b.ReportAllocs()
	for b.Loop() {
		WriteCSV(io.Discard, snap, AllRows())
	}
}

func BenchmarkJSON(b *testing.B) {
	snap := bigSnapshot()
	b.ReportAllocs()
	for b.Loop() {
		WriteJSON(io.Discard, snap, AllRows())
	}
}

func BenchmarkPrometheus(b *testing.B) {
	snap := bigSnapshot()
	h := MetricsHandler(NewCollector(func() *proxy.Snapshot { return snap }, nil))
	r := httptest.NewRequest("GET", "/metrics", nil)
	b.ReportAllocs()
	for b.Loop() {
		h.ServeHTTP(httptest.NewRecorder(), r)
	}
}

// TestBigPage checks that the 10,000-server page has every server.
func TestBigPage(t *testing.T) {
	snap := bigSnapshot()
	pg := newPage(func() *proxy.Snapshot { return snap }, nil, PageConfig{URI: "/stats"})
	w := httptest.NewRecorder()
	pg.ServeHTTP(w, httptest.NewRequest("GET", "/stats", nil))
	if n := bytes.Count(w.Body.Bytes(), []byte(" data-server=")); n != 10000 {
		t.Errorf("got %d server rows, want 10000", n)
	}
}

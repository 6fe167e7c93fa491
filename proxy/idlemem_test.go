package proxy

import (
	"cmp"
	"fmt"
	"net"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"runtime/pprof"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fulcrum-proxy/fulcrum/conf"
)

// BenchmarkIdleHibernatedHeap accounts for what an idle hibernated
// keep-alive client connection keeps on the heap (the epoll layer, past
// IdleKeep): N connections through a fresh proxy on 127.0.0.1:0 (the
// set-up of bench/scale.sh's idle test: no X-Forwarded-For, http-reuse
// always, 300 s timeouts), each having made one request, then the heap in
// use after two GCs minus the heap before they opened (MemStats.HeapInuse
// and HeapAlloc, per connection), and every allocation site's share of
// the growth from the in-use heap profile (runtime.MemProfileRate = 1
// meanwhile), logged as a table of bytes per connection. With
// FULCRUM_IDLE_HEAPPROFILE=path it also writes the heap profiles before
// (path.base) and after, for `go tool pprof -sample_index=inuse_space
// -base path.base path`. Only where the epoll layer serves the proxy
// (Linux, NetIOEnv unset or "epoll").
func BenchmarkIdleHibernatedHeap(b *testing.B) {
	const n = 2000
	up := fastUpstream(b)
	rate := runtime.MemProfileRate
	runtime.MemProfileRate = 1
	b.Cleanup(func() { runtime.MemProfileRate = rate })
	var inuse, alloc float64
	var sites, classes []siteBytes
	for range b.N {
		g0 := runtime.NumGoroutine()
		cfg := testConfig(conf.ModeHTTP, []string{up}, nil)
		cfg.Backends[0].HTTPReuse = "always"
		fc := cfg.Frontends[0]
		fc.ForwardFor = false
		fc.TimeoutClient, fc.TimeoutHTTPRequest = 300*time.Second, 300*time.Second
		p, err := New(cfg, nopLogger())
		if err != nil {
			b.Fatal(err)
		}
		p.Frontends[0].idleKeep = time.Millisecond
		if err := p.Start(); err != nil {
			b.Fatal(err)
		}
		if p.group == nil {
			p.Shutdown(contextBackground())
			b.Skip("the proxy is not on the epoll layer")
		}
		ta := p.Frontends[0].Addrs()[0].(*net.TCPAddr)
		sa := &syscall.SockaddrInet4{Port: ta.Port}
		copy(sa.Addr[:], ta.IP.To4())
		// One connection first: the pooled server connection, the
		// workers and the pools exist before the measure starts.
		warm, err := rawRequest(sa)
		if err != nil {
			b.Fatal(err)
		}
		waitHibernating(b, p, 1)
		ms0, prof0 := heapState(b, ".base")
		cl0 := memClasses()
		fds := make([]int, 0, n)
		for range n {
			fd, err := rawRequest(sa)
			if err != nil {
				b.Fatal(err)
			}
			fds = append(fds, fd)
		}
		waitHibernating(b, p, n+1)
		ms1, prof1 := heapState(b, "")
		cl1 := memClasses()
		inuse = float64(int64(ms1.HeapInuse)-int64(ms0.HeapInuse)) / n
		alloc = float64(int64(ms1.HeapAlloc)-int64(ms0.HeapAlloc)) / n
		sites = sites[:0]
		for s, v := range prof1 {
			if d := v - prof0[s]; d != 0 {
				sites = append(sites, siteBytes{s, float64(d) / n})
			}
		}
		classes = classes[:0]
		for i := range cl1 {
			classes = append(classes, siteBytes{cl1[i].Name, float64(int64(cl1[i].Value.Uint64())-int64(cl0[i].Value.Uint64())) / n})
		}
		for _, fd := range append(fds, warm) {
			syscall.Close(fd)
		}
		p.Shutdown(contextBackground())
		for i := 0; runtime.NumGoroutine() > g0+1 && i < 3000; i++ {
			time.Sleep(10 * time.Millisecond) // the workers end with the proxy
		}
	}
	slices.SortFunc(sites, func(a, b siteBytes) int { return cmp.Compare(b.bytes, a.bytes) })
	var sb strings.Builder
	total := 0.0
	for _, s := range sites {
		total += s.bytes
		if s.bytes >= 1 || s.bytes <= -1 {
			fmt.Fprintf(&sb, "%8.1f  %s\n", s.bytes, s.site)
		}
	}
	b.Logf("in-use heap by allocation site, B per idle hibernated connection (%d connections; sum %.1f):\n%s", n, total, sb.String())
	sb.Reset()
	for _, c := range classes {
		fmt.Fprintf(&sb, "%8.1f  %s\n", c.bytes, c.site)
	}
	b.Logf("runtime memory classes after giving free pages back (debug.FreeOSMemory), B per connection:\n%s", sb.String())
	b.ReportMetric(inuse, "HeapInuse-B/conn")
	b.ReportMetric(alloc, "HeapAlloc-B/conn")
	b.ReportMetric(total, "profiled-B/conn")
}

type siteBytes struct {
	site  string
	bytes float64
}

// heapState collects (GCs until the profile has the last allocations)
// and returns the MemStats and the in-use bytes of the heap profile by
// allocation site, writing the profile to FULCRUM_IDLE_HEAPPROFILE+suffix
// when that is set.
func heapState(tb testing.TB, suffix string) (runtime.MemStats, map[string]int64) {
	tb.Helper()
	for range 3 {
		runtime.GC() // the profile shows the heap as of the last GC but one
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	if path := os.Getenv("FULCRUM_IDLE_HEAPPROFILE"); path != "" {
		f, err := os.Create(path + suffix)
		if err != nil {
			tb.Fatal(err)
		}
		pprof.Lookup("heap").WriteTo(f, 0)
		f.Close()
	}
	var recs []runtime.MemProfileRecord
	for {
		m, ok := runtime.MemProfile(recs, true)
		if ok {
			recs = recs[:m]
			break
		}
		recs = make([]runtime.MemProfileRecord, m+64)
	}
	sites := make(map[string]int64)
	for i := range recs {
		if v := recs[i].InUseBytes(); v != 0 {
			sites[allocSite(recs[i].Stack())] += v
		}
	}
	return ms, sites
}

// memClasses returns the runtime's memory classes (runtime/metrics
// /memory/classes/...), after giving the free pages back to the system
// (as internal/memtrim does once the process is quiet).
func memClasses() []metrics.Sample {
	debug.FreeOSMemory()
	var ss []metrics.Sample
	for _, d := range metrics.All() {
		if strings.HasPrefix(d.Name, "/memory/classes/") && d.Kind == metrics.KindUint64 {
			ss = append(ss, metrics.Sample{Name: d.Name})
		}
	}
	metrics.Read(ss)
	return ss
}

// allocSite names an allocation by its first two frames outside the
// runtime (the allocating function and its caller), package paths cut.
func allocSite(stk []uintptr) string {
	frames := runtime.CallersFrames(stk)
	var names []string
	for len(names) < 2 {
		f, more := frames.Next()
		fn := f.Function
		if fn != "" && !strings.HasPrefix(fn, "runtime.") && !strings.HasPrefix(fn, "internal/") {
			if i := strings.LastIndexByte(fn, '/'); i >= 0 {
				fn = fn[i+1:]
			}
			names = append(names, fn)
		}
		if !more {
			break
		}
	}
	return strings.Join(names, " < ")
}

// A frontend's connection list holds each connection once, in any order
// of adds and removes, and lets the one being visited be removed.
func TestConnList(t *testing.T) {
	var l connList
	ccs := make([]*clientConn, 6)
	for i := range ccs {
		ccs[i] = &clientConn{}
		l.add(ccs[i])
	}
	list := func() (got []int) {
		for cc := range l.all() {
			got = append(got, slices.Index(ccs, cc))
		}
		return got
	}
	if got := list(); !slices.Equal(got, []int{5, 4, 3, 2, 1, 0}) {
		t.Fatalf("list %v, want 5..0", got)
	}
	l.remove(ccs[5]) // the head
	l.remove(ccs[2]) // a middle one
	l.remove(ccs[0]) // the tail
	l.remove(ccs[0]) // not there: nothing
	if got := list(); !slices.Equal(got, []int{4, 3, 1}) {
		t.Fatalf("list %v, want 4 3 1", got)
	}
	for i, cc := range ccs {
		if want := i == 1 || i == 3 || i == 4; l.has(cc) != want {
			t.Fatalf("has(%d) = %v, want %v", i, !want, want)
		}
	}
	for cc := range l.all() {
		l.remove(cc) // the stop's closeIdle moves connections away as it goes
	}
	if l.head != nil || l.has(ccs[4]) {
		t.Fatal("list not empty after removing every visited connection")
	}
}

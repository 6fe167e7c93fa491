package stick

import (
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeClock is a clock that tests move by hand.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *fakeClock { return &fakeClock{t: time.Unix(1_700_000_000, 0)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func mustStore(t testing.TB, items ...string) Store {
	t.Helper()
	s, err := ParseStore(items)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func ipKey(t testing.TB, s string) Key {
	k, ok := IPKey(KeyIP, netip.MustParseAddr(s))
	if !ok {
		t.Fatalf("no key for %s", s)
	}
	return k
}

func TestParseStore(t *testing.T) {
	s := mustStore(t, "server_id", "conn_cur,http_req_rate(10s)", "gpc0_rate(500)")
	if !s.Has(ServerID) || !s.Has(ConnCur) || s.Period(HTTPReqRate) != 10*time.Second || s.Period(GPC0Rate) != 500*time.Millisecond {
		t.Fatalf("bad store %+v", s)
	}
	for _, bad := range []string{"nosuch", "http_req_rate", "conn_cur(10s)", "conn_rate(x)"} {
		if _, err := ParseStore([]string{bad}); err == nil {
			t.Errorf("%s: want an error", bad)
		}
	}
}

func TestExpire(t *testing.T) {
	clk := newClock()
	tb := New(Config{Name: "t", Type: KeyIP, Size: 100, Expire: time.Second, Store: mustStore(t, "conn_cnt"), Now: clk.Now})
	idle, touched, held := ipKey(t, "10.0.0.1"), ipKey(t, "10.0.0.2"), ipKey(t, "10.0.0.3")
	for _, k := range []Key{idle, touched, held} {
		tb.Release(tb.Get(k))
	}
	h := tb.Get(held) // a tracked session keeps it
	clk.Add(600 * time.Millisecond)
	tb.Release(tb.Get(touched)) // re-armed: expires at 1.6 s
	clk.Add(500 * time.Millisecond)
	if n := tb.Expire(); n != 1 {
		t.Fatalf("expired %d entries at 1.1 s, want 1 (the idle one)", n)
	}
	if e := tb.Lookup(idle); e != nil {
		t.Fatal("idle entry still there after 1.1 s")
	}
	e := tb.Lookup(touched)
	if e == nil {
		t.Fatal("touched entry gone at 1.1 s")
	}
	tb.Release(e)
	clk.Add(5 * time.Second)
	tb.Expire()
	if tb.Used() != 1 {
		t.Fatalf("used %d after 6 s, want 1 (the held entry)", tb.Used())
	}
	tb.Release(h) // re-armed by its release
	clk.Add(999 * time.Millisecond)
	if tb.Expire() != 0 {
		t.Fatal("released entry expired before its new expiry")
	}
	clk.Add(time.Millisecond)
	if tb.Expire() != 1 || tb.Used() != 0 {
		t.Fatalf("used %d, want 0", tb.Used())
	}
}

func TestPurge(t *testing.T) {
	clk := newClock()
	tb := New(Config{Name: "t", Type: KeyInteger, Size: 10, Store: mustStore(t, "server_id"), Now: clk.Now})
	// Two entries stay referenced (in-flight long requests).
	held := []*Entry{tb.Get(IntKey(0)), tb.Get(IntKey(1))}
	got, refused := 0, 0
	for i := 2; i < 20; i++ {
		clk.Add(time.Millisecond)
		e := tb.Get(IntKey(int64(i)))
		if tb.Used() > 10 {
			t.Fatalf("used %d > size 10", tb.Used())
		}
		if e == nil {
			refused++
			continue
		}
		got++
		tb.Release(e)
	}
	if refused != 0 || got != 18 {
		t.Fatalf("got %d entries, refused %d; want 18, 0", got, refused)
	}
	for _, k := range []int64{0, 1} {
		e := tb.Lookup(IntKey(k))
		if e == nil {
			t.Fatalf("held entry %d purged", k)
		}
		tb.Release(e)
	}
	// Fill the table with held entries: a new key gets none, counted.
	var more []*Entry
	for i := 100; tb.Used() < 10 || len(more) < 8; i++ {
		if e := tb.Get(IntKey(int64(i))); e != nil {
			more = append(more, e)
		}
	}
	if e := tb.Get(IntKey(999)); e != nil || tb.NoEntry() != 1 {
		t.Fatalf("full table of held entries: got %v, noEntry %d", e, tb.NoEntry())
	}
	for _, e := range append(held, more...) {
		tb.Release(e)
	}
	if e := tb.Get(IntKey(999)); e == nil {
		t.Fatal("no entry once released")
	}
}

func TestRates(t *testing.T) {
	clk := newClock()
	tb := New(Config{Name: "t", Type: KeyIP, Size: 10, Expire: time.Minute,
		Store: mustStore(t, "conn_cur", "http_req_cnt", "http_req_rate(10s)"), Now: clk.Now})
	e := tb.Get(ipKey(t, "10.0.0.1"))
	for range 5 {
		tb.Update(e, HTTPReqCnt, HTTPReqRate, ConnCur)
	}
	tb.Dec(e, ConnCur)
	val := func(d DataType) int64 {
		v, ok := tb.Value(e, d)
		if !ok {
			t.Fatalf("%s not stored", d)
		}
		return v
	}
	if val(HTTPReqRate) != 5 || val(HTTPReqCnt) != 5 || val(ConnCur) != 4 {
		t.Fatalf("rate %d cnt %d cur %d, want 5 5 4", val(HTTPReqRate), val(HTTPReqCnt), val(ConnCur))
	}
	// 12 s later: the 5 events are in the previous period, 8 s of 10 left
	// of the current one: 5*8/10 = 4; 3 new events: 7.
	clk.Add(12 * time.Second)
	for range 3 {
		tb.Update(e, HTTPReqRate)
	}
	if r := val(HTTPReqRate); r != 5*8/10+3 {
		t.Fatalf("rate after 12 s = %d, want 7", r)
	}
	clk.Add(25 * time.Second)
	if r := val(HTTPReqRate); r != 0 {
		t.Fatalf("rate after 37 s = %d, want 0", r)
	}
	if _, ok := tb.Value(e, ConnCnt); ok {
		t.Fatal("conn_cnt is not stored")
	}
	tb.Release(e)
}

func TestDumpSetClear(t *testing.T) {
	clk := newClock()
	tb := New(Config{Name: "fe_web", Type: KeyIP, Size: 102400, Expire: 30 * time.Minute,
		Store: mustStore(t, "conn_cnt,conn_rate(10s),http_req_rate(10s),gpc0"), Now: clk.Now})
	tb.Set(ipKey(t, "127.0.0.2"), []Assign{{ConnCnt, 1}})
	tb.Set(ipKey(t, "127.0.0.1"), []Assign{{ConnCnt, 5}, {ConnRate, 5}})
	var b []byte
	b = tb.AppendHeader(b)
	for _, e := range tb.Entries([]Filter{{ConnCnt, OpGe, 1}}, nil) {
		b = tb.AppendEntry(b, e)
	}
	got := maskPtr(string(b))
	want := "# table: fe_web, type: ip, size:102400, used:2\n" +
		"0xP: key=127.0.0.1 use=0 exp=1800000 gpc0=0 conn_cnt=5 conn_rate(10000)=5 http_req_rate(10000)=0\n" +
		"0xP: key=127.0.0.2 use=0 exp=1800000 gpc0=0 conn_cnt=1 conn_rate(10000)=0 http_req_rate(10000)=0\n"
	if got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	if n := tb.Clear([]Filter{{ConnCnt, OpGt, 2}}, nil); n != 1 || tb.Used() != 1 {
		t.Fatalf("cleared %d, used %d", n, tb.Used())
	}
	k, _ := tb.ParseKey("notanip")
	if string(tb.appendKey(nil, k)) != "0.0.0.0" {
		t.Fatal("an unparsable ip key is 0.0.0.0 in HAProxy 2.6")
	}
}

func maskPtr(s string) string {
	var b strings.Builder
	for _, l := range strings.SplitAfter(s, "\n") {
		if i := strings.Index(l, ": key="); i > 0 && strings.HasPrefix(l, "0x") {
			l = "0xP" + l[i:]
		}
		b.WriteString(l)
	}
	return b.String()
}

func TestConcurrent(t *testing.T) {
	tb := New(Config{Name: "t", Type: KeyIP, Size: 500, Expire: time.Second,
		Store: mustStore(t, "server_id", "conn_cur", "http_req_rate(10s)")})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 2000 {
				k := ipKey(t, fmt.Sprintf("10.%d.%d.%d", g, i/256%4, i%256))
				if e := tb.Get(k); e != nil {
					tb.Update(e, ConnCur, HTTPReqRate)
					tb.SetServer(e, 1, "s1")
					tb.Dec(e, ConnCur)
					tb.Release(e)
				}
				if i%100 == 0 {
					tb.Expire()
					tb.Entries([]Filter{{HTTPReqRate, OpGt, 0}}, nil)
				}
			}
		}()
	}
	wg.Wait()
	if tb.Used() > 500 {
		t.Fatalf("used %d > 500", tb.Used())
	}
	n := 0
	for i := range tb.shards {
		n += len(tb.shards[i].m)
	}
	if n != tb.Used() {
		t.Fatalf("used %d, entries %d", tb.Used(), n)
	}
}

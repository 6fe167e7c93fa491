package stick

import (
	"fmt"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// drained returns the keys DrainUpdates gives, as show table prints them.
func drained(tb *Table) []string {
	var out []string
	tb.DrainUpdates(func(e *Entry) { out = append(out, string(tb.appendKey(nil, e.Key()))) })
	slices.Sort(out)
	return out
}

func TestShareQueuesEachChangedEntryOnce(t *testing.T) {
	clk := newClock()
	tb := New(Config{Name: "t", Type: KeyIP, Size: 100, Expire: time.Minute,
		Store: mustStore(t, "server_id", "conn_cur", "http_req_rate(10s)"), Now: clk.Now})
	a, b, c := ipKey(t, "10.0.0.1"), ipKey(t, "10.0.0.2"), ipKey(t, "10.0.0.3")

	// Not shared: nothing is queued.
	e := tb.Get(a)
	tb.Update(e, HTTPReqRate)
	tb.Release(e)
	if got := drained(tb); len(got) != 0 {
		t.Fatalf("unshared table queued %v", got)
	}

	tb.SetShared(true)
	tests := []struct {
		name   string
		change func()
		want   []string
	}{
		{"counts, many times", func() {
			e := tb.Get(a)
			for range 100 {
				tb.Update(e, HTTPReqRate, ConnCur)
			}
			tb.Dec(e, ConnCur)
			tb.Release(e)
		}, []string{"10.0.0.1"}},
		{"a stick store", func() {
			e := tb.Get(b)
			tb.SetServer(e, 2, "s2")
			tb.Release(e)
		}, []string{"10.0.0.2"}},
		{"a lookup re-arms the expiry", func() { tb.Release(tb.Lookup(a)) }, []string{"10.0.0.1"}},
		{"a touch", func() {
			e := tb.Lookup(c)
			if e != nil {
				t.Fatal("c exists before set table")
			}
			tb.Set(c, []Assign{{HTTPReqRate, 4}})
		}, []string{"10.0.0.3"}},
		{"several", func() {
			for _, k := range []Key{a, b, c} {
				tb.Release(tb.Get(k))
			}
		}, []string{"10.0.0.1", "10.0.0.2", "10.0.0.3"}},
		{"nothing", func() {}, nil},
		{"a learned update is not a local change", func() {
			var d Data
			d.Types = 1 << ServerID
			d.Val[ServerID] = 3
			tb.Learn(ipKey(t, "10.0.0.9"), &d, -1, 0)
		}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.change()
			if got := drained(tb); !slices.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}

	// A change while the drainer holds the entry queues it again.
	tb.Release(tb.Get(a))
	tb.DrainUpdates(func(e *Entry) { tb.Touch(e) })
	if got := drained(tb); !slices.Equal(got, []string{"10.0.0.1"}) {
		t.Errorf("changed while drained: got %v, want [10.0.0.1]", got)
	}
}

// TestShareConcurrent changes entries from several goroutines while one
// drains: every entry changed is drained after its last change.
func TestShareConcurrent(t *testing.T) {
	tb := New(Config{Name: "t", Type: KeyInteger, Size: 1000, Store: mustStore(t, "http_req_cnt")})
	tb.SetShared(true)
	var stop atomic.Bool
	seen := map[Key]int64{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for !stop.Load() {
			tb.DrainUpdates(func(e *Entry) {
				v, _ := tb.Value(e, HTTPReqCnt)
				seen[e.Key()] = v
			})
		}
	}()
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 2000 {
				e := tb.Get(IntKey(int64((g*2000 + i) % 100)))
				tb.Update(e, HTTPReqCnt)
				tb.Release(e)
			}
		}()
	}
	wg.Wait()
	stop.Store(true)
	<-done
	tb.DrainUpdates(func(e *Entry) {
		v, _ := tb.Value(e, HTTPReqCnt)
		seen[e.Key()] = v
	})
	if len(seen) != 100 {
		t.Fatalf("drained %d keys, want 100", len(seen))
	}
	for k, v := range seen {
		if v != 80 {
			t.Errorf("key %d: last drained with %d requests, want 80", k.lo, v)
		}
	}
}

func TestExportLearn(t *testing.T) {
	clk := newClock()
	store := mustStore(t, "server_id", "gpt0", "gpc0", "conn_cnt", "conn_cur", "conn_rate(10s)", "bytes_out_cnt", "server_key")
	src := New(Config{Name: "t", Type: KeyIP, Size: 100, Expire: time.Minute, Store: store, Now: clk.Now})
	dst := New(Config{Name: "t", Type: KeyIP, Size: 100, Expire: time.Minute, Store: store, Now: clk.Now})
	k := ipKey(t, "192.0.2.7")
	e := src.Get(k)
	src.SetServer(e, 2, "s2")
	src.Update(e, ConnCnt, ConnCur, ConnRate, GPC0)
	src.Add(e, BytesOutCnt, 1<<40)
	src.Set(k, []Assign{{GPT0, 7}})
	clk.Add(4 * time.Second)
	src.Update(e, ConnCnt, ConnRate)
	src.Release(e)
	clk.Add(15 * time.Second)

	var d Data
	exp, ok := src.Export(e, &d, false)
	if !ok || exp != 45000 {
		t.Fatalf("export: ok %v, expire %d ms, want true, 45000", ok, exp)
	}
	if d.Freq[ConnRate] != (Freq{Age: 19000, Curr: 2, Prev: 0}) {
		t.Errorf("conn_rate exported as %+v, want age 19000 curr 2", d.Freq[ConnRate])
	}
	if dst.Learn(k, &d, exp, 0) == nil {
		t.Fatal("learn refused")
	}
	want := "key=192.0.2.7 use=0 exp=45000 server_id=2 gpt0=7 gpc0=1 conn_cnt=2 conn_rate(10000)=0 conn_cur=0 bytes_out_cnt=1099511627776 server_key=s2"
	for _, tc := range []struct {
		name string
		tb   *Table
		want string
	}{
		{"source", src, "key=192.0.2.7 use=0 exp=45000 server_id=2 gpt0=7 gpc0=1 conn_cnt=2 conn_rate(10000)=0 conn_cur=1 bytes_out_cnt=1099511627776 server_key=s2"},
		{"learned (no conn_cur)", dst, want},
	} {
		es := tc.tb.Entries(nil, &k)
		if len(es) != 1 {
			t.Fatalf("%s: %d entries", tc.name, len(es))
		}
		line := string(tc.tb.AppendEntry(nil, es[0]))
		if got := line[len(fmt.Sprintf("%p: ", es[0])) : len(line)-1]; got != tc.want {
			t.Errorf("%s:\ngot  %s\nwant %s", tc.name, got, tc.want)
		}
	}
	// The rate reads the same on both sides as the period moves.
	clk.Add(-10 * time.Second)
	v1, _ := src.Value(e, ConnRate)
	v2, _ := dst.Value(dst.Entries(nil, &k)[0], ConnRate)
	if v1 != v2 || v1 == 0 {
		t.Errorf("conn_rate 5 s after: source %d, learned %d", v1, v2)
	}
	// A removed entry is not exported.
	src.Clear(nil, &k)
	if _, ok := src.Export(e, &d, false); ok {
		t.Error("exported a removed entry")
	}
}

// TestLearnExpiry checks that learned entries expire when their peer said,
// sooner than the entries touched before them.
func TestLearnExpiry(t *testing.T) {
	clk := newClock()
	tb := New(Config{Name: "t", Type: KeyInteger, Size: 100, Expire: 10 * time.Second, Store: mustStore(t, "gpc0"), Now: clk.Now, Shards: 1})
	for i := range 5 {
		tb.Release(tb.Get(IntKey(int64(i)))) // expire at 10 s
	}
	var d Data
	tb.Learn(IntKey(100), &d, 3000, 0)  // expires at 3 s
	tb.Learn(IntKey(101), &d, 60000, 0) // clamped to 10 s
	tb.Learn(IntKey(102), &d, -1, 0)    // the table's: 10 s
	clk.Add(3 * time.Second)
	if n := tb.Expire(); n != 1 {
		t.Fatalf("expired %d at 3 s, want 1", n)
	}
	if tb.Lookup(IntKey(100)) != nil {
		t.Fatal("learned entry with 3 s left still there")
	}
	clk.Add(7 * time.Second)
	if n := tb.Expire(); n != 7 {
		t.Fatalf("expired %d at 10 s, want 7", n)
	}
}

// TestLearnedExpiryWakes: a learned entry that expires before the expiry
// timer's next firing (NextExpiry) signals ExpiryChanged, so that it
// leaves when its peer said (a fresh-user trial: entries of a full
// resync stayed counted in used until the timer's next round, a whole
// expire later); one that expires after does not. An expired entry not
// yet removed is not exported to peers (HAProxy learned it back).
func TestLearnedExpiryWakes(t *testing.T) {
	clk := newClock()
	tb := New(Config{Name: "t", Type: KeyInteger, Size: 100, Expire: 15 * time.Second, Store: mustStore(t, "gpc0"), Now: clk.Now, Shards: 1})
	if d := tb.NextExpiry(); d != 15*time.Second {
		t.Fatalf("empty table: next expiry %v, want 15s", d)
	}
	var d Data
	tb.Learn(IntKey(1), &d, 20000, 0) // clamped to 15 s: not sooner
	select {
	case <-tb.ExpiryChanged():
		t.Fatal("signalled for an entry expiring with the timer")
	default:
	}
	e := tb.Learn(IntKey(2), &d, 4600, 0)
	select {
	case <-tb.ExpiryChanged():
	default:
		t.Fatal("not signalled for an entry expiring in 4.6 s")
	}
	if d := tb.NextExpiry(); d != 4600*time.Millisecond {
		t.Fatalf("next expiry %v, want 4.6s", d)
	}
	if exp, ok := tb.Export(e, &d, false); !ok || exp != 4600 {
		t.Fatalf("export: %d %v, want 4600 true", exp, ok)
	}
	clk.Add(5 * time.Second)
	if _, ok := tb.Export(e, &d, false); ok {
		t.Error("an expired entry (not yet removed) was exported")
	}
	if n := tb.Expire(); n != 1 || tb.Used() != 1 {
		t.Errorf("expired %d, used %d; want 1 and 1", n, tb.Used())
	}
}

func TestAggregate(t *testing.T) {
	clk := newClock()
	store := mustStore(t, "server_id", "conn_cur", "http_req_cnt", "http_req_rate(10s)", "bytes_in_cnt")
	var tabs [3]*Table
	for i := range tabs {
		tabs[i] = New(Config{Name: "t", Type: KeyIP, Size: 100, Expire: time.Minute, Store: store, Now: clk.Now, Origins: 2})
	}
	k := ipKey(t, "10.1.1.1")
	// Instance i counts i+1 requests, one connection open, and stores s1.
	for i, tb := range tabs {
		e := tb.Get(k)
		for range i + 1 {
			tb.Update(e, HTTPReqCnt, HTTPReqRate, ConnCur)
		}
		tb.Add(e, BytesInCnt, 1000)
		tb.SetServer(e, 1, "")
		tb.Release(e)
	}
	// Each sends its own counts to the others, twice (a resend changes
	// nothing); origins are numbered per receiver.
	for range 2 {
		for i, from := range tabs {
			var d Data
			exp, _ := from.Export(from.Entries(nil, &k)[0], &d, true)
			for j, to := range tabs {
				if j == i {
					continue
				}
				origin := i + 1
				if i > j {
					origin = i
				}
				to.Learn(k, &d, exp, origin)
			}
		}
	}
	for i, tb := range tabs {
		e := tb.Entries(nil, &k)[0]
		for _, c := range []struct {
			d    DataType
			want int64
		}{{HTTPReqCnt, 6}, {HTTPReqRate, 6}, {BytesInCnt, 3000}, {ConnCur, int64(i + 1)}, {ServerID, 1}} {
			if v, _ := tb.Value(e, c.d); v != c.want {
				t.Errorf("instance %d: %s = %d, want %d", i, c.d, v, c.want)
			}
		}
		// Own counts and the sum, as exported.
		var own, sum Data
		tb.Export(e, &own, true)
		tb.Export(e, &sum, false)
		if own.Val[HTTPReqCnt] != uint64(i+1) || sum.Val[HTTPReqCnt] != 6 || sum.Freq[HTTPReqRate] != (Freq{Prev: 6}) {
			t.Errorf("instance %d: exported own %d, sum %d and %+v", i, own.Val[HTTPReqCnt], sum.Val[HTTPReqCnt], sum.Freq[HTTPReqRate])
		}
	}
	// A peer that does not add up (origin 0) changes no aggregated field.
	var d Data
	d.Types = 1<<HTTPReqCnt | 1<<ServerID
	d.Val[HTTPReqCnt], d.Val[ServerID] = 1000, 2
	tabs[0].Learn(k, &d, -1, 0)
	e := tabs[0].Entries(nil, &k)[0]
	if v, _ := tabs[0].Value(e, HTTPReqCnt); v != 6 {
		t.Errorf("after an update from HAProxy: http_req_cnt %d, want 6", v)
	}
	if v, _ := tabs[0].Value(e, ServerID); v != 2 {
		t.Errorf("after an update from HAProxy: server_id %d, want 2", v)
	}
	// The remote rates decay as the local one does.
	clk.Add(15 * time.Second)
	if v, _ := tabs[0].Value(e, HTTPReqRate); v != 3 {
		t.Errorf("15 s later: http_req_rate %d, want 3", v)
	}
}

func TestKeyBytes(t *testing.T) {
	tests := []struct {
		typ   KeyType
		text  string
		bytes string // hex
	}{
		{KeyIP, "192.0.2.1", "c0000201"},
		{KeyIPv6, "2001:db8::1", "20010db8000000000000000000000001"},
		{KeyInteger, "4000000000", "ee6b2800"},
		{KeyString, "hello", "68656c6c6f"},
		{KeyBinary, "0102", "0102"},
	}
	for _, tc := range tests {
		t.Run(tc.typ.String(), func(t *testing.T) {
			tb := New(Config{Name: "t", Type: tc.typ, Size: 10, KeyLen: 8})
			k, err := tb.ParseKey(tc.text)
			if err != nil {
				t.Fatal(err)
			}
			b := tb.AppendKeyBytes(nil, k)
			if got := fmt.Sprintf("%x", b); got != tc.bytes {
				t.Fatalf("bytes %s, want %s", got, tc.bytes)
			}
			if tc.typ == KeyBinary {
				b = append(b, 0, 0, 0, 0, 0, 0) // HAProxy's zero padding
			}
			back, ok := tb.KeyFromBytes(b)
			if !ok || back != k {
				t.Fatalf("back: %v %v, want %v", back, ok, k)
			}
		})
	}
	tb := New(Config{Name: "t", Type: KeyIP, Size: 10})
	if _, ok := tb.KeyFromBytes([]byte{1, 2, 3}); ok {
		t.Error("3-byte ip key accepted")
	}
	if k, _ := IPKey(KeyIP, netip.MustParseAddr("1.2.3.4")); k.lo != 0x01020304 {
		t.Error("ip key layout changed")
	}
}

func TestRange(t *testing.T) {
	tb := New(Config{Name: "t", Type: KeyInteger, Size: 1000, Store: mustStore(t, "gpc0")})
	for i := range 300 {
		tb.Release(tb.Get(IntKey(int64(i))))
	}
	n := 0
	tb.Range(func(*Entry) bool { n++; return true })
	if n != 300 {
		t.Fatalf("ranged over %d entries, want 300", n)
	}
	n = 0
	tb.Range(func(*Entry) bool { n++; return n < 10 })
	if n != 10 {
		t.Fatalf("stopped after %d entries, want 10", n)
	}
}

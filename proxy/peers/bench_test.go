package peers

import (
	"bufio"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/fulcrum-proxy/fulcrum/proxy/stick"
)

// benchStore is what the benchmarks' tables store: a persistence and
// rate-limiting table.
var benchStore = []string{"server_id", "server_key", "http_req_cnt", "http_req_rate(10s)"}

// benchUpdate returns the definition of an ip table storing benchStore and
// an update of one of its entries.
func benchUpdate(b *testing.B) (*stick.Table, localDef, update) {
	tb := ipTable(b, "st", 0, benchStore...)
	k := ip(b, "192.0.2.44")
	e := tb.Get(k)
	tb.SetServer(e, 2, "s2")
	for range 17 {
		tb.Update(e, stick.HTTPReqCnt, stick.HTTPReqRate)
	}
	tb.Release(e)
	var d stick.Data
	tb.Export(e, &d, false)
	def := newTable(1, TableConfig{Table: tb}).def
	return tb, def, update{id: 1000, withID: true, key: tb.AppendKeyBytes(nil, k), data: &d}
}

// BenchmarkEncodeUpdate encodes one update (explicit id, server name
// known to the peer).
func BenchmarkEncodeUpdate(b *testing.B) {
	_, def, u := benchUpdate(b)
	var tx dictTx
	var buf, scratch []byte
	buf, scratch = appendUpdate(buf, scratch, &def, &u, &tx) // the name is sent once
	b.ReportAllocs()
	for b.Loop() {
		buf, scratch = appendUpdate(buf[:0], scratch, &def, &u, &tx)
	}
	b.ReportMetric(float64(len(buf)), "B/update")
}

// BenchmarkDecodeUpdate decodes the same update.
func BenchmarkDecodeUpdate(b *testing.B) {
	_, def, u := benchUpdate(b)
	var tx dictTx
	var rx dictRx
	first, _ := appendUpdate(nil, nil, &def, &u, &tx)
	msg, _ := appendUpdate(nil, nil, &def, &u, &tx)
	rdef := tableDef{keyType: def.keyType, keySize: def.keySize, types: def.types(), usable: true}
	var d stick.Data
	r := received{withID: true}
	if err := decodeUpdate(frames(b, first)[0][2].([]byte), &rdef, &r, &d, &rx); err != nil {
		b.Fatal(err)
	}
	data := frames(b, msg)[0][2].([]byte)
	b.ReportAllocs()
	for b.Loop() {
		if err := decodeUpdate(data, &rdef, &r, &d, &rx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkApplyUpdate decodes an update and stores it in a table, as a
// session's reader does.
func BenchmarkApplyUpdate(b *testing.B) {
	_, def, u := benchUpdate(b)
	dst := ipTable(b, "st", 0, benchStore...)
	var tx dictTx
	var rx dictRx
	rdef := tableDef{keyType: def.keyType, keySize: def.keySize, types: def.types(), usable: true}
	var d stick.Data
	r := received{withID: true}
	first, _ := appendUpdate(nil, nil, &def, &u, &tx)
	decodeUpdate(frames(b, first)[0][2].([]byte), &rdef, &r, &d, &rx)
	msg, _ := appendUpdate(nil, nil, &def, &u, &tx)
	data := frames(b, msg)[0][2].([]byte)
	b.ReportAllocs()
	for b.Loop() {
		if err := decodeUpdate(data, &rdef, &r, &d, &rx); err != nil {
			b.Fatal(err)
		}
		k, _ := dst.KeyFromBytes(r.key)
		dst.Learn(k, &d, -1, 0)
	}
}

// peerStatus returns the state of m's peer name.
func peerStatus(m *Mesh, name string) PeerStatus {
	for _, p := range m.Status().Peers {
		if p.Name == name {
			return p
		}
	}
	return PeerStatus{}
}

// lagRecorder records when each key was changed on one member and
// learned on the other.
type lagRecorder struct {
	mu      sync.Mutex
	changed map[stick.Key]time.Time
	lags    []time.Duration
}

func (l *lagRecorder) learned(_ *stick.Table, k stick.Key) {
	now := time.Now()
	l.mu.Lock()
	if t0, ok := l.changed[k]; ok {
		l.lags = append(l.lags, now.Sub(t0))
		delete(l.changed, k)
	}
	l.mu.Unlock()
}

// BenchmarkReplication10k replicates 10,000 entry updates per second from
// one member to another on loopback (b.N updates, each to its own entry,
// paced at one every 100 µs) and reports the lag from the change on the first
// to its arrival in the second's table: p50, p99 and max, in ms, and the
// bytes sent per update.
func BenchmarkReplication10k(b *testing.B) {
	c := newCluster(b, 2)
	ta := ipTable(b, "st", 0, benchStore...)
	tbB := ipTable(b, "st", 0, benchStore...)
	rec := &lagRecorder{changed: map[stick.Key]time.Time{}}
	ma := c.start(b, 0, TableConfig{Table: ta})
	mb := c.start(b, 1, TableConfig{Table: tbB})
	mb.learned = rec.learned
	c.waitSettled(b)
	sentBefore := peerStatus(ma, "b").BytesSent
	keys := make([]stick.Key, b.N)
	for i := range keys {
		keys[i] = stick.IntKey(int64(i)) // an ip table's key is 32 bits too
	}
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; {
		<-tick.C
		// Catch up with the rate when ticks were missed.
		due := min(int(time.Since(start)/(100*time.Microsecond)), b.N)
		for ; i < due; i++ {
			e := ta.Get(keys[i])
			rec.mu.Lock()
			rec.changed[keys[i]] = time.Now()
			rec.mu.Unlock()
			ta.SetServer(e, 1+i%2, "s1")
			ta.Update(e, stick.HTTPReqCnt, stick.HTTPReqRate)
			ta.Release(e)
		}
	}
	waitFor(b, 10*time.Second, "every update on b", func() bool {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		return len(rec.changed) == 0
	})
	b.StopTimer()
	lags := slices.Clone(rec.lags)
	slices.Sort(lags)
	q := func(p float64) float64 { return float64(lags[int(p*float64(len(lags)-1))]) / 1e6 }
	b.ReportMetric(q(0.5), "p50-ms")
	b.ReportMetric(q(0.99), "p99-ms")
	b.ReportMetric(q(1), "max-ms")
	b.ReportMetric(float64(peerStatus(ma, "b").BytesSent-sentBefore)/float64(b.N), "wire-B/update")
}

// BenchmarkWireBytes compares the bytes on the wire per update of fulcrum
// and HAProxy 2.6 pushing the same changes of the same table (an ip key,
// server_id, http_req_cnt, http_req_rate(10s)) to a fulcrum peer: 1000
// entries each set once (`set table` on HAProxy), then once more.
func BenchmarkWireBytes(b *testing.B) {
	const n = 1000
	store := "server_id,http_req_cnt,http_req_rate(10s)"
	for _, from := range []string{"fulcrum", "haproxy"} {
		b.Run(from, func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				sent, updates := wireBytes(b, from, store, n)
				b.ReportMetric(float64(sent)/float64(updates), "wire-B/update")
				b.StartTimer()
			}
		})
	}
}

// wireBytes makes 2n changes on a member ("fulcrum" or "haproxy") and
// returns the bytes and the updates a fulcrum peer received for them.
func wireBytes(b *testing.B, from, store string, n int) (bytes, updates uint64) {
	ln := listen(b)
	peers := []PeerConfig{{Name: "src", Addr: freePort(b)}, {Name: "dst", Addr: ln.Addr().String()}}
	dst := ipTable(b, "st", 0, strings.Split(store, ",")...)
	m, err := New(Config{Name: "mesh", Local: "dst", Peers: peers, Tables: []TableConfig{{Table: dst}}}, testLog(b))
	if err != nil {
		b.Fatal(err)
	}
	m.StartListener(ln)
	defer m.Stop()
	var change func(round, i int)
	switch from {
	case "fulcrum":
		src := ipTable(b, "st", 0, strings.Split(store, ",")...)
		sm, err := New(Config{Name: "mesh", Local: "src", Peers: peers, Tables: []TableConfig{{Table: src}}}, testLog(b))
		if err != nil {
			b.Fatal(err)
		}
		if err := sm.Start(); err != nil {
			b.Fatal(err)
		}
		defer sm.Stop()
		change = func(round, i int) {
			src.Set(ip(b, fmt.Sprintf("10.0.%d.%d", i/256, i%256)), []stick.Assign{
				{Type: stick.ServerID, Value: 1}, {Type: stick.HTTPReqCnt, Value: int64(round + 1)}, {Type: stick.HTTPReqRate, Value: int64(round + 1)}})
		}
	default:
		h := startHAProxy(b, "src", peers, store, freePort(b))
		conn, err := net.Dial("unix", h.sock)
		if err != nil {
			b.Fatal(err)
		}
		defer conn.Close()
		br := bufio.NewReader(conn)
		fmt.Fprintf(conn, "prompt\n")
		br.ReadString('>')
		change = func(round, i int) {
			fmt.Fprintf(conn, "set table st key 10.0.%d.%d data.server_id 1 data.http_req_cnt %d data.http_req_rate %d\n", i/256, i%256, round+1, round+1)
			br.ReadString('>')
		}
	}
	waitFor(b, 10*time.Second, "the session", func() bool { return settled(m) })
	src := func() PeerStatus { return peerStatus(m, "src") }
	before := src()
	for round := range 2 {
		for i := range n {
			change(round, i)
		}
		waitFor(b, 10*time.Second, "the changes", func() bool {
			return src().UpdatesReceived-before.UpdatesReceived >= uint64((round+1)*n)
		})
	}
	after := src()
	return after.BytesReceived - before.BytesReceived, after.UpdatesReceived - before.UpdatesReceived
}

// BenchmarkTrackedRequest is the stick-table work of one tracked HTTP
// request as the proxy does it (track-sc0 on a connection's key: Get,
// Update of conn_cur, conn_cnt, conn_rate, http_req_cnt, http_req_rate,
// Dec of conn_cur, Release), on 64 keys (bench/run.sh's 64 connections,
// tracked by src_port), from every P, in a table alone ("alone") and in
// one shared with a peer ("peer"): the request path's cost of
// replication. Besides ns/op (compare alone and peer of one run only), it
// reports counts per request: updates sent to the peer, the writer's
// rounds and the sync loop's rounds, which the machine's load barely
// moves.
func BenchmarkTrackedRequest(b *testing.B) {
	store := []string{"conn_cur", "conn_cnt", "conn_rate(10s)", "http_req_cnt", "http_req_rate(10s)"}
	keys := make([]stick.Key, 64)
	for i := range keys {
		keys[i] = stick.IntKey(int64(40000 + i))
	}
	run := func(b *testing.B, ta *stick.Table) {
		var seq atomic.Int64
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			i := int(seq.Add(1)) * 13
			for pb.Next() {
				e := ta.Get(keys[i%len(keys)])
				ta.Update(e, stick.ConnCur, stick.ConnCnt, stick.ConnRate, stick.HTTPReqCnt, stick.HTTPReqRate)
				ta.Dec(e, stick.ConnCur)
				ta.Release(e)
				i++
			}
		})
	}
	b.Run("alone", func(b *testing.B) {
		run(b, ipTable(b, "st", 0, store...))
	})
	b.Run("peer", func(b *testing.B) {
		c := newCluster(b, 2)
		ta := ipTable(b, "st", 0, store...)
		ma := c.start(b, 0, TableConfig{Table: ta})
		c.start(b, 1, TableConfig{Table: ipTable(b, "st", 0, store...)})
		c.waitSettled(b)
		counts := func() (sent, writes, loops uint64) {
			ma.mu.Lock()
			defer ma.mu.Unlock()
			p := ma.peer("b")
			return p.updatesSent.Load(), p.writes.Load(), ma.taskCalls
		}
		s0, w0, l0 := counts()
		b.ResetTimer()
		run(b, ta)
		b.StopTimer()
		// What the requests queued, pushed before counting.
		waitFor(b, 10*time.Second, "the last changes pushed", func() bool {
			ma.mu.Lock()
			defer ma.mu.Unlock()
			pt := ma.peer("b").tables[0]
			return !ta.Pending() && pt.lastPushed == pt.tab.current()
		})
		s1, w1, l1 := counts()
		n := float64(b.N)
		b.ReportMetric(float64(s1-s0)/n, "updates/op")
		b.ReportMetric(float64(w1-w0)/n, "writes/op")
		b.ReportMetric(float64(l1-l0)/n, "syncs/op")
	})
}

// BenchmarkPushUpdate replicates b.N changes, each to another entry (of
// 4096), to a peer in the same process, waiting every 4096 changes until
// the peer learned them: the peer session's cost per update, both ends
// (drain, export, encode, write; read, decode, store, acknowledge). It
// reports the allocations and the process's CPU time (getrusage, not the
// wall time, which includes the sync loop's batch window) per update, and
// the writes to the connection per update.
func BenchmarkPushUpdate(b *testing.B) {
	c := newCluster(b, 2)
	ta := ipTable(b, "st", 0, benchStore...)
	ma := c.start(b, 0, TableConfig{Table: ta})
	mb := c.start(b, 1, TableConfig{Table: ipTable(b, "st", 0, benchStore...)})
	c.waitSettled(b)
	entries := make([]*stick.Entry, 4096)
	for i := range entries {
		entries[i] = ta.Get(stick.IntKey(int64(i)))
		ta.Release(entries[i])
	}
	mb.mu.Lock()
	pa := mb.peer("a")
	mb.mu.Unlock()
	received := pa.updatesReceived.Load
	waitFor(b, 10*time.Second, "the entries", func() bool { return received() >= uint64(len(entries)) })
	r0, w0 := received(), peerWrites(ma, "b")
	cpu0 := cpuTime()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; {
		n := min(len(entries), b.N-i)
		for j := range n {
			ta.Update(entries[(i+j)%len(entries)], stick.HTTPReqCnt, stick.HTTPReqRate)
		}
		i += n
		want := r0 + uint64(i)
		for received() < want {
			time.Sleep(time.Millisecond)
		}
	}
	b.StopTimer()
	n := float64(b.N)
	b.ReportMetric(float64(cpuTime()-cpu0)/1e3/n, "cpu-µs/update")
	b.ReportMetric(float64(peerWrites(ma, "b")-w0)/n, "writes/update")
}

// peerWrites returns the writes m made to its peer name's connections.
func peerWrites(m *Mesh, name string) uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.peer(name).writes.Load()
}

// cpuTime returns the process's user and system CPU time, in ns.
func cpuTime() int64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}

package peers

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/fulcrum-proxy/fulcrum/proxy/stick"
	"github.com/rs/zerolog"
)

// nopConn is a connection that takes every write and reads nothing: the
// fuzzed session's writer side.
type nopConn struct{}

func (nopConn) Read([]byte) (int, error)         { return 0, net.ErrClosed }
func (nopConn) Write(b []byte) (int, error)      { return len(b), nil }
func (nopConn) Close() error                     { return nil }
func (nopConn) LocalAddr() net.Addr              { return &net.TCPAddr{} }
func (nopConn) RemoteAddr() net.Addr             { return &net.TCPAddr{} }
func (nopConn) SetDeadline(time.Time) error      { return nil }
func (nopConn) SetReadDeadline(time.Time) error  { return nil }
func (nopConn) SetWriteDeadline(time.Time) error { return nil }

// fuzzTables are the tables a fuzzed peer writes to: one per key type,
// and an aggregate one.
func fuzzTables(t testing.TB) []TableConfig {
	all := []string{"server_id", "gpt0", "gpc0", "gpc0_rate(10s)", "conn_cnt", "conn_rate(10s)", "conn_cur",
		"http_req_cnt", "http_req_rate(10s)", "bytes_out_cnt", "server_key"}
	s, err := stick.ParseStore(all)
	if err != nil {
		t.Fatal(err)
	}
	mk := func(name string, typ stick.KeyType, keyLen, origins int) TableConfig {
		return TableConfig{Table: stick.New(stick.Config{Name: name, Type: typ, KeyLen: keyLen, Size: 64, Expire: time.Minute,
			Store: s, Origins: origins}), KeyLen: keyLen, Aggregate: origins > 0}
	}
	return []TableConfig{
		mk("ip", stick.KeyIP, 0, 0), mk("ipv6", stick.KeyIPv6, 0, 0), mk("int", stick.KeyInteger, 0, 0),
		mk("str", stick.KeyString, 16, 0), mk("bin", stick.KeyBinary, 8, 0), mk("agg", stick.KeyIP, 0, 1),
	}
}

// fuzzStream feeds data, as the messages of peer "b" after the handshake,
// to a session of member "a" (fulcrum: whether b said it is fulcrum), and
// returns why the session would end.
func fuzzStream(t testing.TB, tables []TableConfig, data []byte, fulcrum bool) error {
	m, err := New(Config{Name: "mesh", Local: "a", Tables: tables,
		Peers: []PeerConfig{{Name: "a", Addr: "127.0.0.1:1"}, {Name: "b", Addr: "127.0.0.1:2"}}}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	p := m.peer("b")
	s := newSession(m, p, nopConn{}, false)
	s.fulcrum = fulcrum
	s.minor = 1
	m.mu.Lock()
	m.flags = meshResyncLocal
	m.establishLocked(s, time.Now())
	m.mu.Unlock()
	s.rd.r = bufio.NewReader(bytes.NewReader(data))
	for {
		class, typ, msg, err := s.rd.next()
		if err != nil {
			return err
		}
		if err := s.handle(class, typ, msg, time.Now()); err != nil {
			return err
		}
		// What the writer would send must encode too.
		if err := s.send(); err != nil {
			return err
		}
	}
}

// seedStream is a stream a fulcrum peer could send: definitions of every
// fuzz table, updates of each kind, acks and control messages.
func seedStream(t testing.TB, tables []TableConfig, fulcrum bool) []byte {
	var b []byte
	b = append(b, classControl, ctrlHeartbeat, classControl, ctrlResyncRequest)
	var tx dictTx
	for i, tc := range tables {
		def := newTable(uint64(i+1), tc).def
		b, _ = appendDefine(b, nil, &def, fulcrum)
		var d stick.Data
		for j := range 3 {
			key := []byte(fmt.Sprintf("k%03dxxxxxxxxxxxxxxxx", j))
			switch tc.Table.Type() {
			case stick.KeyIP, stick.KeyInteger:
				key = key[:4]
			case stick.KeyIPv6:
				key = key[:16]
			}
			d.Types = 0
			for dt := range stick.NumDataTypes {
				if tc.Table.Stores(dt) {
					d.Types |= 1 << dt
					d.Val[dt] = uint64(j * 1000)
					d.Freq[dt] = stick.Freq{Age: uint32(j * 4000), Curr: uint32(j), Prev: 7}
				}
			}
			d.ServerKey = fmt.Sprintf("srv%d", j%2)
			u := update{id: uint32(10 + j), withID: j != 1, timed: j == 2, expire: 5000, key: key, data: &d}
			b, _ = appendUpdate(b, nil, &def, &u, &tx)
		}
		b = appendAck(b, uint64(i+1), 3)
		b = appendSwitch(b, uint64(i+1))
	}
	b = append(b, classControl, ctrlResyncFinished, classControl, ctrlResyncConfirm, classError, errProtocol)
	return b
}

// FuzzPeerStream feeds arbitrary bytes to a session as what a peer sends
// after the handshake (the first byte says whether the peer is fulcrum).
// Nothing may panic, and the tables must stay consistent: within their
// size, every entry printable.
func FuzzPeerStream(f *testing.F) {
	tables := fuzzTables(f)
	f.Add(append([]byte{0}, seedStream(f, tables, false)...))
	f.Add(append([]byte{1}, seedStream(f, tables, true)...))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		tables := fuzzTables(t)
		fuzzStream(t, tables, data[1:], data[0]&1 == 1)
		for _, tc := range tables {
			tb := tc.Table
			if tb.Used() > tb.Size() {
				t.Fatalf("table %s: %d entries, size %d", tb.Name(), tb.Used(), tb.Size())
			}
			for _, e := range tb.Entries(nil, nil) {
				tb.AppendEntry(nil, e)
			}
		}
	})
}

// TestSeedStream checks that the fuzz seeds are a valid stream: every
// message handled, up to the peer's error message at the end.
func TestSeedStream(t *testing.T) {
	for _, fulcrum := range []bool{false, true} {
		tables := fuzzTables(t)
		err := fuzzStream(t, tables, seedStream(t, tables, fulcrum), fulcrum)
		if err == nil || !bytes.Contains([]byte(err.Error()), []byte(errPeerError.Error())) {
			t.Fatalf("fulcrum=%v: the stream ended with %v, want the peer's error message", fulcrum, err)
		}
		for _, tc := range tables {
			if n := tc.Table.Used(); n != 3 {
				t.Errorf("fulcrum=%v: table %s has %d entries, want 3", fulcrum, tc.Table.Name(), n)
			}
		}
		k, _ := tables[0].Table.KeyFromBytes([]byte("k002"))
		if v := value(tables[0].Table, k, stick.HTTPReqCnt); v != 2000 {
			t.Errorf("fulcrum=%v: http_req_cnt %d, want 2000", fulcrum, v)
		}
	}
}

// TestCaptureHAProxyStream records what HAProxy 2.6 sends a peer that
// asks it for a resync, as a seed of FuzzPeerStream (run with
// PEERS_CAPTURE=1 to write testdata/fuzz/FuzzPeerStream/haproxy-resync).
func TestCaptureHAProxyStream(t *testing.T) {
	if os.Getenv("PEERS_CAPTURE") == "" {
		t.Skip("PEERS_CAPTURE=1 writes the seed")
	}
	peers := []PeerConfig{{Name: "hap", Addr: freePort(t)}, {Name: "a", Addr: freePort(t)}}
	h := startHAProxy(t, "hap", peers, "server_id,server_key,gpc0,conn_cnt,conn_cur,conn_rate(10s),http_req_cnt,http_req_rate(10s),bytes_out_cnt", freePort(t))
	for range 3 {
		h.get(t)
	}
	for i := range 3 {
		h.cli(t, fmt.Sprintf("set table st key 10.0.0.%d data.server_id %d data.gpc0 %d", i, i+1, i*7))
	}
	c, err := net.Dial("tcp", peers[0].Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "HAProxyS 2.1\nhap\na 1 1\n")
	br := bufio.NewReader(c)
	if line, _ := readLine(br); line != "200" {
		t.Fatalf("status %q", line)
	}
	c.Write([]byte{classControl, ctrlResyncRequest})
	var got bytes.Buffer
	c.SetReadDeadline(time.Now().Add(time.Second))
	got.ReadFrom(br)
	dir := filepath.Join("testdata", "fuzz", "FuzzPeerStream")
	os.MkdirAll(dir, 0o755)
	seed := "go test fuzz v1\n[]byte(" + strconv.Quote(string(append([]byte{0}, got.Bytes()...))) + ")\n"
	if err := os.WriteFile(filepath.Join(dir, "haproxy-resync"), []byte(seed), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d bytes from HAProxy", got.Len())
}

// FuzzHandshake feeds arbitrary bytes to the acceptor's handshake: it
// answers a status or an error, and never panics.
func FuzzHandshake(f *testing.F) {
	for _, s := range []string{"HAProxyS 2.1\nme\nhap 1 1\n", "HAProxyS 2.0\r\nme\r\nfulc 2 1 fulcrum/1\r\n", "HAProxyS 9\n", "x\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		h, code, err := readHello(bufio.NewReader(bytes.NewReader(data)), "me", func(n string) bool { return n == "hap" || n == "fulc" })
		if err == nil && code == statusSuccess && h.peer != "hap" && h.peer != "fulc" {
			t.Fatalf("accepted unknown peer %q", h.peer)
		}
		parseStatus(string(data))
	})
}

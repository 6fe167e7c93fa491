package peers

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-proxy/fulcrum/proxy/stick"
)

func TestVarint(t *testing.T) {
	tests := []struct {
		v   uint64
		hex string
	}{
		{0, "00"},
		{239, "ef"},
		{240, "f000"},
		{1000, "f82f"},
		{2287, "ff7f"},
		{2288, "f08000"},
		{264431, "ffff7f"},
		{264432, "f0808000"},
		{33818863, "ffffff7f"},
		{33818864, "f080808000"},
		{math.MaxUint32, "ff f0 fe fe 7e"},
		{math.MaxUint64, "ff f0 fe fe fe fe fe fe fe 0e"},
	}
	for _, tc := range tests {
		want := strings.ReplaceAll(tc.hex, " ", "")
		b := appendVarint(nil, tc.v)
		if got := hex.EncodeToString(b); got != want {
			t.Errorf("encode %d: got %s, want %s", tc.v, got, want)
			continue
		}
		v, n := varint(append(b, 0x55))
		if v != tc.v || n != len(b) {
			t.Errorf("decode %s: got %d (%d bytes), want %d (%d bytes)", want, v, n, tc.v, len(b))
		}
		for i := range b {
			if _, n := varint(b[:i]); n != 0 {
				t.Errorf("decode %x, cut at %d: n = %d, want 0", b, i, n)
			}
		}
	}
	if _, n := varint(bytes.Repeat([]byte{0xff}, 11)); n != -1 {
		t.Errorf("11-byte encoding: n = %d, want -1", n)
	}
	for v := uint64(1); v < 1<<62; v = v*3 + 1 {
		if got, _ := varint(appendVarint(nil, v)); got != v {
			t.Fatalf("round trip of %d gave %d", v, got)
		}
	}
}

func TestHandshake(t *testing.T) {
	known := func(n string) bool { return n == "hap" || n == "fulc2" }
	tests := []struct {
		name  string
		input string
		code  int
		peer  string
		fulc  bool
	}{
		{"HAProxy 2.6", "HAProxyS 2.1\nme\nhap 4242 1\n", statusSuccess, "hap", false},
		{"fulcrum", "HAProxyS 2.1\nme\nfulc2 77 1 fulcrum/1\n", statusSuccess, "fulc2", true},
		{"CRLF", "HAProxyS 2.0\r\nme\r\nhap 1 1\r\n", statusSuccess, "hap", false},
		{"not the protocol", "GET / HTTP/1.1\n", statusProtocol, "", false},
		{"version 2.2", "HAProxyS 2.2\n", statusVersion, "", false},
		{"version 3.0", "HAProxyS 3.0\n", statusVersion, "", false},
		{"version garbage", "HAProxyS 2.x\n", statusVersion, "", false},
		{"another host", "HAProxyS 2.1\nyou\n", statusHost, "", false},
		{"unknown peer", "HAProxyS 2.1\nme\nstranger 1 1\n", statusPeer, "", false},
		{"no pid", "HAProxyS 2.1\nme\nhap\n", statusProtocol, "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h, code, err := readHello(bufio.NewReader(strings.NewReader(tc.input)), "me", known)
			if err != nil {
				t.Fatal(err)
			}
			if code != tc.code || h.peer != tc.peer || h.fulcrum != tc.fulc {
				t.Errorf("got %d %q fulcrum=%v, want %d %q fulcrum=%v", code, h.peer, h.fulcrum, tc.code, tc.peer, tc.fulc)
			}
		})
	}
	if _, _, err := readHello(bufio.NewReader(strings.NewReader("HAProxyS 2.1\nme")), "me", known); err == nil {
		t.Error("a hello cut short: no error")
	}
	if _, _, err := readHello(bufio.NewReader(strings.NewReader(strings.Repeat("x", 5000)+"\n")), "me", known); !errors.Is(err, errLongLine) {
		t.Errorf("a 5000-byte line: %v, want errLongLine", err)
	}
	if got := string(appendHello(nil, "hap", "me", 12, 1)); got != "HAProxyS 2.1\nhap\nme 12 1 fulcrum/1\n" {
		t.Errorf("hello: %q", got)
	}
	for _, tc := range []struct {
		line string
		code int
		fulc bool
	}{{"200", 200, false}, {"200 fulcrum/1", 200, true}, {"502", 502, false}, {"", 0, false}, {"x", 0, false}} {
		if code, fulc := parseStatus(tc.line); code != tc.code || fulc != tc.fulc {
			t.Errorf("status %q: %d %v, want %d %v", tc.line, code, fulc, tc.code, tc.fulc)
		}
	}
}

// frames splits encoded messages into class, type and data.
func frames(t testing.TB, b []byte) [][3]any {
	t.Helper()
	fr := frameReader{r: bufio.NewReader(bytes.NewReader(b))}
	var out [][3]any
	for {
		class, typ, data, err := fr.next()
		if err != nil {
			return out
		}
		out = append(out, [3]any{class, typ, bytes.Clone(data)})
	}
}

func TestDefine(t *testing.T) {
	tb := ipTable(t, "st", 2, "server_id", "http_req_rate(10s)", "conn_cur", "gpc0_rate(1m)")
	d := newTable(3, TableConfig{Table: tb, Aggregate: true}).def
	msg, _ := appendDefine(nil, nil, &d, false)
	// id 3, "st", ipv4, 4 bytes, types 0x449, expire 60000, 3 period
	// 60000, 10 period 10000.
	want := "0a82" + "13" + "03" + "02" + "7374" + "04" + "04" + "f935" + "f0971c" + "03" + "f0971c" + "0a" + "f0e203"
	if got := hex.EncodeToString(msg); got != want {
		t.Fatalf("definition:\ngot  %s\nwant %s", got, want)
	}
	f := frames(t, msg)
	def, err := decodeDefine(f[0][2].([]byte), false)
	if err != nil || def.id != 3 || string(def.name) != "st" || def.keyType != keyIPv4 || def.keySize != 4 ||
		def.types != 0x449 || def.expire != 60000 || !def.usable || def.aggregate {
		t.Fatalf("decoded %+v, %v", def, err)
	}
	msg, _ = appendDefine(nil, nil, &d, true)
	def, err = decodeDefine(frames(t, msg)[0][2].([]byte), true)
	if err != nil || !def.aggregate {
		t.Fatalf("fulcrum's flags: aggregate %v, %v", def.aggregate, err)
	}

	for _, tc := range []struct {
		name   string
		data   string
		err    bool
		usable bool
	}{
		{"no name", "0100", true, false},
		{"name to the end", "01027374", true, false},
		{"cut in the bitfield", "0102737404", true, false},
		{"1.x: no expire, no periods", "010273740404" + "01", false, true},
		{"an array without parameters", "010273740404" + "f0ffff0f", false, false},
		{"a type HAProxy 2.6 does not know", "010273740404" + "f0f0ef07" + "00", false, false},
		{"a rate without its period", "010273740404" + "08" + "00", false, false},
		{"a period for another type", "010273740404" + "08" + "00" + "0410", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data, _ := hex.DecodeString(tc.data)
			def, err := decodeDefine(data, false)
			if (err != nil) != tc.err {
				t.Fatalf("err %v, want error %v", err, tc.err)
			}
			if err == nil && def.usable != tc.usable {
				t.Fatalf("usable %v, want %v (%+v)", def.usable, tc.usable, def)
			}
		})
	}
}

func TestUpdateRoundTrip(t *testing.T) {
	store := []string{"server_id", "gpt0", "conn_cnt", "conn_rate(10s)", "bytes_in_cnt", "server_key"}
	keys := []struct {
		typ  stick.KeyType
		len  int
		text string
	}{
		{stick.KeyIP, 0, "192.0.2.1"},
		{stick.KeyIPv6, 0, "2001:db8::1"},
		{stick.KeyInteger, 0, "123456"},
		{stick.KeyString, 12, "hello world!"},
		{stick.KeyBinary, 6, "0102"},
	}
	for _, kc := range keys {
		t.Run(kc.typ.String(), func(t *testing.T) {
			s, _ := stick.ParseStore(store)
			src := stick.New(stick.Config{Name: "t", Type: kc.typ, KeyLen: kc.len, Size: 10, Expire: time.Minute, Store: s})
			dst := stick.New(stick.Config{Name: "t", Type: kc.typ, KeyLen: kc.len, Size: 10, Expire: time.Minute, Store: s})
			k, err := src.ParseKey(kc.text)
			if err != nil {
				t.Fatal(err)
			}
			e := src.Get(k)
			src.SetServer(e, -2, "s1")
			src.Update(e, stick.ConnCnt, stick.ConnRate)
			src.Add(e, stick.BytesInCnt, 1<<40)
			src.Release(e)
			def := newTable(1, TableConfig{Table: src, KeyLen: kc.len}).def
			var tx dictTx
			var rx dictRx
			var d stick.Data
			var msgs []byte
			for i, u := range []update{{id: 7, withID: true}, {}, {id: 9, withID: true, timed: true, expire: 1234}, {timed: true}} {
				src.Export(e, &d, false)
				u.key = src.AppendKeyBytes(nil, k)
				u.data = &d
				msgs, _ = appendUpdate(msgs, nil, &def, &u, &tx)
				_ = i
			}
			rdef := tableDef{keyType: def.keyType, keySize: def.keySize, types: def.types(), usable: true}
			for i, f := range frames(t, msgs) {
				typ := f[1].(byte)
				r := received{withID: typ == stktUpdate || typ == stktUpdateTimed, timed: typ == stktUpdateTimed || typ == stktIncUpdateTimed}
				var got stick.Data
				if err := decodeUpdate(f[2].([]byte), &rdef, &r, &got, &rx); err != nil {
					t.Fatalf("message %d (%#x): %v", i, typ, err)
				}
				if i == 2 && (r.id != 9 || r.expire != 1234) {
					t.Errorf("message %d: id %d expire %d, want 9, 1234", i, r.id, r.expire)
				}
				rk, ok := dst.KeyFromBytes(r.key)
				if !ok || rk != k {
					t.Fatalf("message %d: key %x", i, r.key)
				}
				dst.Learn(rk, &got, -1, 0)
				if got.ServerKey != "s1" {
					t.Errorf("message %d: server_key %q, want s1 (by value, then by id)", i, got.ServerKey)
				}
			}
			de := dst.Entries(nil, &k)[0]
			for _, c := range []struct {
				d    stick.DataType
				want int64
			}{{stick.ServerID, -2}, {stick.ConnCnt, 1}, {stick.ConnRate, 1}, {stick.BytesInCnt, 1 << 40}} {
				if v, _ := dst.Value(de, c.d); v != c.want {
					t.Errorf("%s: %d, want %d", c.d, v, c.want)
				}
			}
			// Every cut of a message fails: no field is optional.
			f := frames(t, msgs)[0]
			data := f[2].([]byte)
			for i := range data {
				r := received{withID: true}
				var got stick.Data
				if err := decodeUpdate(data[:i], &rdef, &r, &got, &dictRx{}); err == nil {
					t.Fatalf("cut at %d of %d: no error", i, len(data))
				}
			}
		})
	}
}

func TestDictEntryMalformed(t *testing.T) {
	for _, tc := range []struct{ name, hex string }{
		{"id 0", "0100"},
		{"id 129", "02f010"},
		{"length past the end", "05010161"},
		{"value past its length", "0301056162"},
		{"bytes after the value", "05010161ffff"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, _ := hex.DecodeString(tc.hex)
			c := cursor{b: b}
			if s, ok := decodeDictEntry(&c, &dictRx{}); ok {
				t.Fatalf("decoded %q", s)
			}
		})
	}
}

func TestFrameReader(t *testing.T) {
	big := appendVarint([]byte{classStickTable, stktUpdate}, maxMessage+1)
	for _, tc := range []struct {
		name  string
		input []byte
		want  error
	}{
		{"control", []byte{0, 4}, nil},
		{"empty data", []byte{10, 0x84, 0}, nil},
		{"too large", big, errTooLarge},
		{"length never ends", append([]byte{10, 0x80}, bytes.Repeat([]byte{0xff}, 12)...), errMalformed},
		{"cut in the data", []byte{10, 0x80, 5, 1, 2}, fmt.Errorf("unexpected EOF")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fr := frameReader{r: bufio.NewReader(bytes.NewReader(tc.input))}
			_, _, _, err := fr.next()
			switch {
			case tc.want == nil && err != nil:
				t.Fatalf("error %v", err)
			case tc.want != nil && (err == nil || err.Error() != tc.want.Error()):
				t.Fatalf("error %v, want %v", err, tc.want)
			}
		})
	}
}

package http2

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"golang.org/x/net/http2/hpack"
)

// TestHeadCacheSameBytes encodes a long run of response heads through the
// cache (encodeAt) and through a plain encoder fed the same fields: the
// blocks must be the same bytes, head after head, through insertions,
// evictions of a small table and table size changes, and decode to the
// fields given.
func TestHeadCacheSameBytes(t *testing.T) {
	c := &econn{}
	c.enc = hpack.NewEncoder(hpackSink{c})
	var refBuf bytes.Buffer
	ref := hpack.NewEncoder(&refBuf)
	dec := hpack.NewDecoder(4096, nil)
	rng := rand.New(rand.NewPCG(1, 2))
	big := string(bytes.Repeat([]byte("v"), 300))
	names := []string{"server", "date", "content-type", "content-length", "x-upstream", "set-cookie", "x-big"}
	values := func(name string) string {
		switch name {
		case "date":
			return fmt.Sprintf("Wed, 02 Dec 2026 12:00:%02d GMT", rng.IntN(3))
		case "x-upstream":
			return fmt.Sprintf("b%d", 1+rng.IntN(5)) // more values than ways
		case "x-big":
			return big[:100+rng.IntN(200)]
		case "content-length":
			return fmt.Sprint(rng.IntN(4))
		}
		return name + "-value"
	}
	hits := 0
	for head := range 3000 {
		if head%500 == 499 {
			limit := uint32([]int{256, 4096, 0, 1024}[head/500%4])
			c.setTableLimit(limit)
			ref.SetMaxDynamicTableSizeLimit(limit)
		}
		type hf struct{ name, value string }
		fields := []hf{{":status", []string{"200", "404", "200", "599"}[rng.IntN(4)]}}
		for i := range 4 + rng.IntN(cacheSlots+2) {
			n := names[(i+rng.IntN(2))%len(names)]
			fields = append(fields, hf{n, values(n)})
		}
		c.hbuf.Reset()
		refBuf.Reset()
		before := c.hgen
		for i, f := range fields {
			// the cache's fields are in memory reused at once, as a
			// response head's are
			nb := append([]byte(nil), f.name...)
			vb := append([]byte(nil), f.value...)
			c.encodeAt(i, nb, vb)
			clear(nb)
			clear(vb)
			ref.WriteField(hpack.HeaderField{Name: f.name, Value: f.value})
		}
		if c.hgen == before {
			hits++
		}
		if !bytes.Equal(c.hbuf.Bytes(), refBuf.Bytes()) {
			t.Fatalf("head %d: cache %x, encoder %x", head, c.hbuf.Bytes(), refBuf.Bytes())
		}
		got, err := dec.DecodeFull(c.hbuf.Bytes())
		if err != nil {
			t.Fatalf("head %d: %v", head, err)
		}
		if len(got) != len(fields) {
			t.Fatalf("head %d: %d fields decoded, want %d", head, len(got), len(fields))
		}
		for i, f := range fields {
			if got[i].Name != f.name || got[i].Value != f.value {
				t.Fatalf("head %d field %d: %s: %s, want %s: %s", head, i, got[i].Name, got[i].Value, f.name, f.value)
			}
		}
	}
	if hits == 0 {
		t.Fatal("no head was encoded without a table change: the cache was never tried")
	}
}

// TestHeadCacheHits: once a head's fields are in the dynamic table, the
// same head again is encoded from the cache, with no encoder call.
func TestHeadCacheHits(t *testing.T) {
	c := &econn{}
	var calls int
	c.enc = hpack.NewEncoder(countingSink{c, &calls})
	fields := [][2]string{{":status", "200"}, {"server", "nginx"}, {"content-type", "text/plain"}, {"content-length", "3"}}
	enc := func() []byte {
		c.hbuf.Reset()
		for i, f := range fields {
			c.encodeAt(i, []byte(f[0]), []byte(f[1]))
		}
		return bytes.Clone(c.hbuf.Bytes())
	}
	enc() // inserts server, content-type, content-length: indexes 64, 63, 62
	second := enc()
	calls = 0
	third := enc()
	if calls != 0 {
		t.Fatalf("%d encoder writes for a head in the cache, want 0", calls)
	}
	if want := []byte{0x88, 0xc0, 0xbf, 0xbe}; !bytes.Equal(third, want) || !bytes.Equal(second, want) {
		t.Fatalf("head encoded as %x then %x, want %x", second, third, want)
	}
	c.setTableLimit(0) // evicts all: the cache must not answer
	if got := enc(); bytes.Equal(got, third) || calls == 0 {
		t.Fatalf("after a table size change: %x (%d encoder writes)", got, calls)
	}
}

type countingSink struct {
	c *econn
	n *int
}

func (s countingSink) Write(p []byte) (int, error) {
	*s.n++
	return hpackSink{s.c}.Write(p)
}

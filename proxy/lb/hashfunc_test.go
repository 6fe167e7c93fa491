package lb

import "testing"

// TestHashFunctions checks each function against HAProxy's own src/hash.c,
// compiled from C to produce these values.
func TestHashFunctions(t *testing.T) {
	cases := []struct {
		key                     string
		sdbm, djb2, wt6, crc32_ uint32
	}{
		{"", 0x00000000, 0x00001505, 0xf99a0360, 0x00000000},
		{"a", 0x00000061, 0x0002b606, 0x714bf225, 0xe8b7be43},
		{"hello", 0x28d19932, 0x0f923099, 0xd2e6e6b7, 0x3610a686},
		{"/index.html?x=1", 0x67d0a623, 0x6d8f9bb4, 0x98fd3825, 0x4267f956},
		{"haproxy.1wt.eu", 0xd5016dc9, 0x55369522, 0x50a60c3a, 0x12ebd928},
	}
	for _, tc := range cases {
		for _, f := range []struct {
			fn   HashFunc
			want uint32
		}{{SDBM, tc.sdbm}, {DJB2, tc.djb2}, {WT6, tc.wt6}, {CRC32, tc.crc32_}} {
			h := newHasher(HashType{Func: f.fn})
			h.writeString(tc.key)
			if got := h.sum(); got != f.want {
				t.Errorf("%s(%q): got %#08x, want %#08x", f.fn, tc.key, got, f.want)
			}
		}
	}
	for in, want := range map[uint32]uint32{0: 0xab4ed927, 1: 0x348681b6, 12345: 0xf6523c53} {
		if got := fullHash(in); got != want {
			t.Errorf("fullHash(%d): got %#08x, want %#08x", in, got, want)
		}
	}
}

func TestParseHashType(t *testing.T) {
	cases := []struct {
		in   string
		want HashType
		err  bool
	}{
		{"map-based", HashType{}, false},
		{"consistent", HashType{Consistent: true, Avalanche: true}, false},
		{"consistent sdbm", HashType{Consistent: true}, false},
		{"map-based djb2 avalanche", HashType{Func: DJB2, Avalanche: true}, false},
		{"consistent wt6", HashType{Consistent: true, Func: WT6}, false},
		{"map-based crc32", HashType{Func: CRC32}, false},
		{"", HashType{}, true},
		{"ring", HashType{}, true},
		{"consistent md5", HashType{}, true},
		{"consistent sdbm fast", HashType{}, true},
	}
	for _, tc := range cases {
		got, err := ParseHashType(tc.in)
		if (err != nil) != tc.err || err == nil && got != tc.want {
			t.Errorf("%q: got %+v, %v; want %+v, error %v", tc.in, got, err, tc.want, tc.err)
		}
	}
}

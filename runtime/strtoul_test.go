package runtime

import "testing"

// TestStrtoul0: the session pointers of show sess / shutdown session read
// as C's strtoul(s, NULL, 0) reads them (HAProxy's).
func TestStrtoul0(t *testing.T) {
	for in, want := range map[string]uintptr{
		"": 0, "abc": 0, "0": 0, "0x": 0, "0xg": 0, "x12": 0,
		"0x1a": 26, "0X1A": 26, "012": 10, "019": 1, "12abc": 12, "  7": 7, "+5": 5,
		"-1": ^uintptr(0), "99999999999999999999999": ^uintptr(0),
		"0xc1c00d02d80": 0xc1c00d02d80,
	} {
		if got := strtoul0(in); got != want {
			t.Errorf("strtoul0(%q) = %#x, want %#x", in, got, want)
		}
	}
}

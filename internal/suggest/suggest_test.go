package suggest

import "testing"

func TestNearest(t *testing.T) {
	algos := []string{"roundrobin", "static-rr", "leastconn", "first", "source", "uri"}
	for _, tc := range []struct{ word, want string }{
		{"round-robin", "roundrobin"}, {"leastcon", "leastconn"}, {"static_rr", "static-rr"},
		{"frist", "first"}, {"hash", ""}, {"ur", "uri"}, {"xy", ""}, {"uri", "uri"},
	} {
		if got := Nearest(tc.word, algos); got != tc.want {
			t.Errorf("Nearest(%q) = %q, want %q", tc.word, got, tc.want)
		}
	}
}

func TestEditDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"a", "", 1}, {"", "abc", 3}, {"weight", "wieght", 1},
		{"maxconn", "maxconns", 1}, {"kitten", "sitting", 3}, {"ca", "abc", 3},
	} {
		if got := editDistance(tc.a, tc.b); got != tc.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}

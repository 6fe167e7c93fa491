package conf

import "testing"

func TestNearestKey(t *testing.T) {
	keys := []string{"maxconn", "bind", "mode", "balance", "timeout_connect", "timeout_client", "weight", "default_backend"}
	tests := []struct {
		name, key, want string
	}{
		{"one letter too many", "maxconns", "maxconn"},
		{"swapped letters", "wieght", "weight"},
		{"HAProxy's dashes", "timeout-connect", "timeout_connect"},
		{"HAProxy's dashes, other case", "Default-Backend", "default_backend"},
		{"one letter off", "mdoe", "mode"},
		{"too far", "listen", ""},
		{"short keys need an exact neighbour", "xy", ""},
		{"closest of two", "timeout_clent", "timeout_client"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := nearestKey(tc.key, keys); got != tc.want {
				t.Errorf("nearestKey(%q) = %q, want %q", tc.key, got, tc.want)
			}
		})
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

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

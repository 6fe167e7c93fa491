package http2

import (
	"net/http"
	"testing"
)

// TestHeaderKey: headerKey is http.CanonicalHeaderKey, for the interned
// names in any case and for others; interned names cost no allocation.
func TestHeaderKey(t *testing.T) {
	for _, name := range []string{"content-type", "Content-Type", "CONTENT-TYPE", "etag", "ETag", "set-cookie",
		"x-custom-thing", "X-Custom-Thing", "grpc-status", "www-authenticate", "a b", "te", "grpc-timeout", "user-agent"} {
		if got, want := headerKey([]byte(name)), http.CanonicalHeaderKey(name); got != want {
			t.Errorf("%q: got %q, want %q", name, got, want)
		}
		if got, want := headerKeyString(name), http.CanonicalHeaderKey(name); got != want {
			t.Errorf("%q (string): got %q, want %q", name, got, want)
		}
	}
	for k, v := range commonKeys {
		if v != http.CanonicalHeaderKey(k) {
			t.Errorf("commonKeys[%q] = %q, want %q", k, v, http.CanonicalHeaderKey(k))
		}
	}
	name := []byte("content-length")
	if n := testing.AllocsPerRun(100, func() { headerKey(name) }); n != 0 {
		t.Errorf("headerKey(%q): %v allocations, want 0", name, n)
	}
}

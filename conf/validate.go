package conf

// Helpers shared by the validate methods of the sections. Each takes the
// scope of the key it checks and a pointer to the value, and does nothing
// when the pointer is nil: the key was not set, and its default is valid.

import (
	"net"
	"strconv"
	"strings"
)

// oneOf checks that *v is one of allowed: `must be one of a, b, got "c"`.
func oneOf[T ~string](s scope, v *T, allowed ...T) {
	if v == nil {
		return
	}
	for _, a := range allowed {
		if *v == a {
			return
		}
	}
	names := make([]string, len(allowed))
	for i, a := range allowed {
		names[i] = string(a)
		if a == "" {
			names[i] = `""`
		}
	}
	s.errorf("must be one of %s, got %q", strings.Join(names, ", "), string(*v))
}

// inRange checks lo <= *v <= hi: `must be 0..256, got 300`.
func inRange(s scope, v *int, lo, hi int) {
	if v != nil && (*v < lo || *v > hi) {
		s.errorf("must be %d..%d, got %d", lo, hi, *v)
	}
}

// nonNegative checks *v >= 0: `must not be negative, got -1`.
func nonNegative(s scope, v *int) {
	if v != nil && *v < 0 {
		s.errorf("must not be negative, got %d", *v)
	}
}

// atLeast checks *v >= min: `must be at least 1, got 0`.
func atLeast(s scope, v *int, min int) {
	if v != nil && *v < min {
		s.errorf("must be at least %d, got %d", min, *v)
	}
}

// positive checks that a duration is above zero: `must be more than 0, got "0s"`.
func positive(s scope, d *Duration) {
	if d != nil && *d <= 0 {
		s.errorf("must be more than 0, got %q", d.String())
	}
}

// required checks that a string key is set and not empty.
func required(s scope, v string) bool {
	if v == "" {
		s.errorf("required")
		return false
	}
	return true
}

// checkName checks a frontend, backend or server name. HAProxy accepts
// letters, digits, '-', '_', '.' and ':' (its invalid_char()); '/' in
// particular would break the Runtime API's "backend/server" form.
func checkName(s scope, name string) {
	if !required(s, name) {
		return
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_.:", r)) {
			s.errorf(`may contain only letters, digits, "-", "_", "." and ":", got %q`, name)
			return
		}
	}
}

// checkHostPort checks an address "host:port". For a bind the host may be
// empty or "*" (all addresses) and the port 0 (any free port, for tests); a
// server needs a host and a port 1..65535.
func checkHostPort(s scope, addr string, bind bool) {
	host, port, err := net.SplitHostPort(addr)
	min := 1
	if bind {
		min = 0
	}
	n, perr := strconv.Atoi(port)
	switch {
	case err != nil || perr != nil || !isDigits(port):
		s.errorf("must be host:port, got %q", addr)
	case n < min || n > 65535:
		s.errorf("port must be %d..65535, got %q", min, addr)
	case host == "" && !bind:
		s.errorf("must be host:port with a host, got %q", addr)
	case looksNumeric(host) && net.ParseIP(host) == nil:
		s.errorf("%q is not a valid IPv4 address, got %q", host, addr)
	}
}

// looksNumeric reports whether host is made of digits and dots only: meant
// as an IPv4 address, never a name (no top-level domain is numeric).
func looksNumeric(host string) bool {
	if host == "" {
		return false
	}
	for _, c := range host {
		if (c < '0' || c > '9') && c != '.' {
			return false
		}
	}
	return true
}

// ptr returns a pointer to a copy of v; setDefaults uses it for literals.
func ptr[T any](v T) *T { return &v }

// inherit sets *dst to a copy of *src when dst is not set (nil). It is how a
// frontend or backend takes a [defaults] value and a server a
// [backend.default_server] value.
func inherit[T any](dst **T, src *T) {
	if *dst == nil && src != nil {
		v := *src
		*dst = &v
	}
}

// orDefault sets *dst to v when dst is not set.
func orDefault[T any](dst **T, v T) {
	if *dst == nil {
		*dst = &v
	}
}

// deref returns *p, or the zero value for nil.
func deref[T any](p *T) T {
	if p == nil {
		var zero T
		return zero
	}
	return *p
}

// quoteList formats names for messages: a, b, c.
func quoteList(names []string) string { return strings.Join(names, ", ") }

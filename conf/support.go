package conf

// ==== The supported set ====
//
// The schema accepts every key of DESIGN.md's configuration, but the proxy
// implements them one issue at a time. A key that the proxy does not
// implement yet must never be silently ignored: when a file sets it, to
// anything but the value that behaves as today, `fulcrum check` reports
// `FILE:LINE: backend "web": stick_table: not supported yet`.
//
// This file is the one place that says what is implemented. When an issue
// implements a key, delete its line from notYet in the same change, and
// turn its golden case in testdata/conf/ from an error into a valid config.
// Balance algorithms are proxy/lb's: one that HAProxy has and fulcrum does
// not run yet fails lb.Parse with lb.ErrNotSupported.

import (
	"errors"
	"fmt"

	"github.com/fulcrum-proxy/fulcrum/proxy/lb"
)

// notYet maps the schema path of each key that the proxy does not implement
// yet to the values it may have meanwhile: values that behave exactly as
// the key being absent. nil means any value is reported. An empty array or
// table counts as absent.
var notYet = map[string][]any{
	// [[frontend]]

	// [defaults] and [[backend]]; balance is checked against proxy/lb.

	// [[backend.server]] and [backend.default_server]
}

// checkSupport reports every key that the file sets and the proxy does not
// implement yet. It walks the TOML tree rather than the sections so that it
// sees what the file wrote, not what defaults filled in: an inherited value
// is reported once, where it is written. Values that already had a problem
// are skipped.
func (c *checker) checkSupport() {
	c.walkSupport(scope{c: c}, c.tree)
}

// walkSupport checks the keys inside node, the tree value at s.
func (c *checker) walkSupport(s scope, node any) {
	switch n := node.(type) {
	case map[string]any:
		for _, k := range s.sortedKeys(n) {
			c.supportAt(s.at(k), n[k])
		}
	case []map[string]any:
		for i, m := range n {
			c.walkSupport(s.item(i), m)
		}
	case []any:
		for i, e := range n {
			c.walkSupport(s.item(i), e)
		}
	}
}

// supportAt checks one key, then the keys inside it unless it was reported.
func (c *checker) supportAt(s scope, v any) {
	key := s.p.schema()
	if key == "defaults.balance" || key == "backend.balance" {
		if expr, ok := v.(string); ok {
			if _, err := lb.Parse(expr); errors.Is(err, lb.ErrNotSupported) {
				s.errorf("%s", err)
			}
		}
		return
	}
	allow, listed := notYet[key]
	if !listed || isEmpty(v) || isAllowed(allow, v) {
		c.walkSupport(s, v)
		return
	}
	switch v.(type) {
	case map[string]any, []any, []map[string]any:
		s.errorf("not supported yet")
	default:
		s.errorf("not supported yet, got %s", literal(v))
	}
}

// isEmpty reports whether v is an empty array or table.
func isEmpty(v any) bool {
	switch v := v.(type) {
	case map[string]any:
		return len(v) == 0
	case []any:
		return len(v) == 0
	case []map[string]any:
		return len(v) == 0
	}
	return false
}

// isAllowed reports whether the tree value v is one of allow.
func isAllowed(allow []any, v any) bool {
	for _, a := range allow {
		switch a := a.(type) {
		case Duration:
			if s, ok := v.(string); ok {
				if d, err := ParseDuration(s); err == nil && d == a {
					return true
				}
			}
		case int:
			if n, ok := v.(int64); ok && n == int64(a) {
				return true
			}
		default:
			if a == v {
				return true
			}
		}
	}
	return false
}

// literal formats a scalar tree value as TOML writes it.
func literal(v any) string {
	if s, ok := v.(string); ok {
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprintf("%v", v)
}

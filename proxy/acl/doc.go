// Package acl is HAProxy's rule language for fulcrum: sample fetches,
// matchers, ACL conditions and the rules built on them (use_backend,
// http_request, tcp_request), compiled once at load and evaluated per
// request without allocating.
//
// The main types:
//
//   - Request is the small view of a request that fetches read: addresses,
//     method, URI, version and headers (through the Headers interface).
//     It never carries the HTTP engine's own types.
//   - Scope compiles the ACLs and rules of one frontend or backend: named
//     ACLs (several definitions of a name OR together), conditions with
//     if/unless, implicit AND, "||", "!" and anonymous { } ACLs.
//   - Rules holds a section's compiled rules; EvalHTTP, EvalTCP and
//     UseBackend run them against a Request.
//   - Set is a pattern reference, HAProxy's pat_ref: the patterns of one
//     ACL expression, or of one -f file shared by every ACL loading it.
//     Registry numbers the sets as HAProxy's `show acl` does, and the
//     Runtime API changes them live with Add, Del and Clear.
//
// Invariants: a compiled Cond, Rule or Rules never changes after load; the
// only mutable state is a Set's patterns, swapped atomically (readers load
// one immutable snapshot per match and never lock). Plain string and IP
// matches allocate nothing per request; IP patterns are kept as sorted
// networks per prefix length, so a lookup costs O(k log n) for k distinct
// prefix lengths, whatever the number n of entries.
//
// Regular expressions are Go's regexp (RE2): linear-time, without
// backreferences or lookaround, which PCRE (HAProxy's engine) has.
//
// acl imports neither conf nor proxy: conf compiles through it at load,
// and proxy evaluates what conf compiled.
package acl

// Package lb holds fulcrum's balance algorithms, one file each, behind the
// small Algorithm interface: HAProxy 2.6's roundrobin, static-rr,
// leastconn, first, source, uri, url_param, hdr, random and hash, with
// hash_type map-based or consistent and bounded loads
// (hash_balance_factor).
//
// An algorithm sees servers only through *Server, the view it needs: a
// slot index, a weight, maxconn and the current load. Servers may be added
// to and deleted from a backend at runtime: an algorithm learns of them
// only through the sets Rebuild hands it, and keys its per-server state by
// Index, checking that the state it finds is the server's own (a slot is
// reused after a server is deleted). The backend (package
// proxy) decides which servers are usable (up, ready, weight above 0,
// active or backup, panic mode) and hands the algorithm that set whenever
// it changes (Rebuild); the algorithm never decides usability and never
// sees the HTTP path. What it does decide is to skip a full server (one at
// its maxconn): fullness changes with every session, so it is checked at
// pick time, and ConnObserver lets an algorithm keep full servers out of
// its way. The hashing algorithms keep a key on its full server instead,
// unless hash_preserve_affinity says otherwise (AffinityPicker).
//
// With a hash_key (hashkey.go), the hashing algorithms hash with SipHash
// under a secret, so that nobody can compute which keys go to which server.
//
// Invariants every algorithm keeps:
//   - Pick returns a server of the last Rebuild's set, never a full one
//     (but a hashing algorithm's affine pick), and the server to avoid
//     only when no other one is free.
//   - Pick is safe for concurrent use and allocates nothing.
//   - Ties break by Index, and randomness comes from Config.Rand, so tests
//     are deterministic.
//
// The list of algorithm names is written once, in registry.go: Parse
// checks a balance expression against it for configuration validation and
// `fulcrum check`, and the docs are written from it.
package lb

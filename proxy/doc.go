// Package proxy is fulcrum's core: frontends that accept connections,
// backends that own servers and an algorithm, the HTTP and TCP request paths,
// the counters they keep and the Snapshot that stats/ and runtime/ read.
//
// State model (HAProxy's): a Server has an admin state (READY, DRAIN, MAINT)
// and an operational state (UP, DOWN); its InitialWeight comes from the
// configuration, its UserWeight from operators, its EffectiveWeight is what
// the algorithm uses. The Backend decides which servers are usable, once per
// change, under its lock, and hands that set to its lb.Algorithm.
//
// The request path sees requests only through a small view (method, path,
// host, headers, addresses); the HTTP/1.1 engine in http.go is the only code
// that knows the wire format.
//
// A Proxy is one configuration. A reload (reload.go) builds the next one
// with NewFrom, which copies the state of what keeps its name, starts it
// with StartFrom, which takes over the listeners that stay, and retires the
// old one with Retire once its in-flight work is done. LoadServerState
// (statefile.go) reads HAProxy's server-state file at start.
//
// proxy never imports runtime, stats, cli or cmd.
package proxy

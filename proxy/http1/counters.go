package http1

import "sync/atomic"

// Counters are HAProxy 2.6's h1 statistics module (the h1_* columns of
// show stat) for a frontend (its HTTP/1 client connections) or a backend
// (its HTTP/1 server connections). Updated with atomics. Which of them the
// engine moves and which the core derives is said on each.
type Counters struct {
	// OpenConns and TotalConns are h1_open_connections and
	// h1_total_connections: for a backend, the server connections made
	// and not closed (newUpConn, upConn.close); for a frontend the core
	// derives them from its sessions less its HTTP/2 connections.
	OpenConns, TotalConns atomic.Int64
	// OpenStreams and TotalStreams are h1_open_streams and
	// h1_total_streams: a frontend's requests of HTTP/1 clients begun and
	// not ended (the core); a backend's requests written to its servers'
	// connections (each attempt; open ones are derived: the connections
	// not idle in their pools).
	OpenStreams, TotalStreams atomic.Int64
	// BytesIn and BytesOut are h1_bytes_in and h1_bytes_out: the bytes
	// of requests and responses received and sent on those connections,
	// counted per request by the core.
	BytesIn, BytesOut atomic.Int64
	// SplicedIn and SplicedOut are h1_spliced_bytes_in and
	// h1_spliced_bytes_out: response body bytes copied socket to socket
	// (a frontend sends them, a backend receives them).
	SplicedIn, SplicedOut atomic.Int64
}

// Clear zeroes the totals ("clear counters all"); the gauges of open
// connections and streams keep their values.
func (c *Counters) Clear() {
	for _, v := range []*atomic.Int64{&c.TotalConns, &c.TotalStreams, &c.BytesIn, &c.BytesOut, &c.SplicedIn, &c.SplicedOut} {
		v.Store(0)
	}
}

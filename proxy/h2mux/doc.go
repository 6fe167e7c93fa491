// Package h2mux holds what both HTTP engines need of HTTP/2 connections:
// the frame accounting and the limits every HTTP/2 connection runs behind
// (Guard: HAProxy 2.6's h2 counters, and the refusals of rapid reset,
// CONTINUATION floods, oversized header blocks and SETTINGS/PING floods),
// the counters themselves (Counters), and the pool of multiplexed
// connections to one server (Pool), on which golang.org/x/net/http2's
// ClientConn runs the streams.
//
// Invariants: a Pool belongs to one server and only ever holds
// connections dialed to that server, so no stream for one server can be
// sent on another's connection; a Guard sees every byte of its
// connection, in both directions, and parses only frame headers (and the
// error code of RST_STREAM and GOAWAY frames), never payloads.
package h2mux

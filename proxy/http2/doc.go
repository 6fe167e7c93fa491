// Package http2 is the HTTP/2 engine for clients: a connection from a
// client that speaks HTTP/2 (a bind with "proto h2", prior knowledge, or
// ALPN h2 on a TLS bind) is served by fulcrum's own frame loop on
// golang.org/x/net/http2's Framer and hpack (engine.go: one goroutine
// reading the connection's frames, one per running stream, reused by the
// connection's next streams) behind an h2mux.Guard,
// and each of its streams is one request for the core, driven through the
// same phases as an HTTP/1 request (Stream: route, take, connect, send,
// relay, end), to an HTTP/1.1 server through the server's HTTP/1 pool
// (http1.Exchange) or to an HTTP/2 server as a stream on one of its
// multiplexed connections (h2mux.Pool). x/net/http2's Server can serve
// the connections instead (EngineXNet), for comparison.
//
// Main types: Client and Stream (what the engine needs of the core, which
// implements them), Server (a frontend's HTTP/2 settings and the graceful
// stop of its connections). Invariants: every stream ends with exactly one
// Stream.End and one Release; a stream the client resets frees its server
// side at once (a client abort, CD); a stop or a reload sends GOAWAY and
// lets the streams in flight finish.
package http2

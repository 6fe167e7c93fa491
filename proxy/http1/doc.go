// Package http1 is fulcrum's HTTP/1.1 engine: it reads requests from client
// connections, forwards them to servers over pooled connections and relays
// the responses, moving HTTP/1 messages and nothing else. Where a request
// goes, whether it waits, and every counter and log line are the core's
// (package proxy), which the engine drives through two interfaces: Client,
// the core's side of one client connection, and Stream, its side of one
// request, whose phases (route, take, connect, send, receive, relay, end)
// the engine calls in order.
//
// Main types: Head (a parsed request or response head; strict framing,
// hop-by-hop fields classified in linear time), the chunked codec
// (copyChunked: parsed strictly, written anew), Pool and Conn (a server's
// idle connections; a connection only ever returns to the pool of the
// server it was made to, and only at a response boundary), and the
// session loop (Serve).
package http1

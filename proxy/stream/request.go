package stream

import "github.com/fulcrum-proxy/fulcrum/proxy/acl"

// Request is a request head as an engine hands it to the core: what the
// rules, the balancing algorithms, persistence and the log read. The byte
// slices alias the engine's buffers: they are valid until the stream ends,
// and the core keeps none of them past it.
type Request struct {
	Method  []byte // "GET"
	URI     []byte // as on the request line: origin-form or absolute-form
	Version []byte // "HTTP/1.1"
	Host    []byte // the Host field (HTTP/2: :authority), nil if none
	Headers Headers
	// HasBody says a body follows the head; it belongs to the server.
	HasBody bool
	// ConnClose says the client asked to close the connection after this
	// request (HTTP/1: Connection: close, or HTTP/1.0 without keep-alive).
	ConnClose bool
}

// Headers is a request's header fields, by position (acl.Headers: the
// rules and cookie persistence, whose edits name fields by position) and
// by name (hashing algorithms).
type Headers interface {
	acl.Headers
	// Header returns the value of the first field named name (any case).
	Header(name string) (string, bool)
}

package stream

import (
	"net/http"

	"github.com/fulcrum-proxy/fulcrum/proxy/acl"
)

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

// Response is a response head as an engine hands it to the core's
// http_response rules (Stream.ResponseRules): the server's status, its
// version and its fields. The slices alias the engine's buffers, valid
// until the stream ends.
type Response struct {
	Status  int
	Version []byte // "HTTP/1.1"
	Headers acl.Headers
}

// Headers is a request's header fields, by position (acl.Headers: the
// rules and cookie persistence, whose edits name fields by position) and
// by name (hashing algorithms).
type Headers interface {
	acl.Headers
	// Header returns the value of the first field named name (any case).
	Header(name string) (string, bool)
}

// RouteKind is what the core decided for a request (Route).
type RouteKind uint8

// The routes.
const (
	RouteBackend  RouteKind = iota // forward to a server of the backend (Take)
	RouteAnswer                    // a rule answered: send Answer, then End
	RouteLocal                     // serve with Handler, then LocalDone
	RouteNoServer                  // no backend: End(NoServer)
)

// Route is the core's decision for a request.
type Route struct {
	Kind RouteKind
	// RouteAnswer: the rule's response as HTTP/1 bytes (valid until the
	// next request), its status, whether the rule denies (End with
	// Denied, else Answered), and whether the connection may stay open.
	Answer []byte
	Status int
	Deny   bool
	Keep   bool
	// RouteLocal: the frontend's own handler (stats page, /metrics).
	Handler http.Handler
}

// FieldWriter is where the core writes header fields of its own into a
// message the engine is writing (Set-Cookie of cookie persistence).
type FieldWriter interface {
	Write([]byte) (int, error)
	WriteString(string) (int, error)
}

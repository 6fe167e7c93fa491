package acl

import (
	"net/netip"

	"github.com/fulcrum-proxy/fulcrum/proxy/tlsx"
)

// Headers is the header list of a request as the HTTP engine holds it.
// Names and values are the bytes as received (values without surrounding
// whitespace); they must stay valid while the request is evaluated.
type Headers interface {
	// NumHeaders returns the number of header lines.
	NumHeaders() int
	// HeaderAt returns header line i, 0 <= i < NumHeaders().
	HeaderAt(i int) (name, value []byte)
}

// Request is the view of a request that fetches read. The HTTP engine fills
// it once per request; the byte slices alias the engine's buffers and are
// valid only until the next request is read, so nothing in this package
// keeps them past an evaluation.
//
// At the tcp_request connection stage only Src, Dst and Tracker (the
// connection's) are set, and HTTP is false: layer-7 fetches then find no
// sample (configurations using them there are rejected at load).
type Request struct {
	Src, Dst netip.AddrPort
	HTTP     bool   // an HTTP request is available (false at connection accept)
	Method   []byte // "GET"
	URI      []byte // as on the request line: origin-form or absolute-form
	Version  []byte // "1.1" or "1.0", without "HTTP/"
	Headers  Headers
	SSL      bool // the client connection is TLS (ssl_fc)
	// TLS is the client connection's TLS once its handshake is done, nil
	// on a plain connection (and at tcp_request connection, which runs
	// before the handshake): the ssl_fc_* and ssl_c_* fetches read it.
	TLS *tlsx.ConnInfo

	// Edits are the header and path changes made by the rules run so far
	// (set-header, add-header, del-header, set-path). Fetches see them, as
	// in HAProxy, and the engine applies them to the request it forwards.
	// nil means the rules may not edit (EvalHTTP then refuses edits).
	Edits *Edits

	// Tracker holds the request's tracking counters: track-sc rules fill
	// it, sc_* fetches read it. nil: no stick tables (sc_* find nothing).
	Tracker Tracker

	// Res is the server's response once its head arrived: http_response
	// rules run with it set, and the response fetches (status, res.hdr,
	// shdr...) read it. Res.Status is 0 before (request rules), and those
	// fetches then find no sample.
	Res Response
}

// Response is the view of a response head that http_response rules read
// and edit. The slices alias the engine's buffers, as Request's.
type Response struct {
	Status  int    // as received from the server
	Version []byte // "1.1", without "HTTP/"
	Headers Headers
	// Edits are the changes http_response rules made: header lines and
	// set-status. The engine applies them as it writes the head.
	Edits *Edits
}

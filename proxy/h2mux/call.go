package h2mux

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http2"
)

// Call is one request sent as a stream on a server's HTTP/2 connection,
// with the backend's timeout_server applied as HAProxy applies timeout
// tunnel to a stream: it bounds the wait for the response head, then each
// silence of the stream in either direction, so a long-lived stream
// (gRPC streaming) lives as long as data flows.
type Call struct {
	ctx      context.Context
	cancel   context.CancelFunc
	parent   context.Context
	timeout  time.Duration
	timer    *time.Timer
	timedOut atomic.Bool
	resp     *http.Response
	received int64       // response body bytes read
	body     *clientBody // the request body (BodyReader), nil without
	cs       *Counters   // where the stream is counted (Pooled), nil: nowhere
	pool     *Pool       // the pool of the connection (Pooled), nil: none
	open     bool        // the stream is counted open in cs
}

// Pooled makes the call count its stream in p's counters, the backend's
// h2 counters (h2_backend_open_streams while it lasts, and
// h2_backend_total_streams), as HAProxy 2.6 counts every stream of a
// server connection, and tell p once its stream started (a connection p
// drains sends its GOAWAY then). It returns c.
func (c *Call) Pooled(p *Pool) *Call {
	c.cs, c.pool = p.c, p
	return c
}

// endStream ends the stream's count, once.
func (c *Call) endStream() {
	if c.open {
		c.open = false
		c.cs.OpenStreams.Add(-1)
	}
}

// NewCall prepares a call whose life is bounded by parent (the client's
// stream: its end cancels the call) and timeout (0: none).
func NewCall(parent context.Context, timeout time.Duration) *Call {
	c := &Call{parent: parent, timeout: timeout}
	c.ctx, c.cancel = context.WithCancel(parent)
	if timeout > 0 {
		c.timer = time.AfterFunc(timeout, func() {
			c.timedOut.Store(true)
			c.cancel()
		})
	}
	return c
}

// Context is the call's context, for the request sent.
func (c *Call) Context() context.Context { return c.ctx }

// Interim makes the call give trace's Got1xxResponse the server's interim
// heads (103 Early Hints...) before RoundTrip returns the final one; call
// it before RoundTrip. trace may be shared by the calls of one client
// connection (it is only read).
func (c *Call) Interim(trace *httptrace.ClientTrace) {
	c.ctx = httptrace.WithClientTrace(c.ctx, trace)
}

// MaxInterims bounds the interim heads relayed for one request (x/net
// leaves the limit to the caller once it gives them).
const MaxInterims = 16

// RelayInterim reports whether a server's interim head of status goes on
// to the client, counting it in *n: not 100 Continue (the proxy answered
// the client's itself) nor 101, and at most MaxInterims per request.
func RelayInterim(status int, n *int) bool {
	if status == 100 || status == 101 || *n >= MaxInterims {
		return false
	}
	*n++
	return true
}

// Touch re-arms the inactivity timeout: data moved.
func (c *Call) Touch() {
	if c.timer != nil && !c.timedOut.Load() {
		c.timer.Reset(c.timeout)
	}
}

// TimedOut reports whether timeout_server ended the call.
func (c *Call) TimedOut() bool { return c.timedOut.Load() }

// ClientGone reports whether the client's side ended the call.
func (c *Call) ClientGone() bool { return c.parent.Err() != nil && !c.TimedOut() }

// RoundTrip sends req on cc (which holds a reservation for it, Pool) and
// returns the response once its head arrived. req's context is replaced
// by the call's.
func (c *Call) RoundTrip(cc *http2.ClientConn, req *http.Request) (*http.Response, error) {
	if c.cs != nil {
		c.cs.OpenStreams.Add(1)
		c.cs.TotalStreams.Add(1)
		c.open = true
	}
	if _, ok := req.Header["User-Agent"]; !ok {
		// x/net adds its own ("Go-http-client/2.0") unless told none:
		// the server gets the client's fields only, as from HAProxy.
		req.Header["User-Agent"] = nil
	}
	resp, err := cc.RoundTrip(req.WithContext(c.ctx))
	if c.pool != nil {
		c.pool.Drain() // the reservation is used
	}
	if err != nil {
		c.endStream()
		return nil, err
	}
	c.resp = resp
	c.Touch()
	return resp, nil
}

// Read reads the response body, re-arming the timeout.
func (c *Call) Read(p []byte) (int, error) {
	n, err := c.resp.Body.Read(p)
	if n > 0 {
		c.received += int64(n)
		c.Touch()
	}
	return n, err
}

// Received returns the response body bytes read so far.
func (c *Call) Received() int64 { return c.received }

// Close ends the call: a response not read whole is reset (CANCEL).
func (c *Call) Close() {
	if c.timer != nil {
		c.timer.Stop()
	}
	if c.resp != nil {
		c.resp.Body.Close()
	}
	c.cancel()
	c.endStream()
}

// BodyReader wraps r, a request body read from the client, so that each
// read re-arms the call's timeout and a failure is told apart from the
// server's (ErrClientBody). The http2 package reads it on a goroutine of
// its own, which may still be reading when the response has ended: the
// caller ends it with EndBody before it uses r again.
func (c *Call) BodyReader(r io.Reader) io.ReadCloser {
	c.body = &clientBody{r: r, c: c}
	return c.body
}

// ErrClientBody marks a failure reading the request body from the client.
var ErrClientBody = errors.New("h2mux: client body")

// errBodyEnded is what a read of a body ended by EndBody returns.
var errBodyEnded = errors.New("h2mux: request body ended")

// clientBody is the request body as the http2 package reads it. mu is
// held during each read, so that EndBody can wait for the one in flight.
type clientBody struct {
	r     io.Reader
	c     *Call
	mu    sync.Mutex
	ended bool // EndBody was called: reads fail
	eof   bool // r was read to its end
}

func (b *clientBody) Read(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ended {
		return 0, errBodyEnded
	}
	n, err := b.r.Read(p)
	if n > 0 {
		b.c.Touch()
	}
	switch {
	case err == io.EOF:
		b.eof = true
	case err != nil:
		return n, clientBodyErr{err}
	}
	return n, err
}

func (b *clientBody) Close() error { return nil }

// EndBody stops the request body's reads: a read in flight is cut with
// unblock (which must make the client's read return: an expired read
// deadline, a closed stream) and waited for, later ones fail. Once it
// returns, what the body reader wrapped (BodyReader) is the caller's
// again. It reports whether the body was read whole (true without a
// body).
func (c *Call) EndBody(unblock func()) bool {
	b := c.body
	if b == nil {
		return true
	}
	if !b.mu.TryLock() {
		unblock()
		b.mu.Lock()
	}
	b.ended = true
	whole := b.eof
	b.mu.Unlock()
	return whole
}

type clientBodyErr struct{ err error }

func (e clientBodyErr) Error() string   { return "client body: " + e.err.Error() }
func (e clientBodyErr) Unwrap() []error { return []error{ErrClientBody, e.err} }

// IsProtocolError reports whether err is the server's stream or
// connection reset with PROTOCOL_ERROR (its response broke HTTP/2's
// rules, or it refused the request as malformed).
func IsProtocolError(err error) bool {
	var se http2.StreamError
	if errors.As(err, &se) {
		return se.Code == http2.ErrCodeProtocol
	}
	var ce http2.ConnectionError
	if errors.As(err, &ce) {
		return http2.ErrCode(ce) == http2.ErrCodeProtocol
	}
	return strings.Contains(err.Error(), "PROTOCOL_ERROR")
}

// IsServerReset reports whether err is the server's RST_STREAM of the
// stream (any code), as opposed to a reset the client side decided (a
// malformed response) or the loss of the connection.
func IsServerReset(err error) bool {
	var se http2.StreamError
	// x/net/http2 marks a reset received from the peer with its
	// errFromPeer cause, whose text is stable.
	return errors.As(err, &se) && se.Cause != nil && se.Cause.Error() == "received from peer"
}

// HopByHop reports whether a field named name (any case) is
// connection-specific and must not cross into or out of an HTTP/2
// message (RFC 9113 section 8.2.2). TE is hop-by-hop unless it is
// "trailers", which gRPC needs (TEAllowed).
func HopByHop(name string) bool {
	switch len(name) {
	case 2:
		return strings.EqualFold(name, "te")
	case 7:
		return strings.EqualFold(name, "upgrade")
	case 10:
		return strings.EqualFold(name, "connection") || strings.EqualFold(name, "keep-alive")
	case 16:
		return strings.EqualFold(name, "proxy-connection")
	case 17:
		return strings.EqualFold(name, "transfer-encoding")
	}
	return false
}

// TEAllowed reports whether a TE field's value may be forwarded in an
// HTTP/2 request: only "trailers".
func TEAllowed(value string) bool { return strings.EqualFold(strings.TrimSpace(value), "trailers") }

// Fields is a response head's fields in the order they are written, as
// the core's http_response rules read them (acl.Headers: their edits name
// fields by position). The slices alias the caller's; Reset reuses the
// list.
type Fields struct{ list [][2][]byte }

// Reset empties f.
func (f *Fields) Reset() {
	clear(f.list)
	f.list = f.list[:0]
}

// Add appends a field.
func (f *Fields) Add(name, value []byte) { f.list = append(f.list, [2][]byte{name, value}) }

// NumHeaders returns the number of fields.
func (f *Fields) NumHeaders() int { return len(f.list) }

// HeaderAt returns field i.
func (f *Fields) HeaderAt(i int) (name, value []byte) { return f.list[i][0], f.list[i][1] }

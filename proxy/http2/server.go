package http2

import (
	"bufio"
	"context"
	"io"
	"log"
	"math"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http2"

	"github.com/fulcrum-proxy/fulcrum/proxy/h2mux"
	"github.com/fulcrum-proxy/fulcrum/proxy/http1"
)

// Client is the core's side of one HTTP/2 client connection. Its methods
// may be called from any of the connection's streams at once.
type Client interface {
	// Conn is the client connection; Src the client's address.
	Conn() net.Conn
	Src() netip.AddrPort
	// Settings are those of the frontend that owns the connection
	// (timeout_client, X-Forwarded-For).
	Settings() *http1.Settings
	// Server is the frontend's HTTP/2 server (settings, graceful stop).
	Server() *Server
	// Counters are the frontend's h2 counters.
	Counters() *h2mux.Counters
	// Stopping reports whether the proxy is stopping (a stop or a
	// reload): the connection is then sent GOAWAY.
	Stopping() bool
	// NewStream returns the core's side of a new stream.
	NewStream() Stream
	// Done is called once, when the connection closes.
	Done()
}

// Stream is the core's side of one stream: the phases of http1.Stream,
// then Free once it was released.
type Stream interface {
	http1.Stream
	// Free returns the stream to the core; it must not be used after.
	Free()
}

// Server is one frontend's HTTP/2 server: the settings announced to its
// clients and the graceful stop of its connections.
type Server struct {
	h2         *http2.Server
	hs         *http.Server // x/net's base configuration, and its shutdown hook
	maxStreams int
	idle       time.Duration
	// xnet serves the connections with x/net/http2's Server instead of
	// fulcrum's own engine (engine.go): for comparison only.
	xnet bool

	// The own engine's connections, for the graceful stop.
	mu      sync.Mutex
	conns   map[*econn]struct{}
	stopped bool
	// workerIdle is how long a connection's stream worker waits for the
	// next stream (workers.go); under mu.
	workerIdle time.Duration
	// inline: the readers begin bodiless streams (inline.go), nil: not.
	inline *InlineCounters
	// batch: woken streams with whole responses run in batches
	// (SetBatch).
	batch bool
	// sendBatch: the readers send the requests of a read together
	// (SetSendBatch).
	sendBatch bool
}

// Engines, the values of EngineEnv.
const (
	// EngineOwn is fulcrum's own frame loop on x/net/http2's Framer and
	// hpack (engine.go): the default.
	EngineOwn = "own"
	// EngineXNet is x/net/http2's Server, kept for comparison.
	EngineXNet = "xnet"
)

// quiet takes the http2 package's own log lines (a client's protocol
// error is counted, not logged on stderr).
var quiet = log.New(io.Discard, "", 0)

// NewServer returns the HTTP/2 server of a frontend: maxStreams is
// tune_h2_max_concurrent_streams (0: no limit), idle closes a connection
// without streams after that long (timeout_client; 0: never), engine is
// EngineOwn (or "") or EngineXNet.
func NewServer(maxStreams int, idle time.Duration, engine string) *Server {
	adv := uint32(maxStreams)
	if maxStreams <= 0 {
		adv = math.MaxInt32
	}
	s := &Server{
		h2: &http2.Server{
			MaxConcurrentStreams: adv,
			// HAProxy announces 16384 (tune.h2.max-frame-size's default).
			MaxReadFrameSize: 16 << 10,
			IdleTimeout:      idle,
		},
		// MaxHeaderBytes is SETTINGS_MAX_HEADER_LIST_SIZE; a decoded
		// header list beyond it (an HPACK bomb) is refused by the guard
		// first under this engine (h2mux.Limits.MaxHeaderList,
		// COMPRESSION_ERROR), before the server builds it; by the own
		// engine's reader as it decodes (hblock.go).
		hs:         &http.Server{MaxHeaderBytes: 64 << 10, ErrorLog: quiet, IdleTimeout: idle},
		maxStreams: maxStreams,
		idle:       idle,
		xnet:       engine == EngineXNet,
		workerIdle: workerIdle,
	}
	http2.ConfigureServer(s.hs, s.h2)
	return s
}

// Shutdown sends GOAWAY on every connection of the server: each finishes
// the streams it has and then closes. Calling it again reaches the
// connections that started since.
func (s *Server) Shutdown() {
	s.mu.Lock()
	s.stopped = true
	conns := make([]*econn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	for _, c := range conns {
		// Not waited for: a connection whose client does not read holds
		// its write lock, and must not hold the stop of the others.
		go c.goAway()
	}
	// The http.Server serves nothing itself: its Shutdown only runs the
	// hook that http2.ConfigureServer registered (graceful shutdown of
	// every connection) and returns.
	s.hs.Shutdown(context.Background())
}

// Serve serves the HTTP/2 client connection cl until it closes: the
// client closes, the idle timeout, a connection error, or a stop's GOAWAY
// once its streams are done.
func Serve(cl Client) {
	srv := cl.Server()
	raw := cl.Conn()
	bc := bufferedConn{Conn: raw, br: bufio.NewReaderSize(raw, readBufSize)}
	lim := h2mux.DefaultLimits(srv.maxStreams)
	if !srv.xnet {
		// The engine's reader refuses oversized header lists as it
		// decodes each block (hblock.go): the guard need not decode
		// every block a second time.
		lim.MaxHeaderList = 0
	}
	g := h2mux.NewClientGuard(bc, cl.Counters(), lim)
	if srv.xnet {
		c := &conn{Guard: g, connBase: connBase{cl: cl, g: g, xff: xffOf(cl)}, srv: srv}
		srv.h2.ServeConn(c, &http2.ServeConnOpts{Handler: c, BaseConfig: srv.hs})
		g.Close()
		c.own.Close(true)
	} else {
		serveOwn(cl, srv, raw, bc.br, g)
	}
	cl.Done()
}

// connBase is what a stream needs of its client connection, whichever
// engine serves it.
type connBase struct {
	cl      Client
	g       *h2mux.Guard
	streams atomic.Int64 // streams begun, to tell the first (http_reuse safe)
	// own are the server connections private to this client connection
	// (http_reuse never), closed with it.
	own h2mux.Owned
	// wtimeout: the connection was cut by its write timeout (the own
	// engine): its streams end as client timeouts.
	wtimeout atomic.Bool
	// xff is the X-Forwarded-For value (the client's address) when the
	// settings say ForwardFor, made once per connection (xffOf).
	xff string
}

// xffOf returns the X-Forwarded-For value of cl's requests: its address
// when its settings say ForwardFor, "" otherwise.
func xffOf(cl Client) string {
	if !cl.Settings().ForwardFor {
		return ""
	}
	return cl.Src().Addr().Unmap().String()
}

// conn is the client connection as x/net/http2's server reads it: the
// guard, plus the stop's GOAWAY for a connection that started after the
// stop broadcast it.
type conn struct {
	*h2mux.Guard
	connBase
	srv      *Server
	notified atomic.Bool
}

// Read reads from the guard; once the proxy stops, the first read asks
// for GOAWAY (the server has registered the connection by then).
func (c *conn) Read(p []byte) (int, error) {
	if c.cl.Stopping() && c.notified.CompareAndSwap(false, true) {
		c.srv.Shutdown()
	}
	return c.g.Read(p)
}

// bufferedConn is a client connection read through a buffer, under the
// guard. x/net/http2's Server reads each frame's 9-byte header, then its
// payload, straight from the connection: unbuffered, that was two system
// calls per frame (and an EAGAIN for every header not yet arrived), where
// the buffer takes what the client sent in one. The guard still sees
// exactly the bytes the server asks for, so a frame that breaks a limit
// fails the read of that frame, after the preface and the frames before
// it were served.
type bufferedConn struct {
	net.Conn
	br *bufio.Reader
}

func (b bufferedConn) Read(p []byte) (int, error) { return b.br.Read(p) }

// readBufSize is the read buffer of a client connection: small frames
// (HEADERS, WINDOW_UPDATE, SETTINGS, small DATA) come several to a read;
// a payload at least this large is read straight into the server's
// buffer. Kept small: every open connection holds it, idle or not.
const readBufSize = 4 << 10

// ServeHTTP serves one stream.
func (c *conn) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	cs := c.cl.Counters()
	cs.OpenStreams.Add(1)
	cs.TotalStreams.Add(1)
	defer cs.OpenStreams.Add(-1)
	st := getStream()
	st.c, st.w, st.r = &c.connBase, w, r
	st.first = c.streams.Add(1) == 1
	st.serve()
	putStream(st)
}

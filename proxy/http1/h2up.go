package http1

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/textproto"
	"net/url"
	"strconv"
	"strings"
	"time"

	xh2 "golang.org/x/net/http2"

	"github.com/fulcrum-proxy/fulcrum/proxy/h2mux"
	"github.com/fulcrum-proxy/fulcrum/proxy/netio"
	"github.com/fulcrum-proxy/fulcrum/proxy/stream"
)

// HTTP/1.1 clients to HTTP/2 servers (server proto h2, or ssl with an
// alpn offering h2 on the connections where ALPN selected it: a server
// choosing by ALPN also keeps HTTP/1.1 connections, Upstream.ByALPN): the
// request goes as a stream on one of the server's multiplexed connections
// (h2mux.Pool),
// the response comes back as HTTP/1.1, chunked when its length is not
// known or it has trailers (which then travel in the chunked trailer
// section). timeout_server bounds the wait for the response head, then
// each silence of the stream (h2mux.Call).

// forwardH2 sends the request, assigned to a server speaking HTTP/2, and
// relays the response: on c when the caller dialed it (and it speaks
// HTTP/2), else on a connection with a free stream; for a server that
// picks its protocol by ALPN (Upstream.ByALPN), else on an idle HTTP/1.1
// connection; else on a new connection, used as its handshake says. It
// returns true when the client connection stays usable.
func (s *session) forwardH2(c net.Conn) bool {
	x := s.x
	up := x.Upstream()
	if up.Reuse == ReuseNever && s.h2own == nil {
		s.h2own = new(h2mux.Owned)
	}
	// The 100 Continue goes before a stream is reserved: a client gone
	// then would leave the reservation on the shared connection for good
	// (x/net gives one back only through a RoundTrip).
	if o := s.expectContinue(); o != stream.Served {
		if c != nil {
			c.Close()
		}
		return s.fail(o)
	}
	var cc *xh2.ClientConn
	var dial *h2mux.Dial
	reused := false
	if c == nil {
		if cc, dial = ReserveOrDialH2(context.Background(), up, x.ConnKey(), s.nreq <= 1, s.h2own); cc != nil {
			reused = true
		} else if uc := s.reuseByALPN(up); uc != nil {
			x.Connected(uc.c, true)
			defer x.Unbind()
			return s.forwardOn(uc, true)
		} else {
			var o stream.Outcome
			if c, o = x.Connect(); o != stream.Served {
				dial.Done(nil)
				return s.fail(o)
			}
		}
	}
	if cc == nil {
		if up = x.Upstream(); !up.SpeaksH2(c) {
			// HTTP/1.1: a server whose ALPN chose it (or none), or a
			// redispatch to a server speaking HTTP/1.1.
			dial.Done(nil)
			uc := newUpConn(c, up, x.ConnKey())
			x.Connected(c, false)
			defer x.Unbind()
			return s.forwardOn(uc, false)
		}
		var err error
		cc, err = AddH2(up, x.ConnKey(), c, s.h2own)
		dial.Done(cc) // nil on error
		if err != nil {
			return s.fail(stream.SendFailed)
		}
	}
	call := h2mux.NewCall(context.Background(), up.TimeoutServer).Pooled(up.H2)
	defer call.Close()
	if s.h2trace == nil {
		s.h2trace = &httptrace.ClientTrace{Got1xxResponse: s.interimH2}
	}
	s.interims = 0
	call.Interim(s.h2trace)
	x.Connected(CallConn(call), reused)
	defer x.Unbind()
	req, body := s.h2Request(call)
	x.Sent(0)
	resp, err := call.RoundTrip(cc, req)
	if err != nil {
		s.endBody(call, body)
		switch {
		case body != nil && body.err != nil && netio.IsTimeout(body.err):
			return s.fail(stream.ClientTimeoutUpload)
		case body != nil && body.err != nil:
			return s.fail(stream.ClientAbortUpload)
		case call.TimedOut():
			return s.fail(stream.ServerTimeoutHead)
		case h2mux.IsProtocolError(err):
			return s.fail(stream.ServerProtocolError)
		}
		return s.fail(stream.ServerGoneHead)
	}
	return s.relayH2(call, resp, body)
}

// endBody waits until the http2 package no longer reads the request body
// from the client connection (a read in flight is cut) and accounts for
// the bytes sent. It returns whether the body was read whole: if not, the
// rest of it is still on the connection, which cannot carry another
// request.
func (s *session) endBody(call *h2mux.Call, body *countingBody) bool {
	whole := call.EndBody(func() { s.c.SetReadDeadline(time.Unix(1, 0)) })
	if !whole {
		s.dl.ExpireRead(s.c) // what the cut did, now known to the deadlines
	}
	if body != nil {
		s.x.BodySent(body.n)
	}
	return whole
}

// reuseByALPN returns an idle HTTP/1.1 connection to up's server when it
// picks its protocol by ALPN (Upstream.ByALPN) and http_reuse allows, as
// session.reuse; nil for other servers.
func (s *session) reuseByALPN(up *Upstream) *upConn {
	if !up.ByALPN {
		return nil
	}
	return s.reuse(up)
}

// ReserveH2 returns a connection to up's HTTP/2 server made for requests
// of key (Stream.ConnKey: the SNI sent) with one stream reserved, as the
// backend's http_reuse allows, or nil when one must be dialed (AddH2):
//   - never: only a connection private to the client connection (own,
//     which must not be nil then);
//   - safe: a shared connection, but for the first request of a client
//     connection (first) only one already busy with streams;
//   - aggressive and always: any shared connection with a free stream.
func ReserveH2(up *Upstream, key string, first bool, own *h2mux.Owned) *xh2.ClientConn {
	switch up.Reuse {
	case ReuseNever:
		return own.Reserve(up.H2, key)
	case ReuseSafe:
		return up.H2.Reserve(key, !first)
	}
	return up.H2.Reserve(key, true)
}

// ReserveOrDialH2 is ReserveH2 for a request that dials when it finds no
// free stream: to a server whose connections are shared (http_reuse other
// than never) and speak HTTP/2 by configuration (not ByALPN), a request
// arriving while a dial to it is under way waits for that dial (at most
// up.TimeoutConnect) and takes a stream on it if the server's SETTINGS
// allow, rather than dial its own (h2mux.Pool.ReserveOrDial). A non-nil
// Dial is the caller's to make: it must end it with Done.
func ReserveOrDialH2(ctx context.Context, up *Upstream, key string, first bool, own *h2mux.Owned) (*xh2.ClientConn, *h2mux.Dial) {
	if up.Reuse == ReuseNever || up.ByALPN {
		return ReserveH2(up, key, first, own), nil
	}
	return up.H2.ReserveOrDial(ctx, key, up.Reuse != ReuseSafe || !first, up.TimeoutConnect)
}

// AddH2 makes c, newly connected to up's HTTP/2 server for requests of
// key, a connection with one stream reserved: private to own under
// http_reuse never, else shared in the server's pool.
func AddH2(up *Upstream, key string, c net.Conn, own *h2mux.Owned) (*xh2.ClientConn, error) {
	if up.Reuse == ReuseNever {
		return own.Add(up.H2, key, c)
	}
	return up.H2.Add(key, c)
}

// forwardOn is forward's exchange and relay on uc, a connection bound to
// the stream.
func (s *session) forwardOn(uc *upConn, reused bool) bool {
	if o := s.expectContinue(); o != stream.Served {
		uc.close()
		return s.fail(o)
	}
	uc, o := s.exchange(uc, reused)
	if o != stream.Served {
		if uc != nil {
			uc.close()
		}
		return s.fail(o)
	}
	return s.relay(uc)
}

// CallConn returns what `show sess` binds for a stream on a shared HTTP/2
// connection: closing it (shutdown session) ends that stream only.
func CallConn(c *h2mux.Call) net.Conn { return callConn{c} }

type callConn struct{ *h2mux.Call }

func (c callConn) Read([]byte) (int, error)      { return 0, io.EOF }
func (c callConn) Write([]byte) (int, error)     { return 0, io.ErrClosedPipe }
func (c callConn) Close() error                  { c.Call.Close(); return nil }
func (c callConn) LocalAddr() net.Addr           { return nil }
func (c callConn) RemoteAddr() net.Addr          { return nil }
func (c callConn) SetDeadline(t time.Time) error { return nil }
func (c callConn) SetReadDeadline(time.Time) error {
	return nil
}
func (c callConn) SetWriteDeadline(time.Time) error { return nil }

// countingBody is the client's request body as sent to an HTTP/2 server:
// it re-arms the client's inactivity timeout and keeps the bytes read and
// the client's failure.
type countingBody struct {
	s   *session
	r   io.Reader
	n   int64
	err error
}

func (b *countingBody) Read(p []byte) (int, error) {
	b.s.dl.ArmRead(b.s.c, time.Now(), b.s.set.TimeoutClient)
	n, err := b.r.Read(p)
	b.n += int64(n)
	if err != nil && err != io.EOF {
		b.err = err
	}
	return n, err
}

// h2Request builds the request for an HTTP/2 server from the client's
// head: hop-by-hop fields dropped (TE kept only as "trailers"), Host as
// :authority, the rules' edits and X-Forwarded-For applied, the body
// (de-chunked) streamed from the client.
func (s *session) h2Request(call *h2mux.Call) (*http.Request, *countingBody) {
	r := &s.req
	edits := s.x.Edits()
	h := make(http.Header, len(r.headers)+2)
	for i := range r.headers {
		f := &r.headers[i]
		if edits.Hidden(i) || (r.expect100 && bytes.EqualFold(f.name, hdrExpect)) {
			continue
		}
		name, value := string(f.name), string(f.value)
		if f.isHopByHop(false) || h2mux.HopByHop(name) {
			if strings.EqualFold(name, "te") && h2mux.TEAllowed(value) {
				h.Add("Te", "trailers")
			}
			continue
		}
		if strings.EqualFold(name, "host") || strings.EqualFold(name, "content-length") {
			continue
		}
		h.Add(name, value)
	}
	for i := range edits.NumAdded() {
		if name, value, ok := edits.AddedAt(i); ok {
			h.Add(string(name), string(value))
		}
	}
	if s.set.ForwardFor {
		h.Add("X-Forwarded-For", s.cl.Src().Addr().Unmap().String())
	}
	host := string(r.host)
	if host == "" {
		host = "localhost" // HTTP/1.0 without Host: :authority is required
	}
	req := &http.Request{
		Method: string(r.line[0]), URL: TargetURL(s.x.URI(), host, s.x.Upstream().TLS), Host: host,
		Header: h, Proto: "HTTP/2.0", ProtoMajor: 2,
	}
	var cb *countingBody
	switch {
	case r.chunked:
		cb = &countingBody{s: s, r: &chunkReader{br: s.br, maxHdr: r.maxHdr}}
		req.ContentLength = -1
	case r.contentLength > 0:
		cb = &countingBody{s: s, r: io.LimitReader(s.br, r.contentLength)}
		req.ContentLength = r.contentLength
	}
	if cb != nil {
		req.Body = call.BodyReader(cb)
	}
	return req, cb
}

// TargetURL returns the URL whose RequestURI is uri's origin form (an
// absolute-form target loses its scheme and authority), for a request to
// authority host; its scheme (the :scheme sent) is https over TLS, else
// http.
func TargetURL(uri []byte, host string, overTLS bool) *url.URL {
	u := string(uri)
	if i := strings.Index(u, "://"); i > 0 && !strings.HasPrefix(u, "/") {
		u = u[i+3:]
		if j := strings.IndexByte(u, '/'); j >= 0 {
			u = u[j:]
		} else {
			u = "/"
		}
	}
	path, query, _ := strings.Cut(u, "?")
	scheme := "http"
	if overTLS {
		scheme = "https"
	}
	return &url.URL{Scheme: scheme, Host: host, Opaque: path, RawQuery: query, ForceQuery: strings.HasSuffix(u, "?")}
}

// relayH2 sends the HTTP/2 server's response to the HTTP/1.1 client.
func (s *session) relayH2(call *h2mux.Call, resp *http.Response, reqBody *countingBody) bool {
	x := s.x
	x.ResponseHead()
	status := resp.StatusCode
	x.Respond(status)
	rf := &s.h2rf
	rf.Reset()
	for name, values := range resp.Header {
		if h2mux.HopByHop(name) || strings.EqualFold(name, "content-length") {
			continue
		}
		for _, v := range values {
			rf.Add([]byte(name), []byte(v))
		}
	}
	if deny := x.ResponseRules(&stream.Response{Status: status, Version: version2, Headers: rf}); deny != 0 {
		whole := s.endBody(call, reqBody)
		return s.denyResponse(deny) && whole
	}
	edits := x.ResponseEdits()
	shown := status
	if code, _, ok := edits.Status(); ok {
		shown = code
	}
	isHead := string(s.req.line[0]) == "HEAD"
	noBody := isHead || status == 204 || status == 304
	lengthKnown := resp.ContentLength >= 0 && len(resp.Trailer) == 0
	chunked := !noBody && !lengthKnown && !s.req.http10
	untilClose := !noBody && !lengthKnown && s.req.http10
	closeAfter := s.req.connClose || untilClose || s.cl.StoppingForGood()

	w := s.bw
	n0 := s.written()
	w.WriteString("HTTP/1.1 ")
	if code, reason, ok := edits.Status(); ok {
		w.WriteString(strconv.Itoa(code))
		w.WriteByte(' ')
		w.Write(reason)
	} else {
		w.WriteString(strconv.Itoa(status))
		w.WriteByte(' ')
		w.WriteString(http.StatusText(status))
	}
	w.WriteString("\r\n")
	for i := range rf.NumHeaders() {
		name, value := rf.HeaderAt(i)
		if edits != nil && edits.Hidden(i) || x.FilterResponseField(w, name, value) {
			continue
		}
		w.Write(name)
		w.WriteString(": ")
		w.Write(value)
		w.WriteString("\r\n")
	}
	if edits != nil {
		for i := range edits.NumAdded() { // add-header and set-header lines
			if name, value, ok := edits.AddedAt(i); ok {
				w.Write(name)
				w.WriteString(": ")
				w.Write(value)
				w.WriteString("\r\n")
			}
		}
	}
	if g := resp.Header.Get("Grpc-Status"); g != "" {
		x.GRPCStatus(g) // a trailers-only answer
	}
	switch {
	case chunked:
		w.WriteString("transfer-encoding: chunked\r\n")
	case lengthKnown && !(noBody && !isHead && status != 304):
		w.WriteString("content-length: ")
		w.WriteString(strconv.FormatInt(resp.ContentLength, 10))
		w.WriteString("\r\n")
	}
	switch {
	case closeAfter:
		w.WriteString("connection: close\r\n")
	case s.req.http10:
		w.WriteString("connection: keep-alive\r\n")
	}
	x.AppendResponseFields(w)
	w.WriteString("\r\n")
	headBytes := s.written() - n0

	var body int64
	var rerr, werr error
	if !noBody {
		buf := netio.GetBuf()
		defer netio.PutBuf(buf)
		for {
			n, err := call.Read(buf)
			if n > 0 {
				body += int64(n)
				if chunked {
					w.WriteString(strconv.FormatInt(int64(n), 16))
					w.WriteString("\r\n")
				}
				w.Write(buf[:n])
				if chunked {
					w.WriteString("\r\n")
				}
				if werr = s.flushClient(); werr != nil {
					break
				}
			}
			if err != nil {
				if err != io.EOF {
					rerr = err
				}
				break
			}
		}
	}
	if rerr == nil && werr == nil {
		if g := resp.Trailer.Get("Grpc-Status"); g != "" {
			x.GRPCStatus(g)
		}
		if chunked {
			w.WriteString("0\r\n")
			for name, values := range resp.Trailer {
				for _, v := range values {
					w.WriteString(name)
					w.WriteString(": ")
					w.WriteString(v)
					w.WriteString("\r\n")
				}
			}
			w.WriteString("\r\n")
		}
	}
	if !s.endBody(call, reqBody) {
		closeAfter = true // the server answered before the body's end
	}
	x.Relayed(shown, headBytes+body)
	if werr == nil && rerr == nil {
		werr = s.flushClient()
	}
	switch {
	case werr != nil && netio.IsTimeout(werr):
		x.End(stream.ClientTimeoutData)
		return false
	case werr != nil:
		x.End(stream.ClientAbortData)
		return false
	case rerr != nil && call.TimedOut():
		x.End(stream.ServerTimeoutData)
		return false
	case rerr != nil:
		x.End(stream.ServerAbortData)
		return false
	}
	x.End(stream.Served)
	return !closeAfter
}

// version2 is the version http_response rules see on an HTTP/2 server's
// response (res.ver).
var version2 = []byte("HTTP/2.0")

// interimH2 relays an HTTP/2 server's interim head (103 Early Hints) to
// the client before the final one, as HAProxy 2.6 does (h2mux.RelayInterim
// says which). It runs on x/net's read loop while the session waits in
// RoundTrip.
func (s *session) interimH2(code int, h textproto.MIMEHeader) error {
	s.x.Interim(code)
	if !h2mux.RelayInterim(code, &s.interims) {
		return nil
	}
	w := s.bw
	w.WriteString("HTTP/1.1 ")
	w.WriteString(strconv.Itoa(code))
	w.WriteByte(' ')
	w.WriteString(http.StatusText(code))
	w.WriteString("\r\n")
	for k, vv := range h {
		if h2mux.HopByHop(k) {
			continue
		}
		for _, v := range vv {
			w.WriteString(k)
			w.WriteString(": ")
			w.WriteString(v)
			w.WriteString("\r\n")
		}
	}
	w.WriteString("\r\n")
	w.Flush()
	return nil
}

package http1

import (
	"bufio"
	"errors"
	"net"
	"sync/atomic"
	"time"

	"github.com/fulcrum-proxy/fulcrum/proxy/netio"
)

// Uploads: a request body that is not all in the client buffer is
// streamed to the server by a goroutine of its own while the session
// waits for the response and relays it, as HAProxy forwards both
// directions at once. A server may answer before the body ends (a 413
// from an upload limit, a 401, an early 200): its response reaches the
// client at once, instead of after the whole body (a client that waits
// for it before sending more timed out), and a server that closes after
// such an answer no longer turns it into a 502. Once the response is
// relayed the request ends when its body has been sent (or the client
// stopped sending it: CD/cD with the server's status, as HAProxy logs
// it); its server connection is pooled again only when the body went
// out whole (RFC 9112 9.3: a server that answers early reads the rest or
// closes), and the client connection stays usable when the body ended
// well.
//
// An interim response (the 100 Continue of a server that got the
// client's Expect) is relayed, and the next head awaited as the first
// (awaitAgain).
//
// Timeouts as HAProxy 2.6's (measured): while the response is awaited,
// timeout_server runs from the last write to the server, and a body that
// stops coming does not end the request by timeout_client: the server's
// timeout does, 504 sH, whichever of the two is shorter. Once the
// response is being relayed, timeout_client applies to the body again.
//
// The goroutine owns the client's reader (s.br, the read side of s.dl)
// and the upload's writer on the server connection (upload.w, the write
// side of uc.dl) until the session joins it (endUpload); the session
// owns the rest. Buffered bodies (replayable) are written with the head
// and need none of this.

// Upload phases (upload.phase): the response's first byte awaited, the
// response being read, the upload's client side having failed while the
// response was awaited (the wait was woken).
const (
	upAwait int32 = iota
	upRelay
	upClientFailed
)

// upload is a request body sent to its server by a goroutine of its own
// (the session's runUpload, an Exchange's StartBody) while the response
// is awaited (await) and read. The goroutine owns w and the write side of
// dl until it reports on done; the waiting side owns the rest.
type upload struct {
	w     *bufio.Writer // the writer on the server connection
	c     net.Conn      // the server connection
	dl    *netio.Deadlines
	ts    time.Duration // timeout_server
	last  atomic.Int64  // Unix ns of the last write to the server
	phase atomic.Int32
	// read: the body was read whole from the client; what is left is
	// the last flush to the server.
	read atomic.Bool
	// failed: the body's client side failed (set before the phase CAS of
	// report, for awaitAgain).
	failed atomic.Bool
	done   chan struct{} // one value per upload, when n and err are set
	n      int64         // body bytes sent
	err    error         // how the body's copy failed
	// onFlush, when set, runs before each flush with the phase (the
	// session's client read deadline).
	onFlush func(now time.Time, phase int32)
}

// begin readies u for an upload on c through w, before its goroutine
// starts.
func (u *upload) begin(w *bufio.Writer, c net.Conn, dl *netio.Deadlines, ts time.Duration) {
	if u.done == nil {
		u.done = make(chan struct{}, 1)
	}
	u.w, u.c, u.dl, u.ts = w, c, dl, ts
	u.n, u.err = 0, nil
	u.phase.Store(upAwait)
	u.read.Store(false)
	u.failed.Store(false)
	now := time.Now()
	u.last.Store(now.UnixNano())
	dl.ArmWrite(c, now, ts)
}

// flush sends what w holds within timeout_server and notes the write.
func (u *upload) flush() error {
	now := time.Now()
	if u.onFlush != nil {
		u.onFlush(now, u.phase.Load())
	}
	u.dl.ArmWrite(u.c, now, u.ts)
	err := u.w.Flush()
	u.last.Store(time.Now().UnixNano())
	return err
}

// report ends the goroutine's part: n bytes sent, err how it failed
// (clientSide: reading the body from the client failed). A client-side
// failure while the response is awaited wakes the wait by expiring the
// server connection's read deadline; once the response is read it is
// left for the end of the exchange.
func (u *upload) report(n int64, err error, clientSide bool) {
	if clientSide {
		u.failed.Store(true)
		if u.phase.CompareAndSwap(upAwait, upClientFailed) {
			u.c.SetReadDeadline(time.Unix(1, 0))
		}
	}
	u.n, u.err = n, err
	u.done <- struct{}{}
}

// await waits for the first byte of the response from br (uc's reader)
// while the body goes out. The wait ends timeout_server after the last
// write to the server (HAProxy refreshes the server's read timeout on its
// write activity unless independent-streams), or when the upload's client
// side fails (errUploadFailed). It returns nil when the response starts
// (onRelay, if set, runs then), the read's error otherwise.
func (u *upload) await(uc *upConn, onRelay func()) error {
	for {
		var until time.Time
		if u.ts > 0 {
			until = time.Unix(0, u.last.Load()).Add(u.ts)
		}
		uc.dl.SetRead(uc.c, until)
		if u.phase.Load() == upClientFailed {
			return errUploadFailed
		}
		_, err := uc.br.Peek(1)
		switch {
		case err == nil:
			if u.phase.CompareAndSwap(upAwait, upRelay) {
				if onRelay != nil {
					onRelay()
				}
				return nil
			}
			return errUploadFailed
		case u.phase.Load() == upClientFailed:
			return errUploadFailed
		case !netio.IsTimeout(err):
			return err
		case time.Now().Before(time.Unix(0, u.last.Load()).Add(u.ts)):
			// Written to since the deadline was armed: wait on.
		default:
			return err
		}
	}
}

// awaitAgain awaits the next response head after an interim one (a 100
// Continue relayed) while the body still goes out, as await the first.
// An upload that failed on the client side since the first head came is
// seen here (failed), or wakes the wait (report's CAS).
func (s *session) awaitAgain(uc *upConn) error {
	u := s.up
	u.phase.Store(upAwait)
	if u.failed.Load() {
		return errUploadFailed
	}
	return s.awaitResponse(uc)
}

// awaitError is an await's error inside readResponseHead (awaitAgain),
// for exchangeFrom to end as sendStreaming's (awaitFailed).
type awaitError struct{ err error }

func (e awaitError) Error() string { return e.err.Error() }
func (e awaitError) Unwrap() error { return e.err }

// errUploadFailed: the upload's client side failed while the response was
// awaited (its error is the upload's).
var errUploadFailed = errors.New("upload failed on the client side")

// ended reports whether the goroutine has reported (without waiting).
func (u *upload) ended() bool { return len(u.done) > 0 }

// join waits for the goroutine's report; cut first makes its server
// writes fail at once (the caller unblocks its reads of the body).
func (u *upload) join(cut bool) (int64, error) {
	if cut {
		u.c.SetWriteDeadline(time.Unix(1, 0))
	}
	<-u.done
	if cut {
		u.dl.ForgetWrite()
	}
	u.w, u.c, u.dl = nil, nil, nil
	return u.n, u.err
}

// startUpload writes the request head for uc into an upload writer of its
// own and starts the goroutine that sends it and streams the body.
func (s *session) startUpload(uc *upConn) {
	u := s.up
	if u == nil {
		u = &upload{}
		u.onFlush = func(now time.Time, phase int32) {
			if phase == upRelay {
				// timeout_client applies to the body again once the
				// response is being relayed.
				s.dl.ArmRead(s.c, now, s.set.TimeoutClient)
			}
		}
		s.up = u
	}
	w := netio.GetWriter(uc.c)
	s.writeRequestHead(w)
	u.begin(w, uc.c, &uc.dl, s.backendTimeoutServer(uc))
	s.dl.SetRead(s.c, time.Time{}) // timeout_client waits for the response
	s.uploading = true
	go s.runUpload(u)
}

// runUpload is the session's upload goroutine: it streams the body from
// the client buffer, flushing whenever the client buffer runs dry.
func (s *session) runUpload(u *upload) {
	var n int64
	var err error
	if s.req.chunked {
		n, err = copyChunked(u.w, s.br, u.flush, s.req.maxHdr)
	} else {
		n, err = copyBuffered(u.w, s.br, s.req.contentLength, u.flush)
	}
	client := false
	if err == nil {
		u.read.Store(true)
		err = u.flush()
	} else if isReadSideErr(err) {
		err, client = wrapClient(err), true
	}
	u.report(n, err, client)
}

// awaitResponse is upload.await for the session's request: once the
// response starts, timeout_client applies to the rest of the body (the
// upload arms it anew at its next write).
func (s *session) awaitResponse(uc *upConn) error {
	return s.up.await(uc, func() {
		if tc := s.set.TimeoutClient; tc > 0 {
			s.c.SetReadDeadline(time.Now().Add(tc))
		}
	})
}

// uploadEnded reports whether the upload goroutine has reported (without
// waiting).
func (s *session) uploadEnded() bool { return s.up.ended() }

// endUpload joins the upload's goroutine: when cut, it first makes the
// body's client read and server write fail at once. It counts the body
// bytes sent and returns the upload's error (client side: wrapClient).
// A cut upload leaves the client connection unusable (its body was not
// all read).
func (s *session) endUpload(cut bool) error {
	u := s.up
	if cut {
		s.c.SetReadDeadline(time.Unix(1, 0))
	}
	w := u.w
	n, err := u.join(cut)
	s.uploading = false
	if cut {
		s.dl.ExpireRead(s.c) // what the connection has now
	} else {
		// The read deadline may be the session's (awaitResponse's) or
		// the upload's: the next wait arms its own.
		s.dl.SetRead(s.c, time.Time{})
	}
	netio.PutWriter(w)
	s.x.BodySent(n)
	// A body cut short, or refused by its server, is left unread in the
	// client connection: it closes lingering (lingerClose).
	s.linger = s.linger || cut || err != nil && !errors.Is(err, errClientSide)
	return err
}

// Lingering close: bounds of the drain of a client body left unread.
const (
	lingerTime  = 2 * time.Second
	lingerBytes = 64 << 20
)

// lingerClose ends the sending side of a connection whose client may
// still be sending a body nobody reads, and reads and drops what comes
// for up to lingerTime (lingerBytes), or until the client closes: closed
// at once, the connection would be reset under a client still sending,
// and a client that has not read the answer yet (a 413 for its upload)
// loses it (curl: "send failure", no status, a fresh-user trial saw it
// after a 100 Continue). As web servers' lingering close; HAProxy closes
// at once.
func (s *session) lingerClose() {
	s.linger = false
	cw, ok := s.c.(interface{ CloseWrite() error })
	if !ok || cw.CloseWrite() != nil {
		return
	}
	s.c.SetReadDeadline(time.Now().Add(lingerTime))
	buf := netio.GetBuf()
	defer netio.PutBuf(buf)
	for n := 0; n < lingerBytes; {
		m, err := s.c.Read(buf)
		n += m
		if err != nil {
			return
		}
	}
}

// sendStreaming sends the request head, starts the body's upload and
// waits for the response to start. ferr is the upload's error when it
// ended before the response could be read (client side: wrapClient), or
// the server's close while it went on; err is the response's read error.
// With both nil the response head is there to read, the body perhaps
// still going out (s.uploading) or the error that ended it kept for the
// relay's end (s.upErr: the server may close once it answered).
func (s *session) sendStreaming(uc *upConn) (ferr, err error) {
	s.startUpload(uc)
	return s.awaitFailed(s.awaitResponse(uc))
}

// awaitFailed ends the wait of sendStreaming (or awaitAgain) that ended
// with err: nil when the response starts, its upload joined if it ended
// meanwhile; else the upload's client-side error as ferr, or how the
// server failed.
func (s *session) awaitFailed(err error) (ferr, _ error) {
	switch {
	case err == nil:
		if s.uploadEnded() {
			s.upErr = s.endUpload(false)
		}
		return nil, nil
	case errors.Is(err, errUploadFailed):
		return s.endUpload(false), nil
	}
	// Closed, reset or silent for timeout_server, before answering.
	ended := s.uploadEnded()
	uerr := s.endUpload(!ended)
	switch {
	case netio.IsTimeout(err):
		return nil, err // 504 sH, however the body stood
	case ended && uerr != nil:
		return uerr, nil
	case !ended:
		return err, nil // gone while the body went out: 502 SD
	}
	return nil, err // gone after the whole body: 502 SH
}

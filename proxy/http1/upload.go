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
// it); its server connection is then closed, never pooled, and the
// client connection stays usable when the body ended well.
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

// Upload phases (upload.phase): the session waiting for the response's
// first byte, the session reading the response, the upload's client
// side having failed while the session waited (its wait was woken).
const (
	upAwait int32 = iota
	upRelay
	upClientFailed
)

// upload is the state of a body streamed by its goroutine (runUpload).
type upload struct {
	w     *bufio.Writer // the head and body for the server (its own buffer)
	c     net.Conn      // the server connection
	dl    *netio.Deadlines
	ts    time.Duration // timeout_server
	last  atomic.Int64  // Unix ns of the last write to the server
	phase atomic.Int32
	done  chan struct{} // one value per upload, when n and err are set
	n     int64         // body bytes sent
	err   error         // how the body's copy failed (client side: wrapClient)
}

// startUpload writes the request head for uc into an upload writer of its
// own and starts the goroutine that sends it and streams the body.
func (s *session) startUpload(uc *upConn) {
	u := s.up
	if u == nil {
		u = &upload{done: make(chan struct{}, 1)}
		s.up = u
	}
	u.w = netio.GetWriter(uc.c)
	u.c, u.dl, u.ts = uc.c, &uc.dl, s.backendTimeoutServer(uc)
	u.n, u.err = 0, nil
	u.phase.Store(upAwait)
	s.writeRequestHead(u.w)
	now := time.Now()
	u.last.Store(now.UnixNano())
	s.dl.SetRead(s.c, time.Time{}) // timeout_client waits for the response
	u.dl.ArmWrite(u.c, now, u.ts)
	s.uploading = true
	go s.runUpload(u)
}

// runUpload is the upload's goroutine: it streams the body from the client
// buffer to u.w, flushing whenever the client buffer runs dry, and
// reports on u.done. A failed client side wakes the session's wait for
// the response head (awaitResponse) by expiring the server connection's
// read deadline, unless the session reads the response already.
func (s *session) runUpload(u *upload) {
	flush := func() error {
		now := time.Now()
		if u.phase.Load() == upRelay {
			s.dl.ArmRead(s.c, now, s.set.TimeoutClient)
		}
		u.dl.ArmWrite(u.c, now, u.ts)
		err := u.w.Flush()
		u.last.Store(time.Now().UnixNano())
		return err
	}
	var n int64
	var err error
	if s.req.chunked {
		n, err = copyChunked(u.w, s.br, flush, s.req.maxHdr)
	} else {
		n, err = copyBuffered(u.w, s.br, s.req.contentLength, flush)
	}
	if err == nil {
		err = flush()
	} else if isReadSideErr(err) {
		err = wrapClient(err)
		if u.phase.CompareAndSwap(upAwait, upClientFailed) {
			u.c.SetReadDeadline(time.Unix(1, 0))
		}
	}
	u.n, u.err = n, err
	u.done <- struct{}{}
}

// awaitResponse waits for the first byte of uc's response while the body
// goes out. The wait ends timeout_server after the last write to the
// server (HAProxy refreshes the server's read timeout on its write
// activity unless independent-streams), or when the upload's client side
// fails (errUploadFailed). It returns nil when the response starts, the
// read's error otherwise.
func (s *session) awaitResponse(uc *upConn) error {
	u := s.up
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
				// timeout_client applies to the rest of the body (the
				// upload arms it anew at its next write).
				if tc := s.set.TimeoutClient; tc > 0 {
					s.c.SetReadDeadline(time.Now().Add(tc))
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

// errUploadFailed: the upload's client side failed while the response was
// awaited (its error is the upload's).
var errUploadFailed = errors.New("upload failed on the client side")

// uploadEnded reports whether the upload goroutine has reported (without
// waiting).
func (s *session) uploadEnded() bool {
	return len(s.up.done) > 0
}

// endUpload joins the upload's goroutine: when cut, it first makes the
// body's client read and server write fail at once. It counts the body
// bytes sent and returns the upload's error (client side: wrapClient).
// A cut upload leaves the client connection unusable (its body was not
// all read).
func (s *session) endUpload(cut bool) error {
	u := s.up
	if cut {
		s.c.SetReadDeadline(time.Unix(1, 0))
		u.c.SetWriteDeadline(time.Unix(1, 0))
	}
	<-u.done
	s.uploading = false
	if cut {
		s.dl.ExpireRead(s.c) // what the connection has now
		u.dl.ForgetWrite()
	} else {
		// The read deadline may be the session's (awaitResponse's) or
		// the upload's: the next wait arms its own.
		s.dl.SetRead(s.c, time.Time{})
	}
	netio.PutWriter(u.w)
	u.w, u.c, u.dl = nil, nil, nil
	s.x.BodySent(u.n)
	return u.err
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
	err = s.awaitResponse(uc)
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

package proxy

// Cookie persistence, HAProxy's `cookie` keyword: a cookie names the
// server a client sticks to (each server's `cookie` value).
//
//   - insert: fulcrum sets NAME=VALUE on responses to clients that did not
//     come with a valid cookie for the server that answered; a cookie the
//     server sets itself with NAME is removed. With maxidle/maxlife the
//     value carries its dates ("s1|<last>|<first>", HAProxy's 5-character
//     base64 of the time / 4 s), and an expired cookie is ignored.
//   - rewrite: the server sets NAME; fulcrum rewrites its value to the
//     server's cookie value.
//   - prefix: the server's own cookie NAME gets the server's value and "~"
//     in front in responses, taken off again in requests.
//   - "" (passive): the cookie is only read.
//
// indirect: in insert mode the cookie is taken out of the requests sent to
// the server; a server-set NAME is removed when the client came with a
// valid one. nocache adds "Cache-control: private" where a cookie is set.
// A cookie naming a server that is DOWN or in MAINT is ignored: the
// algorithm picks, and insert mode sets a new cookie.

import (
	"bytes"
	"time"
)

// cookiePersist is a backend's compiled cookie settings.
type cookiePersist struct {
	name    []byte
	mode    string
	ind     bool
	nocache bool
	attrs   string // "; path=/" and the HttpOnly and Secure attributes
	maxIdle int64  // seconds, 0 = no limit
	maxLife int64
	be      *Backend // whose servers' values (serverSet.cookies) a cookie names
}

// cookieState is a request's cookie persistence state.
type cookieState struct {
	cp     *cookiePersist
	direct bool    // the request went to the server its valid cookie named
	served *Server // the server that answers (set by forward)
	last   int64   // the cookie's last date (s), 0 = none
	first  int64   // the cookie's first date (s), 0 = none

	// reqStatus and respStatus are the cookie characters of HAProxy's
	// termination state (log.go): on the request V valid, I invalid, D
	// server down, E expired, O dated in the future; on the response I
	// inserted, U updated, P provided by the server, R rewritten, D
	// deleted. 0 means N (none).
	reqStatus, respStatus byte
}

func newCookiePersist(be *Backend) *cookiePersist {
	c := be.Conf.Cookie
	cp := &cookiePersist{name: []byte(c.Name), mode: c.Mode, ind: c.Indirect, nocache: c.NoCache,
		attrs: "; path=/", maxIdle: int64(c.MaxIdle / time.Second), maxLife: int64(c.MaxLife / time.Second),
		be: be}
	if c.HTTPOnly {
		cp.attrs += "; HttpOnly"
	}
	if c.Secure {
		cp.attrs += "; Secure"
	}
	return cp
}

var hdrCookie = []byte("Cookie")

// cookieRequest finds the persistence cookie in the request, takes it out
// or strips its prefix as the mode says, and returns the server it names
// when persistence may use it.
func (x *Stream) cookieRequest(cp *cookiePersist, be *Backend) *Server {
	x.ck.cp = cp
	now := time.Now().Unix()
	hs := x.req.Headers
	for i := range hs.NumHeaders() {
		name, v := hs.HeaderAt(i)
		if !bytes.EqualFold(name, hdrCookie) {
			continue
		}
		start, end, value := cookieFind(v, cp.name)
		if start < 0 {
			continue
		}
		var srvVal []byte
		switch cp.mode {
		case "prefix":
			sv, rest, ok := bytes.Cut(value, []byte("~"))
			if !ok {
				continue
			}
			srvVal = sv
			// The server gets its own cookie back, without the prefix.
			nv := make([]byte, 0, len(v))
			nv = append(append(append(append(nv, v[:start]...), cp.name...), '='), rest...)
			nv = append(nv, v[end:]...)
			x.edits.Replace(i, name, nv)
		default:
			srvVal = value
			if cp.mode == "insert" {
				sv, dates, _ := bytes.Cut(value, []byte("|"))
				srvVal = sv
				last, first, _ := bytes.Cut(dates, []byte("|"))
				x.ck.last, x.ck.first = b64tos30(last)<<2, b64tos30(first)<<2
				if x.ck.last < 0 {
					x.ck.last = 0
				}
				if x.ck.first < 0 {
					x.ck.first = 0
				}
			}
			if cp.mode == "insert" && cp.ind {
				x.edits.Replace(i, name, cookieRemove(v, start, end))
			}
		}
		if cp.mode == "insert" && x.ck.expired(now) {
			x.ck.reqStatus = 'E'
			if (x.ck.last > 0 && x.ck.last-now > 86400) || (x.ck.first > 0 && x.ck.first-now > 86400) {
				x.ck.reqStatus = 'O'
			}
			return nil
		}
		srv := cp.be.set.Load().cookies[string(srvVal)]
		if srv != nil && persistent(srv) {
			x.ck.direct = true
			x.ck.reqStatus = 'V'
			return srv
		}
		x.ck.reqStatus = 'I'
		if srv != nil {
			x.ck.reqStatus = 'D'
		}
		return nil
	}
	return nil
}

// expired reports whether the request's cookie dates are past maxidle or
// maxlife, or more than a day in the future (as HAProxy).
func (ck *cookieState) expired(now int64) bool {
	cp := ck.cp
	if cp.maxIdle > 0 && ck.last > 0 && (now-ck.last >= cp.maxIdle || ck.last-now > 86400) {
		return true
	}
	if cp.maxLife > 0 && ck.first > 0 && (now-ck.first >= cp.maxLife || ck.first-now > 86400) {
		return true
	}
	return false
}

// cookieFind finds cookie name in a Cookie header value: the bounds of
// "name=value" (start, end) and the value; start is -1 when absent.
func cookieFind(v, name []byte) (start, end int, value []byte) {
	for i := 0; i < len(v); {
		j := bytes.IndexByte(v[i:], ';')
		e := len(v)
		if j >= 0 {
			e = i + j
		}
		c := v[i:e]
		off := 0
		for off < len(c) && (c[off] == ' ' || c[off] == '\t') {
			off++
		}
		n, val, ok := bytes.Cut(c[off:], []byte("="))
		if ok && bytes.Equal(bytes.TrimSpace(n), name) {
			return i + off, e, bytes.TrimSpace(val)
		}
		i = e + 1
	}
	return -1, -1, nil
}

// cookieRemove returns v without the cookie at [start, end) and its
// separator.
func cookieRemove(v []byte, start, end int) []byte {
	out := make([]byte, 0, len(v))
	out = append(out, bytes.TrimRight(v[:start], "; \t")...)
	rest := bytes.TrimLeft(v[end:], "; \t")
	if len(out) > 0 && len(rest) > 0 {
		out = append(out, "; "...)
	}
	return append(out, rest...)
}

var hdrSetCookie = []byte("Set-Cookie")

// cookieResponseHeader handles one response header line for cookie
// persistence: it writes the line (possibly rewritten) itself and returns
// true, or returns false to let the caller write it as is.
func (x *Stream) cookieResponseHeader(w interface {
	Write([]byte) (int, error)
	WriteString(string) (int, error)
}, name, value []byte) bool {
	cp, srv := x.ck.cp, x.ck.served
	if cp == nil || srv == nil || !bytes.EqualFold(name, hdrSetCookie) {
		return false
	}
	n, rest, ok := bytes.Cut(value, []byte("="))
	if !ok || !bytes.Equal(bytes.TrimSpace(n), cp.name) {
		return false
	}
	switch cp.mode {
	case "insert":
		x.ck.respStatus = 'D'
		return true // removed: fulcrum sets its own
	case "rewrite", "prefix":
		if cp.ind && x.ck.direct {
			x.ck.respStatus = 'D'
			return true
		}
		if srv.Conf.Cookie == "" {
			x.ck.respStatus = 'P'
			return false
		}
		x.ck.respStatus = 'R'
		w.Write(name)
		w.WriteString(": ")
		w.Write(cp.name)
		w.WriteString("=")
		w.WriteString(srv.Conf.Cookie)
		if cp.mode == "prefix" {
			w.WriteString("~")
			w.Write(rest)
		} else if i := bytes.IndexByte(rest, ';'); i >= 0 {
			w.Write(rest[i:])
		}
		w.WriteString("\r\n")
		if cp.nocache {
			w.WriteString("Cache-control: private\r\n")
		}
		return true
	}
	x.ck.respStatus = 'P'
	return false
}

// cookieInsert writes the Set-Cookie line of insert mode when the client
// did not come with a valid cookie for the server that answered, or the
// cookie's dates need a refresh.
func (x *Stream) cookieInsert(w interface {
	Write([]byte) (int, error)
	WriteString(string) (int, error)
}) {
	cp, srv := x.ck.cp, x.ck.served
	if cp == nil || srv == nil || cp.mode != "insert" || srv.Conf.Cookie == "" {
		return
	}
	now := time.Now().Unix()
	direct := x.ck.direct && x.ck.served.Conf.Cookie != "" && cp.be.set.Load().cookies[srv.Conf.Cookie] == srv
	refresh := (cp.maxIdle > 0 && x.ck.last < now) || (cp.maxLife > 0 && x.ck.first == 0)
	if direct && !refresh {
		return
	}
	x.ck.respStatus = 'I'
	if direct {
		x.ck.respStatus = 'U'
	}
	w.WriteString("Set-Cookie: ")
	w.Write(cp.name)
	w.WriteString("=")
	w.WriteString(srv.Conf.Cookie)
	if cp.maxIdle > 0 || cp.maxLife > 0 {
		var b [5]byte
		w.WriteString("|")
		w.Write(s30tob64((now+3)>>2, b[:]))
		if cp.maxLife > 0 {
			first := (now + 3) >> 2
			if direct && x.ck.first > 0 {
				first = x.ck.first >> 2
			}
			w.WriteString("|")
			w.Write(s30tob64(first, b[:]))
		}
	}
	w.WriteString(cp.attrs)
	w.WriteString("\r\n")
	if cp.nocache {
		w.WriteString("Cache-control: private\r\n")
	}
}

const base64tab = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"

// s30tob64 encodes the low 30 bits of in as 5 base64 characters, as
// HAProxy's s30tob64.
func s30tob64(in int64, out []byte) []byte {
	for i := range 5 {
		out[i] = base64tab[(in>>24)&0x3f]
		in <<= 6
	}
	return out[:5]
}

// b64tos30 decodes s30tob64's output; -1 when b is not 5 valid characters.
func b64tos30(b []byte) int64 {
	if len(b) != 5 {
		return -1
	}
	var v int64
	for _, c := range b {
		i := bytes.IndexByte([]byte(base64tab), c)
		if i < 0 {
			return -1
		}
		v = v<<6 | int64(i)
	}
	return v
}

package proxy

// Captured protocol errors, HAProxy's `show errors`: the last invalid
// request of each frontend and the last invalid response of each backend,
// with the date, the source, the bytes as received (the head and what
// followed it in the buffer) and the position of the first offending byte.
//
// The HTTP/1 engine hands the core the messages it refuses, with the
// position of the offending byte it found (http1/errpos.go), through
// Stream.BadMessage.

import (
	"net/netip"
	"sort"
	"sync"
	"time"

	"github.com/fulcrum-proxy/fulcrum/proxy/http1"
)

// ErrorEvent is one captured invalid message.
type ErrorEvent struct {
	When     time.Time
	Response bool // an invalid response from a server (else a request from a client)
	// Proxy is where the event is kept: the frontend for a request, the
	// backend for a response; Other is the other side ("" and -1 when
	// none), Server the server of a response ("" and -1 for a request).
	Proxy, Other, Server       string
	ProxyID, OtherID, ServerID int
	Event                      int64 // the process's error counter when captured
	Src                        netip.AddrPort
	// Pos is the offset of the first invalid byte in Buf; Reason says
	// what was wrong there.
	Pos    int
	Reason string
	Buf    []byte
	// BufSize is the size of the buffer the message was read into.
	BufSize int
}

// errorStore keeps the last events; guarded by mu (the error path only).
type errorStore struct {
	mu    sync.Mutex
	total int64
	req   map[string]*ErrorEvent // by frontend name
	resp  map[string]*ErrorEvent // by backend name
}

// capture stores ev as the last event of its proxy.
func (es *errorStore) capture(ev *ErrorEvent) {
	es.mu.Lock()
	defer es.mu.Unlock()
	ev.Event = es.total
	es.total++
	if ev.Response {
		if es.resp == nil {
			es.resp = map[string]*ErrorEvent{}
		}
		es.resp[ev.Proxy] = ev
		return
	}
	if es.req == nil {
		es.req = map[string]*ErrorEvent{}
	}
	es.req[ev.Proxy] = ev
}

// Errors returns the number of invalid messages seen since the start and
// the last one of each frontend (requests) and backend (responses),
// ordered by proxy id, a request before a response.
func (p *Proxy) Errors() (total int64, events []ErrorEvent) {
	es := &p.obs.errs
	es.mu.Lock()
	defer es.mu.Unlock()
	for _, ev := range es.req {
		events = append(events, *ev)
	}
	for _, ev := range es.resp {
		events = append(events, *ev)
	}
	sort.Slice(events, func(i, j int) bool {
		if events[i].ProxyID != events[j].ProxyID {
			return events[i].ProxyID < events[j].ProxyID
		}
		return !events[i].Response && events[j].Response
	})
	return es.total, events
}

// BadMessage keeps a message the engine refused (http1.Stream): a
// client's request, kept as its frontend's last invalid request, or a
// server's response, kept as its backend's last invalid response.
func (x *Stream) BadMessage(resp bool, buf []byte, pos int, reason string) {
	ev := &ErrorEvent{When: time.Now(), Response: resp, Src: x.cc.src, Pos: pos, Reason: reason, Buf: buf,
		BufSize: http1.MaxHeadBytes, OtherID: -1, ServerID: -1}
	switch {
	case !resp:
		ev.Proxy, ev.ProxyID = x.fe.Name, x.fe.ID
		if x.be != nil {
			ev.Other, ev.OtherID = x.be.Name, x.be.ID
		}
	case x.be == nil || x.srv == nil:
		return // a response needs its backend and server
	default:
		ev.Proxy, ev.ProxyID = x.be.Name, x.be.ID
		ev.Other, ev.OtherID = x.fe.Name, x.fe.ID
		ev.Server, ev.ServerID = x.srv.Name, x.srv.ID
	}
	x.fe.p.obs.errs.capture(ev)
}

package proxy

// Live administration beyond weights and states (backend.go): the small
// methods the Runtime API (runtime/) uses for `set server addr`, `show
// servers conn` and `set maxconn`. Each is safe for concurrent use with the
// request path.

// SetAddr changes the address (host:port) that new connections to s use,
// and returns the previous one. Idle pooled connections to s are closed so
// that the next request connects to the new address; connections in use
// finish where they are.
func (b *Backend) SetAddr(s *Server, addr string) (old string) {
	b.mu.Lock() // serialises with the other changes of the backend
	defer b.mu.Unlock()
	return s.setAddrLocked(addr) // resolution.go
}

// IdleConns returns how many idle server connections s's pool holds:
// safe ones (that have served more than one request, reusable by any
// request under every http_reuse policy) and the others.
func (s *Server) IdleConns() (safe, unsafe int) {
	return s.up.Pool.Idle()
}

// H2Conns returns the HTTP/2 connections of a `proto = "h2"` server:
// with a stream in flight or reserved, without, and the most held at
// once; ok is false for any other server.
func (s *Server) H2Conns() (busy, idle, peak int, ok bool) {
	if s.up.H2 == nil || s.up.ByALPN {
		return 0, 0, 0, false
	}
	busy, idle, peak = s.up.H2.Usage()
	return busy, idle, peak, true
}

// PoolMax returns the most idle connections s's pool keeps (pool_max_conn),
// -1 = no limit.
func (s *Server) PoolMax() int { return s.up.Pool.Max() }

// MaxConn returns the frontend's current maxconn, 0 = unlimited.
func (fe *Frontend) MaxConn() int { return int(fe.slots.max.Load()) }

// SetMaxConn changes the frontend's maxconn (0 = unlimited) and returns the
// previous value. Lowering it cuts no connection: new ones wait in the
// accept backlog until the count falls below the new limit.
func (fe *Frontend) SetMaxConn(n int) (old int) { return fe.slots.setMax(n) }

// MaxConn returns the process's current maxconn, 0 = unlimited.
func (p *Proxy) MaxConn() int { return int(p.globalSlots.max.Load()) }

// HardMaxConn returns the ceiling of SetMaxConn: the configured global
// maxconn (HAProxy's Hard_maxconn), 0 = none.
func (p *Proxy) HardMaxConn() int { return p.Conf.Global.MaxConn }

// SetMaxConn changes the process's maxconn (0 = unlimited) and returns the
// previous value. The caller keeps it within HardMaxConn.
func (p *Proxy) SetMaxConn(n int) (old int) { return p.globalSlots.setMax(n) }

// CurrConns returns the client connections open on every frontend.
func (p *Proxy) CurrConns() int {
	n := int64(0)
	for _, fe := range p.Frontends {
		n += fe.Counters.Scur.Load()
	}
	return int(n)
}

// CloseIdle closes s's idle pooled connections. The Runtime API calls it
// when s enters maintenance: a server taken down for a deploy would leave
// them dead in the pool. Its HTTP/2 connections leave the pool too: those
// without a stream close at once, the others are sent GOAWAY and close
// when their streams end (none is cut).
func (s *Server) CloseIdle() {
	s.up.Pool.CloseAll()
	if s.up.H2 != nil {
		s.up.H2.CloseIdle()
	}
}

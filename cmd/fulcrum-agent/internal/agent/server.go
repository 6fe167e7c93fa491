package agent

import (
	"context"
	"errors"
	"io"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/rs/zerolog"
)

// maxRequest is how much of what the balancer sends (agent-send) is read
// for the debug log; the rest is discarded unread up to the timeout.
const maxRequest = 512

// Server answers agent checks. Each connection gets one reply line, then
// the server half-closes, discards whatever the balancer sent (without
// interpreting it) until the balancer closes or the timeout expires, and
// closes.
type Server struct {
	cfg     *Config
	source  Source
	control Control
	allow   []netip.Prefix
	log     zerolog.Logger
	slots   chan struct{}

	mu   sync.Mutex
	last string // state of the previous reply, to log changes once
}

// NewServer returns a server for cfg (already validated) reading the load
// from src.
func NewServer(cfg *Config, src Source, log zerolog.Logger) (*Server, error) {
	allow, err := ParseAllow(cfg.Allow)
	if err != nil {
		return nil, err
	}
	return &Server{
		cfg:     cfg,
		source:  src,
		control: Control{Path: cfg.StateFile},
		allow:   allow,
		log:     log,
		slots:   make(chan struct{}, cfg.MaxConns),
	}, nil
}

// Reply computes the reply the agent gives now. It is called once per
// connection, and by --once.
func (s *Server) Reply() Reply {
	ov, err := s.control.Get()
	if err != nil {
		s.log.Warn().Err(err).Msg("ignoring the state file, answering as auto")
	}
	rep := Decide(s.cfg, s.source.Reading(), ov)
	s.mu.Lock()
	changed := rep.State != s.last
	s.last = rep.State
	s.mu.Unlock()
	if changed {
		s.log.Info().Str("reply", rep.String()).Str("override", string(ov)).Msg("state changed")
	}
	return rep
}

// Serve accepts connections on ln until ctx is done, then closes ln and
// waits for the connections in progress (each bounded by cfg.Timeout). It
// returns nil after ctx is done, or the accept error that stopped it.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return err
		}
		if !s.allowed(c.RemoteAddr()) {
			s.log.Warn().Str("remote", c.RemoteAddr().String()).Msg("source not in allow list, closed")
			c.Close()
			continue
		}
		select {
		case s.slots <- struct{}{}:
		default:
			s.log.Warn().Str("remote", c.RemoteAddr().String()).Int("max_conns", s.cfg.MaxConns).Msg("too many connections, closed")
			c.Close()
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-s.slots }()
			s.handle(c)
		}()
	}
}

// allowed reports whether addr may be answered. An empty allow list allows
// every source.
func (s *Server) allowed(addr net.Addr) bool {
	if len(s.allow) == 0 {
		return true
	}
	ta, ok := addr.(*net.TCPAddr)
	if !ok {
		return false
	}
	ip, ok := netip.AddrFromSlice(ta.IP)
	if !ok {
		return false
	}
	ip = ip.Unmap()
	for _, p := range s.allow {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// handle serves one allowed connection and closes it.
//
// The reply goes first: HAProxy sends nothing unless agent-send is set, so
// waiting for a request would stall it. Closing with unread bytes in the
// receive buffer makes the kernel send a reset that can destroy the reply
// in flight, so the request is read (and only logged) after the reply and
// the half-close.
func (s *Server) handle(c net.Conn) {
	defer c.Close()
	log := s.log.With().Str("remote", c.RemoteAddr().String()).Logger()
	c.SetDeadline(time.Now().Add(s.cfg.Timeout.D()))
	line := s.Reply().String()
	if _, err := io.WriteString(c, line+"\n"); err != nil {
		log.Debug().Err(err).Msg("write reply")
		return
	}
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	}
	buf := make([]byte, maxRequest)
	n, _ := io.ReadFull(c, buf)
	io.Copy(io.Discard, c)
	log.Debug().Str("reply", line).Str("received", string(buf[:n])).Msg("agent check")
}

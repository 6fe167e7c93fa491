package tlsx

// A bind's TLS at run time: the tls.Config that picks, per handshake, the
// crt-list line serving the client's server name (sni.go), from a table
// rebuilt whenever the Store changes one of its certificates or lists.

import (
	"context"
	"crypto/tls"
	"net"
	"slices"
	"sync/atomic"
)

// Bind is the TLS side of one listener. Handshakes read its table with
// one atomic load; the Store replaces the table under its lock.
type Bind struct {
	store *Store
	cfg   *BindConfig
	base  *tls.Config // the bind's settings; per-line configs are clones
	table atomic.Pointer[sniTable]
	// noCert serves a handshake strict-sni refuses: a config without
	// certificates, which crypto/tls refuses with the unrecognized_name
	// alert HAProxy sends (an error from GetConfigForClient would be
	// internal_error).
	noCert *tls.Config
}

// Config returns the bind's configuration.
func (b *Bind) Config() *BindConfig { return b.cfg }

// Server returns the server side of a TLS connection over c. The handshake
// happens at the first read or write, or when the caller runs it
// (HandshakeContext), in the connection's goroutine.
func (b *Bind) Server(c net.Conn) *tls.Conn { return tls.Server(c, b.base) }

// configFor is the base config's GetConfigForClient: the config of the
// line serving hello. A handshake run with WithServedCert learns the
// certificate chosen.
func (b *Bind) configFor(hello *tls.ClientHelloInfo) (*tls.Config, error) {
	ctx := b.table.Load().lookup(hello)
	if ctx == nil {
		return b.noCert, nil
	}
	if p, ok := hello.Context().Value(servedKey{}).(**Cert); ok {
		*p = ctx.cert
	}
	if ctx.bare != nil && len(hello.SupportedProtos) > 0 && !offers(ctx.conf.NextProtos, hello.SupportedProtos) {
		// No protocol in common: the handshake goes on without ALPN
		// (HTTP/1.1), as HAProxy 2.6's (measured: "-alpn foo" got no
		// ALPN and a 200); Go's would fail it (no_application_protocol).
		return ctx.bare, nil
	}
	return ctx.conf, nil
}

// offers reports whether one of the client's protocols is the server's.
func offers(server, client []string) bool {
	for _, c := range client {
		if slices.Contains(server, c) {
			return true
		}
	}
	return false
}

// servedKey is the context key of WithServedCert.
type servedKey struct{}

// WithServedCert returns a context for tls.Conn.HandshakeContext under
// which the bind records into *c the certificate it serves the handshake
// (HAProxy's PROXY v2 cert-sig and cert-key TLVs describe it).
func WithServedCert(ctx context.Context, c **Cert) context.Context {
	return context.WithValue(ctx, servedKey{}, c)
}

// build makes the bind's table from the store's current certificates and
// lists, and returns how many lines name each certificate (the instances
// a commit rebuilds). The store's lock is held.
func (b *Bind) build() map[string]int {
	t := &sniTable{exact: map[string][]*sniCtx{}, wild: map[string][]*sniCtx{}, strict: b.cfg.StrictSNI}
	uses := map[string]int{}
	line := func(name string, e *Entry) {
		var opts *Settings
		var filters []string
		if e != nil {
			opts, filters = e.Opts, e.Filters
		}
		c := b.store.certs[name]
		if c == nil || c.Empty() {
			return
		}
		uses[name]++
		s := b.cfg.Settings.Over(opts)
		conf := b.base.Clone()
		conf.GetConfigForClient = nil
		s.apply(conf)
		b.http1(conf)
		conf.Certificates = []tls.Certificate{*c.TLS}
		ctx := &sniCtx{cert: c, conf: conf, kt: c.KeyType(), entry: e}
		if len(conf.NextProtos) > 0 {
			ctx.bare = conf.Clone()
			ctx.bare.NextProtos = nil
		}
		if t.def == nil {
			t.def = ctx
		}
		names := filters
		if len(names) == 0 {
			names = c.Names()
		}
		t.add(ctx, names)
	}
	for _, src := range b.cfg.Sources {
		if src.Cert != "" {
			line(src.Cert, nil)
			continue
		}
		if l := b.store.lists[src.List]; l != nil {
			for _, e := range l.Entries {
				line(e.Cert, e)
			}
		}
	}
	b.table.Store(t)
	return uses
}

// http1 drops "h2" from c's ALPN protocols when the bind speaks HTTP/1.1.
func (b *Bind) http1(c *tls.Config) {
	if b.cfg.HTTP1Only && slices.Contains(c.NextProtos, "h2") {
		c.NextProtos = slices.DeleteFunc(slices.Clone(c.NextProtos), func(p string) bool { return p == "h2" })
	}
}

// DefaultCert returns the name of the certificate the bind serves when no
// name matches ("" when it has none).
func (b *Bind) DefaultCert() string {
	if d := b.table.Load().def; d != nil {
		return d.cert.Name
	}
	return ""
}

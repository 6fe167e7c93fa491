package conf

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
)

// defaultModel returns sp, a [backend.default_server] that had its
// setDefaults, as the server model a [[backend.server]] starts from.
func (sp *serverParams) defaultModel() *Server {
	if sp == nil {
		sp = &serverParams{}
		sp.setDefaults()
	}
	return &Server{
		Weight: *sp.Weight, MaxConn: *sp.MaxConn, MaxQueue: *sp.MaxQueue, MinConn: *sp.MinConn,
		Backup: *sp.Backup, Disabled: *sp.Disabled, Slowstart: sp.Slowstart.Std(),
		Check: *sp.Check, Agent: sp.Agent.model(), Observe: *sp.Observe,
		ErrorLimit: *sp.ErrorLimit, OnError: *sp.OnError,
		Inter: optDuration(sp.Inter), FastInter: optDuration(sp.FastInter), DownInter: optDuration(sp.DownInter),
		Rise: optInt(sp.Rise), Fall: optInt(sp.Fall),
		PoolMaxConn: *sp.PoolMaxConn, PoolLowConn: *sp.PoolLowConn, PoolPurgeDelay: sp.PoolPurgeDelay.Std(),
		// The TLS keys as written (nothing loaded): TLS is set even
		// without ssl, so that ServerTOMLKeys sees what a server
		// inherits once it sets ssl.
		SSL: *sp.SSL, CheckSSL: *sp.SSL || *sp.CheckSSL,
		TLS: &ServerTLS{Verify: *sp.Verify == "required", CAFile: strings.TrimPrefix(*sp.CAFile, "@system-ca"),
			VerifyHost: *sp.VerifyHost, SNIText: *sp.SNI, ALPN: splitALPN(*sp.ALPN), CrtFile: *sp.Crt},
		SendProxy: sp.sendProxy(), ProxyV2Options: sp.ProxyV2Options,
		CheckSendProxy: *sp.CheckSendProxy || *sp.SendProxy || *sp.SendProxyV2,
	}
}

// splitALPN is alpn's list of protocols, nil for "".
func splitALPN(v string) []string {
	if v == "" {
		return nil
	}
	return strings.Split(v, ",")
}

// BuiltinDefaultServer is the server a [[backend.server]] would be with
// only its name and address, in a backend without default_server.
func BuiltinDefaultServer() *Server { return (*serverParams)(nil).defaultModel() }

// TOMLKey is one key of a [[backend.server]] table, as WriteServerTOML
// writes it.
type TOMLKey struct {
	Key, Value string
}

// ServerTOMLKeys returns the keys of a [[backend.server]] table for s that
// a file needs so that the server it defines is s, given base, what the
// backend's default_server gives a server that does not set a key: name
// and address always, then every key whose value differs from base's, in
// the order of the reference (DESIGN.md's example).
func ServerTOMLKeys(s, base *Server) []TOMLKey {
	var keys []TOMLKey
	add := func(k, v string) { keys = append(keys, TOMLKey{k, v}) }
	num := strconv.Itoa
	add("name", TOMLString(s.Name))
	add("address", TOMLString(s.Address))
	ints := []struct {
		k    string
		v, b int
	}{{"weight", s.Weight, base.Weight}, {"maxconn", s.MaxConn, base.MaxConn}, {"maxqueue", s.MaxQueue, base.MaxQueue},
		{"minconn", s.MinConn, base.MinConn}}
	for _, c := range ints {
		if c.v != c.b {
			add(c.k, num(c.v))
		}
	}
	bools := []struct {
		k    string
		v, b bool
	}{{"check", s.Check, base.Check}, {"backup", s.Backup, base.Backup}}
	for _, c := range bools {
		if c.v != c.b {
			add(c.k, strconv.FormatBool(c.v))
		}
	}
	durs := []struct {
		k    string
		v, b time.Duration
	}{{"inter", s.Inter, base.Inter}, {"fastinter", s.FastInter, base.FastInter}, {"downinter", s.DownInter, base.DownInter},
		{"slowstart", s.Slowstart, base.Slowstart}}
	for _, c := range durs {
		if c.v != c.b {
			add(c.k, TOMLString(Duration(c.v).String()))
		}
	}
	for _, c := range []struct {
		k    string
		v, b int
	}{{"rise", s.Rise, base.Rise}, {"fall", s.Fall, base.Fall}} {
		if c.v != c.b {
			add(c.k, num(c.v))
		}
	}
	if s.Cookie != base.Cookie {
		add("cookie", TOMLString(s.Cookie))
	}
	if s.Disabled != base.Disabled {
		add("disabled", strconv.FormatBool(s.Disabled))
	}
	if !agentEqual(s.Agent, base.Agent) {
		if a := s.Agent; a != nil {
			v := "{ port = " + num(a.Port)
			if a.Addr != "" {
				v += ", addr = " + TOMLString(a.Addr)
			}
			v += ", inter = " + TOMLString(Duration(a.Inter).String())
			if a.Send != "" {
				v += ", send = " + TOMLString(a.Send)
			}
			add("agent", v+" }")
		}
	}
	if s.Observe != base.Observe {
		add("observe", TOMLString(s.Observe))
	}
	if s.ErrorLimit != base.ErrorLimit {
		add("error_limit", num(s.ErrorLimit))
	}
	if s.OnError != base.OnError {
		add("on_error", TOMLString(s.OnError))
	}
	if s.PoolMaxConn != base.PoolMaxConn {
		add("pool_max_conn", num(s.PoolMaxConn))
	}
	if s.PoolLowConn != base.PoolLowConn {
		add("pool_low_conn", num(s.PoolLowConn))
	}
	if s.PoolPurgeDelay != base.PoolPurgeDelay {
		add("pool_purge_delay", TOMLString(Duration(s.PoolPurgeDelay).String()))
	}
	keys = append(keys, tlsTOMLKeys(s, base)...)
	return keys
}

// tlsTOMLKeys returns the TLS and PROXY protocol keys of s's table given
// base (see ServerTOMLKeys). A key is written wherever what base would
// give differs, or cannot be told apart from base's model (check_ssl
// under ssl, check_send_proxy under send_proxy): a key too many loads
// the same server.
func tlsTOMLKeys(s, base *Server) []TOMLKey {
	var keys []TOMLKey
	add := func(k, v string) { keys = append(keys, TOMLKey{k, v}) }
	fb := strconv.FormatBool
	if s.SSL != base.SSL {
		add("ssl", fb(s.SSL))
	}
	if !s.SSL && (s.CheckSSL != base.CheckSSL || base.SSL) {
		add("check_ssl", fb(s.CheckSSL))
	}
	if t := s.TLS; t != nil && s.CheckSSL {
		bt := base.TLS
		if bt == nil {
			bt = &ServerTLS{Verify: true}
		}
		if t.Verify != bt.Verify {
			add("verify", TOMLString(map[bool]string{true: "required", false: "none"}[t.Verify]))
		}
		if t.CAFile != bt.CAFile {
			add("ca_file", TOMLString(t.CAFile))
		}
		if t.SNIText != bt.SNIText {
			add("sni", TOMLString(t.SNIText))
		}
		if t.VerifyHost != bt.VerifyHost {
			add("verifyhost", TOMLString(t.VerifyHost))
		}
		if !slices.Equal(t.ALPN, bt.ALPN) {
			add("alpn", TOMLString(strings.Join(t.ALPN, ",")))
		}
		if t.CrtFile != bt.CrtFile {
			add("crt", TOMLString(t.CrtFile))
		}
	}
	if s.SendProxy != base.SendProxy {
		switch s.SendProxy {
		case 2:
			add("send_proxy_v2", "true")
		case 1:
			add("send_proxy", "true")
			if base.SendProxy == 2 {
				add("send_proxy_v2", "false")
			}
		default:
			add("send_proxy", "false") // base may set both
			if base.SendProxy == 2 {
				add("send_proxy_v2", "false")
			}
		}
	}
	if !slices.Equal(s.ProxyV2Options, base.ProxyV2Options) && (s.SendProxy == 2 || len(base.ProxyV2Options) > 0) {
		opts := make([]string, len(s.ProxyV2Options))
		for i, o := range s.ProxyV2Options {
			opts[i] = TOMLString(o)
		}
		add("proxy_v2_options", "["+strings.Join(opts, ", ")+"]")
	}
	if s.SendProxy == 0 && (s.CheckSendProxy != base.CheckSendProxy || base.SendProxy != 0) {
		add("check_send_proxy", fb(s.CheckSendProxy))
	}
	return keys
}

// agentEqual reports whether two agents (nil: none) are the same.
func agentEqual(a, b *Agent) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// WriteTOMLKeys writes keys as "key = value" lines, with comments (by
// key, "" for none) after their value.
func WriteTOMLKeys(w io.Writer, keys []TOMLKey, comments map[string]string) {
	for _, k := range keys {
		if c := comments[k.Key]; c != "" {
			fmt.Fprintf(w, "%s = %s  # %s\n", k.Key, k.Value, c)
			continue
		}
		fmt.Fprintf(w, "%s = %s\n", k.Key, k.Value)
	}
}

// TOMLString quotes s as a TOML basic string: backslash and double quote
// escaped, control characters as \uXXXX (or their short escapes).
func TOMLString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\t':
			b.WriteString(`\t`)
		case '\r':
			b.WriteString(`\r`)
		default:
			if r < 0x20 || r == 0x7f {
				fmt.Fprintf(&b, `\u%04X`, r)
			} else {
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}

package haproxycfg

// The option tables of bind, server (and default-server) and stats
// socket lines: one row per option HAProxy 2.6 knows, with the number of
// words it takes and how it converts, or why not. An option without which
// the line cannot run as asked (a certificate fulcrum cannot read on a
// bind, a revocation list, generated certificates) is "whole": the line is
// then not converted at all.

import (
	"fmt"
	"strconv"
)

// option is one row of an option table.
type option struct {
	args  int                                  // words after the option's name
	apply func(o *optCtx, args []string) error // nil: not converted
	kind  Kind
	why   string
	whole bool
}

// optCtx is what an option's apply writes to.
type optCtx struct {
	x         *ctx
	t         *table     // the server, default-server or socket table
	ag        *agent     // the server's or default-server's agent settings
	bind      *bindBuild // a bind line's options (bind options only)
	isDefault bool       // default-server
	name      string     // the option being applied
	// noWhole: an option without which a line could not run is only
	// noted (ssl-default-bind-options: it applies to no line here).
	noWhole bool
}

// options applies the options in words to t. It returns false when an
// option means the line cannot be converted (it was then skipped, with
// its note).
func (x *ctx) options(table map[string]option, words []string, t *table) bool {
	return x.applyOptions(table, words, &optCtx{x: x, t: t})
}

// serverOptions applies server or default-server options.
func (x *ctx) serverOptions(t *table, ag *agent, words []string, isDefault bool) bool {
	return x.applyOptions(serverOpts, words, &optCtx{x: x, t: t, ag: ag, isDefault: isDefault})
}

func (x *ctx) applyOptions(table map[string]option, words []string, o *optCtx) bool {
	for i := 0; i < len(words); {
		name := words[i]
		opt, ok := table[name]
		if !ok {
			x.part(Unsupported, fmt.Sprintf("unknown option %q (HAProxy would refuse it)", name))
			i++
			continue
		}
		if i+opt.args >= len(words) {
			x.part(Unsupported, fmt.Sprintf("%q without its value", name))
			return !opt.whole
		}
		args := words[i+1 : i+1+opt.args]
		text := name
		for _, a := range args {
			text += " " + a
		}
		i += 1 + opt.args
		if opt.apply == nil {
			if opt.whole && !o.noWhole {
				x.skip(opt.kind, fmt.Sprintf("%q: %s", text, opt.why))
				return false
			}
			x.part(opt.kind, fmt.Sprintf("%q: %s", text, opt.why))
			continue
		}
		o.name = name
		if err := opt.apply(o, args); err != nil {
			if opt.whole && !o.noWhole {
				x.skip(Unsupported, fmt.Sprintf("%q: %v", text, err))
				return false
			}
			x.part(Unsupported, fmt.Sprintf("%q: %v", text, err))
		}
	}
	return true
}

// setKey returns an apply writing one value into key: an int, a time, a
// word, or true.
func setInt(key string) func(*optCtx, []string) error {
	return func(o *optCtx, a []string) error {
		n, err := atoi(a[0])
		if err != nil {
			return err
		}
		o.t.set(key, n, o.x.ln.num)
		return nil
	}
}

// setSigned is setInt for a value that may be -1 (no limit).
func setSigned(key string) func(*optCtx, []string) error {
	return func(o *optCtx, a []string) error {
		n, err := strconv.Atoi(a[0])
		if err != nil || n < -1 {
			return fmt.Errorf("%q is not a number (-1 for no limit)", a[0])
		}
		o.t.set(key, n, o.x.ln.num)
		return nil
	}
}

func setTime(key string) func(*optCtx, []string) error {
	return func(o *optCtx, a []string) error {
		d, err := haproxyTime(a[0])
		if err != nil {
			return err
		}
		o.t.set(key, d, o.x.ln.num)
		return nil
	}
}

func setWord(key string) func(*optCtx, []string) error {
	return func(o *optCtx, a []string) error {
		o.t.set(key, a[0], o.x.ln.num)
		return nil
	}
}

func setBool(key string, v bool) func(*optCtx, []string) error {
	return func(o *optCtx, _ []string) error {
		o.t.set(key, v, o.x.ln.num)
		return nil
	}
}

// checkSetting records a server's check setting (inter, rise...): fulcrum
// has one per backend, in [backend.check]. A server that asks for another
// value than the first one given is noted.
func checkSetting(key string, isTime bool) func(*optCtx, []string) error {
	return func(o *optCtx, a []string) error {
		var v any
		if isTime {
			d, err := haproxyTime(a[0])
			if err != nil {
				return err
			}
			v = d
		} else {
			n, err := atoi(a[0])
			if err != nil {
				return err
			}
			v = n
		}
		p := o.x.p
		if p.chk == nil {
			p.chk = map[string]chkVal{}
		}
		if prev, ok := p.chk[key]; ok && prev.v != v {
			o.x.part(Unsupported, fmt.Sprintf("%s %v for this server: fulcrum has one %s per backend ([backend.check] %s = %v, from line %d)",
				key, a[0], key, key, value(prev.v), prev.ln.num))
			return nil
		}
		if _, ok := p.chk[key]; !ok {
			p.chk[key] = chkVal{v: v, ln: o.x.ln}
		}
		return nil
	}
}

// The agent settings, as HAProxy spreads them over several options.
func agentOn(on bool) func(*optCtx, []string) error {
	return func(o *optCtx, _ []string) error {
		if on {
			o.ag.on, o.ag.off = true, false
		} else {
			o.ag.on, o.ag.off = false, true
		}
		return nil
	}
}

func agentPort(o *optCtx, a []string) error {
	n, err := strconv.Atoi(a[0])
	if err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("%q is not a port", a[0])
	}
	o.ag.port = n
	return nil
}

func agentInter(o *optCtx, a []string) error {
	d, err := haproxyTime(a[0])
	o.ag.inter = d
	return err
}

func agentAddr(o *optCtx, a []string) error { o.ag.addr = a[0]; return nil }
func agentSend(o *optCtx, a []string) error { o.ag.send = a[0]; return nil }

// serverCookie: a server's cookie value; fulcrum's default_server has none.
func serverCookie(o *optCtx, a []string) error {
	if o.isDefault {
		return fmt.Errorf("a cookie value in default-server")
	}
	o.t.set("cookie", a[0], o.x.ln.num)
	return nil
}

// socketMode: a stats socket's mode, octal ("660" is "0660").
func socketMode(o *optCtx, a []string) error {
	m := a[0]
	if _, err := strconv.ParseUint(m, 8, 32); err != nil {
		return fmt.Errorf("%q is not an octal mode", m)
	}
	if len(m) < 4 {
		m = "0" + m
	}
	o.t.set("mode", m, o.x.ln.num)
	return nil
}

var (
	ignored0 = option{kind: Ignored, why: "no effect in fulcrum"}
	ignored1 = option{args: 1, kind: Ignored, why: "no effect in fulcrum"}
	unsupp0  = option{kind: Unsupported, why: "not converted"}
	unsupp1  = option{args: 1, kind: Unsupported, why: "not converted"}
	// Bind options.
	bindPass0   = option{apply: bindPass}
	bindPass1   = option{args: 1, apply: bindPass}
	bindVersion = option{apply: versionOpt}
	// Server TLS options fulcrum has no key for.
	srvVersion0 = option{apply: serverVersion}
	srvVersion1 = option{args: 1, apply: serverVersion}
)

// Reasons of the TLS options fulcrum does not run.
const (
	whyCiphersSrv = "ciphers to servers: crypto/tls's defaults apply"
	whyCRL        = "certificate revocation lists: a revoked certificate would be accepted"
	why0RTT       = "TLS early data (0-RTT): fulcrum never accepts it"
	whyNPN        = "NPN (replaced by ALPN)"
)

// serverOpts are the options of server and default-server lines.
var serverOpts = map[string]option{
	"weight":         {args: 1, apply: setInt("weight")},
	"maxconn":        {args: 1, apply: setInt("maxconn")},
	"maxqueue":       {args: 1, apply: setInt("maxqueue")},
	"minconn":        {args: 1, apply: setInt("minconn")},
	"check":          {apply: setBool("check", true)},
	"no-check":       {apply: setBool("check", false)},
	"backup":         {apply: setBool("backup", true)},
	"no-backup":      {apply: setBool("backup", false)},
	"disabled":       {apply: setBool("disabled", true)},
	"enabled":        {apply: setBool("disabled", false)},
	"slowstart":      {args: 1, apply: setTime("slowstart")},
	"cookie":         {args: 1, apply: serverCookie},
	"observe":        {args: 1, apply: setWord("observe")},
	"error-limit":    {args: 1, apply: setInt("error_limit")},
	"on-error":       {args: 1, apply: setWord("on_error")},
	"inter":          {args: 1, apply: checkSetting("inter", true)},
	"fastinter":      {args: 1, apply: checkSetting("fastinter", true)},
	"downinter":      {args: 1, apply: checkSetting("downinter", true)},
	"rise":           {args: 1, apply: checkSetting("rise", false)},
	"fall":           {args: 1, apply: checkSetting("fall", false)},
	"agent-check":    {apply: agentOn(true)},
	"no-agent-check": {apply: agentOn(false)},
	"agent-port":     {args: 1, apply: agentPort},
	"agent-inter":    {args: 1, apply: agentInter},
	"agent-addr":     {args: 1, apply: agentAddr},
	"agent-send":     {args: 1, apply: agentSend},
	"port":           {args: 1, kind: Unsupported, why: "a check port of its own: fulcrum checks the server's port (set server B/S check-port changes it at runtime)"},
	"addr":           {args: 1, kind: Unsupported, why: "a check address of its own: fulcrum checks the server's address (set server B/S check-addr changes it at runtime)"},
	"id":             {args: 1, kind: Unsupported, why: "fixed server ids: fulcrum numbers servers in file order"},
	"track":          {args: 1, kind: Unsupported, why: "tracking another server's state"},
	"resolvers":      {args: 1, apply: setWord("resolvers")},
	"resolve-prefer": {args: 1, apply: setWord("resolve_prefer")},
	"resolve-opts":   {args: 1, apply: setWord("resolve_opts")},
	"resolve-net":    {args: 1, kind: Unsupported, why: "preferred networks for resolved addresses"},
	"init-addr":      {args: 1, apply: setWord("init_addr")},
	"ssl":            {apply: setBool("ssl", true)},
	"no-ssl":         {apply: setBool("ssl", false)},
	"check-ssl":      {apply: setBool("check_ssl", true)},
	"no-check-ssl":   {apply: setBool("check_ssl", false)},
	"verify":         {args: 1, apply: setWord("verify")},
	"verifyhost":     {args: 1, apply: setWord("verifyhost")},
	"no-verifyhost":  {apply: func(o *optCtx, _ []string) error { o.t.set("verifyhost", "", o.x.ln.num); return nil }},
	"sni":            {args: 1, apply: setWord("sni")},
	"alpn":           {args: 1, apply: setWord("alpn")},
	"ca-file":        {args: 1, apply: srvPath("ca_file")},
	"crt":            {args: 1, apply: srvPath("crt")},
	"crl-file":       {args: 1, kind: Unsupported, why: whyCRL, whole: true},
	"npn":            {args: 1, kind: Unsupported, why: whyNPN},
	"ciphers":        {args: 1, kind: Unsupported, why: whyCiphersSrv},
	"ciphersuites":   {args: 1, kind: Unsupported, why: whyCiphersSrv},
	"curves":         {args: 1, kind: Unsupported, why: whyCiphersSrv},
	"ssl-min-ver":    srvVersion1,
	"ssl-max-ver":    srvVersion1,
	"no-sslv3":       srvVersion0, "no-tlsv10": srvVersion0, "no-tlsv11": srvVersion0,
	"no-tlsv12": srvVersion0, "no-tlsv13": srvVersion0,
	"force-sslv3": srvVersion0, "force-tlsv10": srvVersion0, "force-tlsv11": srvVersion0,
	"force-tlsv12": srvVersion0, "force-tlsv13": srvVersion0,
	"check-sni":            {args: 1, kind: Unsupported, why: "an SNI for checks: fulcrum's TLS checks send none"},
	"check-alpn":           {args: 1, kind: Unsupported, why: "an ALPN for checks: fulcrum's TLS checks offer the server's alpn"},
	"allow-0rtt":           {kind: Unsupported, why: why0RTT},
	"ssl-reuse":            {kind: Builtin, why: "fulcrum resumes TLS sessions with servers"},
	"no-ssl-reuse":         {kind: Unsupported, why: "fulcrum always resumes TLS sessions with servers"},
	"tls-tickets":          {kind: Builtin, why: "fulcrum resumes TLS sessions with servers"},
	"no-tls-tickets":       {kind: Unsupported, why: "fulcrum always resumes TLS sessions with servers"},
	"no-tfo":               ignored0,
	"log-proto":            ignored1,
	"shard":                ignored1,
	"send-proxy":           {apply: setBool("send_proxy", true)},
	"no-send-proxy":        {apply: setBool("send_proxy", false)},
	"send-proxy-v2":        {apply: setBool("send_proxy_v2", true)},
	"no-send-proxy-v2":     {apply: setBool("send_proxy_v2", false)},
	"send-proxy-v2-ssl":    {apply: proxyV2("ssl")},
	"send-proxy-v2-ssl-cn": {apply: proxyV2("ssl", "cert-cn")},
	"proxy-v2-options":     {args: 1, apply: proxyV2()},
	"check-send-proxy":     {apply: setBool("check_send_proxy", true)},
	"set-proxy-v2-tlv-fmt": {args: 1, kind: Unsupported, why: "custom PROXY v2 TLVs"},
	"proto":                {args: 1, apply: h2Proto("proto")},
	"check-proto":          unsupp1,
	"check-via-socks4":     unsupp0,
	"socks4":               unsupp1,
	"tfo":                  unsupp0,
	"max-reuse":            unsupp1,
	"pool-max-conn":        {args: 1, apply: setSigned("pool_max_conn")},
	"pool-low-conn":        {args: 1, apply: setInt("pool_low_conn")},
	"pool-purge-delay":     {args: 1, apply: setTime("pool_purge_delay")},
	"source":               unsupp1,
	"usesrc":               unsupp1,
	"interface":            unsupp1,
	"namespace":            unsupp1,
	"on-marked-down":       unsupp1,
	"on-marked-up":         unsupp1,
	"redir":                unsupp1,
	"tcp-ut":               unsupp1,
	"ws":                   unsupp1,
	"stick":                unsupp0,
	"non-stick":            unsupp0,
}

// bindOpts are the options of bind lines.
var bindOpts = map[string]option{
	"ssl":            bindPass0,
	"accept-proxy":   bindPass0,
	"crt":            {args: 1, apply: bindCrt, whole: true},
	"crt-list":       {args: 1, apply: bindCrtList, whole: true},
	"ca-file":        {args: 1, apply: bindCAFile, whole: true},
	"verify":         bindPass1,
	"alpn":           bindPass1,
	"ciphers":        bindPass1,
	"ciphersuites":   bindPass1,
	"curves":         bindPass1,
	"no-tls-tickets": bindPass0,
	"strict-sni":     bindPass0,
	"ssl-min-ver":    {args: 1, apply: versionOpt},
	"ssl-max-ver":    {args: 1, apply: versionOpt},
	"no-sslv3":       bindVersion, "no-tlsv10": bindVersion, "no-tlsv11": bindVersion,
	"no-tlsv12": bindVersion, "no-tlsv13": bindVersion,
	"force-sslv3": bindVersion, "force-tlsv10": bindVersion, "force-tlsv11": bindVersion,
	"force-tlsv12": bindVersion, "force-tlsv13": bindVersion,
	"npn":                   {args: 1, kind: Unsupported, why: whyNPN},
	"ecdhe":                 {args: 1, kind: Unsupported, why: "a single ECDHE curve: crypto/tls picks among its curves (curves lists them)"},
	"crl-file":              {args: 1, kind: Unsupported, why: whyCRL, whole: true},
	"ca-verify-file":        {args: 1, kind: Unsupported, why: "CAs that verify without being named to clients", whole: true},
	"ca-ignore-err":         {args: 1, kind: Unsupported, why: "ignoring client certificate errors: fulcrum refuses them as verify says"},
	"crt-ignore-err":        {args: 1, kind: Unsupported, why: "ignoring client certificate errors: fulcrum refuses them as verify says"},
	"allow-0rtt":            {kind: Unsupported, why: why0RTT},
	"prefer-client-ciphers": {kind: Unsupported, why: "the client's cipher preference: crypto/tls orders ciphers itself"},
	"no-ca-names":           {kind: Unsupported, why: "fulcrum names its CAs to clients it asks for a certificate"},
	"tls-ticket-keys":       {args: 1, kind: Unsupported, why: "ticket keys from a file: crypto/tls makes and rotates its own"},
	"generate-certificates": {kind: Unsupported, why: "certificates generated on the fly", whole: true},
	"ca-sign-file":          {args: 1, kind: Unsupported, why: "certificates generated on the fly", whole: true},
	"ca-sign-pass":          {args: 1, kind: Unsupported, why: "certificates generated on the fly"},
	"accept-netscaler-cip":  {args: 1, kind: Unsupported, why: "NetScaler client IP", whole: true},
	"proto":                 {args: 1, apply: bindProto},
	"name":                  ignored1,
	"id":                    {args: 1, kind: Unsupported, why: "fixed listener ids"},
	"process":               ignored1,
	"thread":                ignored1,
	"shards":                ignored1,
	"nice":                  ignored1,
	"backlog":               {args: 1, kind: Unsupported, why: "listen backlogs (the system's somaxconn applies)"},
	"maxconn":               {args: 1, kind: Unsupported, why: "per-bind maxconn: the frontend's maxconn applies"},
	"defer-accept":          unsupp0,
	"tfo":                   unsupp0,
	"transparent":           unsupp0,
	"v4v6":                  unsupp0,
	"v6only":                unsupp0,
	"interface":             unsupp1,
	"mss":                   unsupp1,
	"namespace":             unsupp1,
	"tcp-ut":                unsupp1,
	"level":                 ignored1,
	"severity-output":       ignored1,
	"mode":                  ignored1,
	"user":                  ignored1,
	"group":                 ignored1,
	"uid":                   ignored1,
	"gid":                   ignored1,
	"expose-fd":             ignored1,
}

// socketOpts are the options of `stats socket` lines.
var socketOpts = map[string]option{
	"level":           {args: 1, apply: setWord("level")},
	"mode":            {args: 1, apply: socketMode},
	"user":            {args: 1, apply: setWord("owner")},
	"uid":             {args: 1, apply: setWord("owner")},
	"group":           {args: 1, apply: setWord("group")},
	"gid":             {args: 1, apply: setWord("group")},
	"maxconn":         {args: 1, apply: setInt("maxconn")},
	"expose-fd":       {args: 1, kind: Builtin, why: "fulcrum hands its listeners over to the new configuration at reload"},
	"process":         ignored1,
	"thread":          ignored1,
	"name":            ignored1,
	"severity-output": {args: 1, kind: Unsupported, why: "a default severity output (set severity-output works per session)"},
	"accept-proxy":    {kind: Unsupported, why: "the PROXY protocol on the stats socket"},
	"tfo":             unsupp0,
	"defer-accept":    unsupp0,
	"transparent":     unsupp0,
	"backlog":         unsupp1,
	"ssl":             {kind: Unsupported, why: "TLS on the stats socket", whole: true},
	"crt":             {args: 1, kind: Unsupported, why: "TLS on the stats socket", whole: true},
}

// h2Proto: a server's "proto h2" (HTTP/2 with prior knowledge), the only
// mux fulcrum has besides HTTP/1.1, into key.
func h2Proto(key string) func(o *optCtx, a []string) error {
	return func(o *optCtx, a []string) error {
		if a[0] != "h2" {
			return fmt.Errorf("only h2 is supported, got %q", a[0])
		}
		o.t.set(key, "h2", o.x.ln.num)
		return nil
	}
}

// bindProto: a bind's "proto h2", kept on the bind's line.
func bindProto(o *optCtx, a []string) error {
	if a[0] != "h2" && a[0] != "h1" {
		return fmt.Errorf("only h2 and h1 are supported, got %q", a[0])
	}
	return bindPass(o, a)
}

package haproxycfg

// The conversions of the keyword table's rows (keywords.go).

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/fulcrum-proxy/fulcrum/internal/suggest"
	"github.com/fulcrum-proxy/fulcrum/proxy/http1"
	"github.com/fulcrum-proxy/fulcrum/proxy/stick"
)

// both returns the section's frontend and backend tables that exist (one
// table for [defaults] and [global]).
func (x *ctx) both() []*table {
	var out []*table
	for _, t := range []*table{x.p.fe, x.p.be} {
		if t != nil && (len(out) == 0 || out[0] != t) {
			out = append(out, t)
		}
	}
	return out
}

// convMode: mode http|tcp, on both sides of a listen section.
func convMode(x *ctx) {
	m := x.arg(0)
	if m != "http" && m != "tcp" {
		x.skip(Unsupported, fmt.Sprintf("mode %q", m))
		return
	}
	for _, t := range x.both() {
		x.put(t, "mode", m)
	}
}

// convInt converts a keyword taking one number into key.
func convInt(key string) func(*ctx) {
	return func(x *ctx) {
		n, err := atoi(x.arg(0))
		if err != nil {
			x.skip(Unsupported, err.Error())
			return
		}
		x.put(x.side(x.row.side), key, n)
	}
}

// convRest converts a keyword whose arguments are an expression fulcrum
// reads as HAProxy writes it (balance, hash-type).
func convRest(key string) func(*ctx) {
	return func(x *ctx) {
		if x.rest() == "" {
			x.skip(Unsupported, "no value")
			return
		}
		x.put(x.side(x.row.side), key, x.rest())
	}
}

// convWord converts a keyword taking one word into key.
func convWord(key string) func(*ctx) {
	return func(x *ctx) {
		if x.nargs() != 1 {
			x.skip(Unsupported, "expects one value")
			return
		}
		x.put(x.side(x.row.side), key, x.arg(0))
	}
}

// convTime converts a timeout into key.
func convTime(key string) func(*ctx) {
	return func(x *ctx) {
		d, err := haproxyTime(x.arg(0))
		if err != nil {
			x.skip(Unsupported, err.Error())
			return
		}
		x.put(x.side(x.row.side), key, d)
	}
}

// convFlag converts an option into a boolean key ("no option" is false).
func convFlag(key string) func(*ctx) {
	return func(x *ctx) { x.put(x.side(x.row.side), key, !x.neg) }
}

// convRedispatch: option redispatch [interval].
func convRedispatch(x *ctx) {
	if x.nargs() > 0 && !x.neg {
		x.part(Unsupported, "a redispatch interval: fulcrum redispatches on the last retry")
	}
	x.put(x.side(sideBack), "redispatch", !x.neg)
}

// convAbortOnClose: [no] option abortonclose (HTTP: a queued request
// whose client left is dropped, CQ; mode tcp drops it either way).
func convAbortOnClose(x *ctx) {
	x.put(x.side(sideBack), "abortonclose", !x.neg)
}

// convForwardFor: option forwardfor [except NET] [header NAME] [if-none].
func convForwardFor(x *ctx) {
	if x.nargs() > 0 && !x.neg {
		x.part(Unsupported, fmt.Sprintf("forwardfor options %q: fulcrum always appends X-Forwarded-For", x.rest()))
	}
	x.put(x.side(sideAny), "forwardfor", !x.neg)
}

// convHTTPChk: option httpchk [[METHOD] URI [VERSION]]. HAProxy's default
// method is OPTIONS (fulcrum's GET), so the method is always written.
func convHTTPChk(x *ctx) {
	method, path, version := "OPTIONS", "/", ""
	switch x.nargs() {
	case 0:
	case 1:
		path = x.arg(0)
	case 2:
		method, path = x.arg(0), x.arg(1)
	default:
		method, path, version = x.arg(0), x.arg(1), x.arg(2)
	}
	t := x.p.checkTable()
	x.put(t, "type", "http")
	x.put(t, "method", method)
	x.put(t, "path", path)
	if version == "" {
		return
	}
	// The old way of sending headers: "HTTP/1.1\r\nHost:\ www".
	ver, headers, _ := strings.Cut(version, "\r\n")
	host := ""
	for _, h := range strings.Split(headers, "\r\n") {
		name, v, ok := strings.Cut(h, ":")
		switch {
		case h == "":
		case ok && strings.EqualFold(strings.TrimSpace(name), "host"):
			host = strings.TrimSpace(v)
		default:
			x.part(Unsupported, fmt.Sprintf("check request header %q: fulcrum sends Host only", h))
		}
	}
	if host != "" {
		x.put(t, "host", host)
	} else if ver == "HTTP/1.1" {
		x.part(Differs, "without a Host, fulcrum's HTTP check is sent as HTTP/1.0")
	}
}

// convHTTPCheckExpect: http-check expect status CODES.
func convHTTPCheckExpect(x *ctx) {
	if x.nargs() != 2 || x.arg(0) != "status" {
		x.skip(Unsupported, "only \"http-check expect status CODES\" is converted")
		return
	}
	x.put(x.p.checkTable(), "expect_status", x.arg(1))
}

// convHTTPCheckSend: http-check send [meth M] [uri U] [ver V] [hdr N V]...
func convHTTPCheckSend(x *ctx) {
	t := x.p.checkTable()
	args := x.args()
	for i := 0; i < len(args); i++ {
		next := func() string {
			if i+1 < len(args) {
				i++
				return args[i]
			}
			return ""
		}
		switch args[i] {
		case "meth":
			x.put(t, "method", next())
		case "uri":
			x.put(t, "path", next())
		case "ver":
			if v := next(); v != "HTTP/1.1" && v != "HTTP/1.0" {
				x.part(Unsupported, fmt.Sprintf("check version %q", v))
			}
		case "hdr":
			name, v := next(), next()
			if strings.EqualFold(name, "host") {
				x.put(t, "host", v)
			} else {
				x.part(Unsupported, fmt.Sprintf("check request header %q: fulcrum sends Host only", name))
			}
		default:
			x.part(Unsupported, fmt.Sprintf("%q: only meth, uri, ver and hdr Host are converted", args[i]))
			if args[i] != "comment" && args[i] != "body" && args[i] != "uri-lf" && args[i] != "body-lf" {
				continue
			}
			next()
		}
	}
}

// convTCPCheck: option tcp-check, a TCP connect check.
func convTCPCheck(x *ctx) { x.put(x.p.checkTable(), "type", "tcp") }

// convTCPCheckConnect: tcp-check connect, what a tcp check does anyway.
func convTCPCheckConnect(x *ctx) {
	if x.nargs() > 0 {
		x.skip(Unsupported, "tcp-check connect options: fulcrum connects to the server's address")
		return
	}
	x.skip(Builtin, "a tcp check connects")
}

// convDefaultServer: default-server OPTIONS, [backend.default_server].
func convDefaultServer(x *ctx) {
	t := x.p.defaultServer()
	t.lead = append(t.lead, x.lead()...)
	x.serverOptions(t, &x.p.dsAgent, x.args(), true)
	t.lead = append(t.lead, x.takePartials()...)
	if t.trail == "" {
		t.trail = x.trail()
	}
}

// convServer: server NAME ADDRESS [OPTIONS].
func convServer(x *ctx) {
	name, addr := x.arg(0), x.arg(1)
	if name == "" {
		x.skip(Unsupported, "a server needs a name")
		return
	}
	a, err := serverAddr(addr)
	if err != nil {
		x.skip(Unsupported, fmt.Sprintf("address %q: %v", addr, err))
		return
	}
	t := &table{header: "[[backend.server]]", src: x.ln.num}
	t.set("name", name, x.ln.num)
	t.set("address", a, x.ln.num)
	x.addServer(t, x.args()[2:])
}

// addServer applies a server or server-template line's options to t and
// adds it to the section's servers, unless an option means the line is
// not converted.
func (x *ctx) addServer(t *table, opts []string) {
	srv := &server{t: t, ln: x.ln}
	if !x.serverOptions(t, &srv.agent, opts, false) {
		return
	}
	srv.cookie = t.get("cookie") != nil
	t.lead = append(x.lead(), t.lead...)
	t.trail = x.trail()
	x.p.servers = append(x.p.servers, srv)
}

// convCookie: cookie NAME [rewrite|insert|prefix] [indirect] [nocache]...
func convCookie(x *ctx) {
	if x.arg(0) == "" {
		x.skip(Unsupported, "a cookie needs a name")
		return
	}
	in := &inline{}
	in.set("name", x.arg(0))
	args := x.args()[1:]
	for i := 0; i < len(args); i++ {
		switch a := args[i]; a {
		case "rewrite", "insert", "prefix":
			in.set("mode", a)
		case "indirect", "nocache", "httponly", "secure":
			in.set(a, true)
		case "maxidle", "maxlife":
			if i+1 >= len(args) {
				x.part(Unsupported, a+" without a time")
				continue
			}
			i++
			d, err := haproxyTime(args[i])
			if err != nil {
				x.part(Unsupported, a+": "+err.Error())
				continue
			}
			in.set(a, d)
		case "domain", "attr":
			v := ""
			if i+1 < len(args) {
				i++
				v = " " + args[i]
			}
			x.part(Unsupported, fmt.Sprintf("cookie %s%s", a, v))
		case "postonly", "preserve", "dynamic":
			x.part(Unsupported, fmt.Sprintf("cookie %s", a))
		default:
			x.part(Unsupported, fmt.Sprintf("unknown cookie option %q", a))
		}
	}
	x.put(x.side(sideBack), "cookie", in)
}

// convStickTable: stick-table type T [len N] size S [expire T] [store D,...]
// [peers P] [nopurge] [srvkey K]. A backend holding only the table becomes
// a [[table]]; a listen section's table is its backend's.
func convStickTable(x *ctx) {
	in := &inline{}
	args := x.args()
	for i := 0; i < len(args); i++ {
		next := func() (string, bool) {
			if i+1 < len(args) {
				i++
				return args[i], true
			}
			return "", false
		}
		switch a := args[i]; a {
		case "type":
			v, _ := next()
			in.set("type", v)
			if i+2 < len(args) && args[i+1] == "len" {
				i++
				v, _ := next()
				n, err := atoi(v)
				if err != nil {
					x.skip(Unsupported, "len: "+err.Error())
					return
				}
				in.set("len", n)
			}
		case "size":
			v, _ := next()
			n, err := haproxySize(v)
			if err != nil {
				x.skip(Unsupported, err.Error())
				return
			}
			in.set("size", n)
		case "expire":
			v, _ := next()
			d, err := haproxyTime(v)
			if err != nil {
				x.skip(Unsupported, "expire: "+err.Error())
				return
			}
			in.set("expire", d)
		case "store":
			v, _ := next()
			list, _ := in.vals["store"].([]string)
			for _, d := range splitStore(v) {
				if _, err := stick.ParseStore([]string{d}); err != nil {
					// The rest of the table still converts: dropping it
					// whole dropped the rules tracking in it (a fresh-user
					// trial lost a rate limit to an http_fail_cnt).
					x.part(Unsupported, fmt.Sprintf("store %s: %v", d, err))
					continue
				}
				list = append(list, d)
			}
			in.set("store", list)
		case "peers":
			v, _ := next()
			if line, removed := x.c.removedPeers[v]; removed {
				x.part(Ignored, fmt.Sprintf("peers %q is removed (line %d): this table is not shared", v, line))
				continue
			}
			in.set("peers", v)
		case "nopurge":
			x.part(Unsupported, "nopurge: a full table purges its oldest entries")
		case "srvkey", "write-to":
			next()
			x.part(Unsupported, "stick-table "+a)
		case "recv-only":
			x.part(Unsupported, "stick-table "+a)
		default:
			x.part(Unsupported, fmt.Sprintf("unknown stick-table option %q", a))
		}
	}
	if x.p.tableOnly {
		for _, k := range in.keys {
			x.put(x.p.be, k, in.vals[k])
		}
		return
	}
	t := x.side(sideAny)
	if x.p.kind == "listen" {
		t = x.p.be
	}
	x.put(t, "stick_table", in)
}

// splitStore splits a store list on the commas outside parentheses
// ("gpc_rate(2,10s)" is one type).
func splitStore(s string) []string {
	var out []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				if w := strings.TrimSpace(s[start:i]); w != "" {
					out = append(out, w)
				}
				start = i + 1
			}
		}
	}
	if w := strings.TrimSpace(s[start:]); w != "" {
		out = append(out, w)
	}
	return out
}

// convStick: stick on|match|store-request EXPR [table T] [if|unless COND].
func convStick(x *ctx) { x.push(x.side(sideBack), "stick", x.rest()) }

// convACL: acl NAME EXPR. Several lines of one name OR together, as in
// HAProxy: they become a list.
func convACL(x *ctx) {
	name := x.arg(0)
	expr := x.ln.rest(x.argi + 1)
	if name == "" || expr == "" {
		x.skip(Unsupported, "an acl needs a name and a condition")
		return
	}
	e := x.push(x.side(sideAny), "acl."+name, expr)
	e.one = true
	if x.p.kind == "listen" {
		// The backend side of a listen section may need the ACL too (its
		// stick rules' conditions): finishProxy copies it there.
		x.p.listenACLs = append(x.p.listenACLs, aclLine{name, expr, x.ln})
	}
}

// aclLine is an acl line of a listen section.
type aclLine struct {
	name, expr string
	ln         *line
}

// convUseBackend: use_backend NAME [if|unless COND].
func convUseBackend(x *ctx) {
	name := x.arg(0)
	if name == "" || strings.Contains(name, "%[") {
		x.skip(Unsupported, "dynamic backend names (use_backend %[...])")
		return
	}
	in := &inline{}
	in.set("backend", name)
	switch x.arg(1) {
	case "":
	case "if", "unless":
		in.set(x.arg(1), x.ln.rest(x.argi+2))
	default:
		x.skip(Unsupported, fmt.Sprintf("expected if or unless after the backend, got %q", x.arg(1)))
		return
	}
	x.push(x.p.fe, "use_backend", in)
}

// convDefaultBackend: default_backend NAME.
func convDefaultBackend(x *ctx) {
	if x.nargs() != 1 || strings.Contains(x.arg(0), "%[") {
		x.skip(Unsupported, "expects one backend name")
		return
	}
	x.put(x.p.fe, "default_backend", x.arg(0))
}

// convHTTPRequest: http-request RULE, passed on as written; fulcrum's
// check judges the rule (and the check loop comments it out when fulcrum
// cannot run it).
func convHTTPRequest(x *ctx) {
	text := x.rest()
	if x.arg(0) == "use-service" && x.arg(1) == "prometheus-exporter" {
		if x.p.fe != nil && sectionHas(x.p.sec, "stats") {
			x.skip(Builtin, "fulcrum serves Prometheus metrics at /metrics beside the stats page")
		} else {
			x.skip(Unsupported, "the Prometheus exporter: fulcrum serves /metrics on a frontend with a stats page")
		}
		return
	}
	x.push(x.side(sideAny), "http_request", x.p.withTable(text))
}

// convHTTPResponse: http-response RULE, passed on as written; fulcrum's
// check judges it as http_request's.
func convHTTPResponse(x *ctx) {
	x.push(x.side(sideAny), "http_response", x.rest())
}

// convRedirect: redirect ..., an http_request rule in fulcrum.
func convRedirect(x *ctx) {
	x.push(x.side(sideAny), "http_request", "redirect "+x.rest())
}

// convTCPRequest: tcp-request connection RULE.
func convTCPRequest(x *ctx) {
	x.push(x.p.fe, "tcp_request", x.p.withTable("connection "+x.rest()))
}

// withTable names a listen section's table in a track-sc rule that names
// none: the table is on the backend side, the rule on the frontend side.
func (p *proxy) withTable(rule string) string {
	if p.trackName == "" {
		return rule
	}
	words, _, _, err := lexLine(rule)
	if err != nil {
		return rule
	}
	for i, w := range words {
		if !strings.HasPrefix(w.text, "track-sc") || i+1 >= len(words) {
			continue
		}
		if i+2 < len(words) && words[i+2].text == "table" {
			return rule
		}
		at := words[i+1].end
		return rule[:at] + " table " + p.trackName + rule[at:]
	}
	return rule
}

// sectionHas reports whether a section has a line starting with kw.
func sectionHas(s *section, kw string) bool {
	for _, ln := range s.lines {
		if ln.kw(0) == kw {
			return true
		}
	}
	return false
}

// convBind: bind ADDRESS[,ADDRESS...] [OPTIONS]. fulcrum reads HAProxy's
// bind options in its bind string: those it runs are written after each
// address; on an ssl bind, ssl-default-bind-* come first (the bind's own
// win).
func convBind(x *ctx) {
	addrs, err := bindAddrs(x.arg(0))
	if err != nil {
		x.skip(Unsupported, fmt.Sprintf("address %q: %v", x.arg(0), err))
		return
	}
	words := x.args()[1:]
	// The defaults go after the bind's own options, those it does not
	// set; their versions are the base the bind's own change.
	dflt := &bindBuild{vers: newVersions()}
	if slices.Contains(words, "ssl") {
		o := &optCtx{x: x, bind: dflt}
		for _, w := range x.c.tls.bindDefaults {
			if opt, ok := bindOpts[w.name]; ok && opt.apply != nil {
				o.name = w.name
				opt.apply(o, w.args)
			}
		}
	}
	b := &bindBuild{vers: dflt.vers}
	if !x.applyOptions(bindOpts, words, &optCtx{x: x, bind: b}) {
		return
	}
	for _, w := range dflt.words {
		if !b.has(w.name) {
			b.words = append(b.words, w)
		}
	}
	if !x.finishBind(b) {
		return
	}
	opts := b.text()
	for _, a := range addrs {
		if opts != "" {
			a += " " + opts
		}
		x.push(x.p.fe, "bind", a)
	}
}

// The stats page.
func convStatsEnable(x *ctx) { x.put(x.p.statsTable(x.ln.num), "enable", true) }
func convStatsURI(x *ctx)    { x.put(x.p.statsTable(x.ln.num), "uri", x.arg(0)) }
func convStatsHideVersion(x *ctx) {
	x.put(x.p.statsTable(x.ln.num), "hide_version", true)
}
func convStatsRefresh(x *ctx) {
	d, err := haproxyTime(x.arg(0))
	if err != nil {
		x.skip(Unsupported, err.Error())
		return
	}
	x.put(x.p.statsTable(x.ln.num), "refresh", d)
}
func convStatsAuth(x *ctx) { x.push(x.p.statsTable(x.ln.num), "auth", x.arg(0)) }
func convStatsAdmin(x *ctx) {
	if x.arg(0) != "if" || x.nargs() < 2 {
		x.skip(Unsupported, "stats admin unless: fulcrum takes the condition under which admin actions are allowed (stats admin if ...)")
		return
	}
	x.put(x.p.statsTable(x.ln.num), "admin", x.ln.rest(x.argi+1))
}

// convLoadState: load-server-state-from-file global|local|none.
func convLoadState(x *ctx) {
	switch x.arg(0) {
	case "global":
		x.skip(Builtin, "fulcrum reads global.state_file at start")
	case "none":
		x.skip(Differs, "fulcrum reads global.state_file for every backend")
	default:
		x.skip(Unsupported, "per-backend state files: fulcrum has one, global.state_file")
	}
}

// The global section.

func convGlobalInt(key string) func(*ctx) {
	return func(x *ctx) {
		n, err := atoi(x.arg(0))
		if err != nil {
			x.skip(Unsupported, err.Error())
			return
		}
		x.put(x.c.global, key, n)
	}
}

func convGlobalTime(key string) func(*ctx) {
	return func(x *ctx) {
		d, err := haproxyTime(x.arg(0))
		if err != nil {
			x.skip(Unsupported, err.Error())
			return
		}
		x.put(x.c.global, key, d)
	}
}

// convGlobalWord converts a global keyword taking one word into key.
func convGlobalWord(key string) func(*ctx) {
	return func(x *ctx) {
		if x.nargs() != 1 {
			x.skip(Unsupported, "expects one value")
			return
		}
		x.put(x.c.global, key, x.arg(0))
	}
}

// convStateFile: server-state-file PATH.
func convStateFile(x *ctx) { x.put(x.c.global, "state_file", x.arg(0)) }

// convStatsMaxconn: stats maxconn N, the default of every socket.
func convStatsMaxconn(x *ctx) {
	n, err := atoi(x.arg(0))
	if err != nil {
		x.skip(Unsupported, err.Error())
		return
	}
	x.c.statsMaxconn = &chkVal{v: n, ln: x.ln}
}

// convStatsSocket: stats socket ADDRESS [OPTIONS], a [[global.stats_socket]].
func convStatsSocket(x *ctx) {
	addr := x.arg(0)
	t := &table{header: "[[global.stats_socket]]", src: x.ln.num}
	switch {
	case strings.HasPrefix(addr, "unix@"):
		t.set("path", strings.TrimPrefix(addr, "unix@"), x.ln.num)
	case strings.HasPrefix(addr, "/") || strings.HasPrefix(addr, "."):
		t.set("path", addr, x.ln.num)
	default:
		a, err := addrFamily(addr)
		host, port, ok := splitHostPort(a)
		if err != nil || !ok || !digits(port) {
			x.skip(Unsupported, fmt.Sprintf("address %q: only a unix socket path or a TCP address", addr))
			return
		}
		t.set("tcp", joinHostPort(host, port), x.ln.num)
	}
	if !x.options(socketOpts, x.args()[1:], t) {
		return
	}
	t.lead = append(x.lead(), t.lead...)
	t.trail = x.trail()
	x.c.global.subs = append(x.c.global.subs, t)
	x.c.sockets = append(x.c.sockets, t)
}

// convErrorfile: errorfile CODE FILE. A file whose body is the page
// fulcrum answers for CODE (HAProxy's built-in page: Debian's
// /etc/haproxy/errors are copies of them, with an HTTP/1.0 head) is
// noted as converted with a difference (fulcrum sends its own head);
// another page is not supported (fulcrum answers only the built-in
// pages).
func convErrorfile(x *ctx) {
	const why = "custom error pages: fulcrum answers with HAProxy's built-in pages"
	code, err := atoi(x.arg(0))
	if err != nil || x.nargs() != 2 {
		x.skip(Unsupported, why)
		return
	}
	builtin, ok := http1.ErrorPage(code)
	if !ok {
		x.skip(Unsupported, why)
		return
	}
	if body, ok := errorfileBody(x.c.dir, x.arg(1)); ok && strings.TrimSpace(body) == strings.TrimSpace(builtin) {
		x.skip(Differs, fmt.Sprintf("the body of %s is fulcrum's built-in page for %d (HAProxy's), sent with fulcrum's own head (HTTP/1.1, content-length) where HAProxy sends the file's bytes", x.arg(1), code))
		return
	}
	x.skip(Unsupported, why)
}

// errorfileBody returns the body of the HTTP response in file (relative
// to dir): a regular file of at most 64 KiB, its head ended by an empty
// line.
func errorfileBody(dir, file string) (string, bool) {
	if !filepath.IsAbs(file) && dir != "" {
		file = filepath.Join(dir, file)
	}
	f, err := os.Open(file)
	if err != nil {
		return "", false
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() || st.Size() > 64<<10 {
		return "", false
	}
	b, err := io.ReadAll(io.LimitReader(f, 64<<10))
	if err != nil {
		return "", false
	}
	s := strings.ReplaceAll(string(b), "\r\n", "\n")
	_, body, ok := strings.Cut(s, "\n\n")
	return body, ok
}

// convOtherOption: an option the table has no row for. One of HAProxy
// 2.6's is not converted; another name is a typo, said as HAProxy says
// it ("unknown option 'forwardfour'; did you mean 'forwardfor' maybe ?").
func convOtherOption(x *ctx) {
	name := x.arg(0)
	if slices.Contains(haproxyOptions, name) {
		x.skip(Unsupported, "this option is not converted")
		return
	}
	why := fmt.Sprintf("unknown option '%s'", name)
	if s := suggest.Nearest(name, haproxyOptions); s != "" {
		why += fmt.Sprintf("; did you mean '%s'?", s)
	}
	x.skip(Unsupported, why)
}

// haproxyOptions are the names of HAProxy 2.6's proxy options
// (configuration.txt, "option ...").
var haproxyOptions = []string{
	"abortonclose", "accept-invalid-http-request", "accept-invalid-http-response", "allbackups",
	"checkcache", "clitcpka", "contstats", "disable-h2-upgrade", "dontlog-normal", "dontlognull",
	"external-check", "forwardfor", "h1-case-adjust-bogus-client", "h1-case-adjust-bogus-server",
	"http-buffer-request", "http-ignore-probes", "http-keep-alive", "http-no-delay",
	"http-pretend-keepalive", "http-restrict-req-hdr-names", "http-server-close",
	"http-use-proxy-header", "httpchk", "httpclose", "httplog", "httpslog", "idle-close-on-response",
	"independent-streams", "ldap-check", "log-health-checks", "log-separate-errors", "logasap",
	"mysql-check", "nolinger", "originalto", "persist", "pgsql-check", "prefer-last-server",
	"redis-check", "redispatch", "smtpchk", "socket-stats", "splice-auto", "splice-request",
	"splice-response", "spop-check", "srvtcpka", "ssl-hello-chk", "tcp-check", "tcp-smart-accept",
	"tcp-smart-connect", "tcpka", "tcplog", "transparent",
}

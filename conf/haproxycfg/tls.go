package haproxycfg

// TLS and the PROXY protocol: bind options, which fulcrum reads inside
// its bind string ("127.0.0.1:443 ssl crt site.pem alpn http/1.1"), the
// server keywords, which become server keys (ssl, verify, ca_file, sni,
// verifyhost, alpn, crt, check_ssl, send_proxy, send_proxy_v2,
// proxy_v2_options, check_send_proxy), and the global settings fulcrum has
// no key for (crt-base, ca-base, ssl-default-bind-*, ssl-server-verify),
// which are folded into the lines they apply to, as HAProxy applies them
// when it reads those lines.

import (
	"fmt"
	"slices"
	"strings"

	"github.com/fulcrum-proxy/fulcrum/proxy/tlsx"
)

// tlsGlobal holds the global TLS settings read so far: HAProxy applies
// them to the bind and server lines that follow.
type tlsGlobal struct {
	crtBase, caBase string
	// bindDefaults are ssl-default-bind-options (those fulcrum runs) and
	// ssl-default-bind-ciphers/-ciphersuites/-curves, as bind words, laid
	// under the options of every ssl bind.
	bindDefaults []bindWord
	verifyNone   bool // ssl-server-verify none
	verifyLine   int  // its line
}

// bindWord is one bind option with its arguments.
type bindWord struct {
	name string
	args []string
}

// bindBuild is the fulcrum bind options being built from a bind line:
// options in order, a later one replacing an earlier one of the same name
// (crt and crt-list add up), and the TLS versions asked for.
type bindBuild struct {
	words []bindWord
	vers  tlsVersions
}

// put adds an option, replacing one of the same name.
func (b *bindBuild) put(name string, args ...string) {
	if name != "crt" && name != "crt-list" {
		for i := range b.words {
			if b.words[i].name == name {
				b.words[i].args = args
				return
			}
		}
	}
	b.words = append(b.words, bindWord{name, args})
}

// has reports whether an option is there.
func (b *bindBuild) has(name string) bool {
	return slices.ContainsFunc(b.words, func(w bindWord) bool { return w.name == name })
}

// text returns the options as fulcrum's bind string writes them.
func (b *bindBuild) text() string {
	var parts []string
	for _, w := range b.words {
		parts = append(parts, w.name)
		parts = append(parts, w.args...)
	}
	return strings.Join(parts, " ")
}

// tlsVersions are HAProxy's version options: ssl-min-ver, ssl-max-ver,
// no-sslv3...no-tlsv13 and force-sslv3...force-tlsv13. Versions are
// numbered 0 (SSLv3) to 4 (TLSv1.3).
type tlsVersions struct {
	min, max int // -1: not given
	no       [5]bool
	force    int // -1: none
	used     bool
}

var versionNames = []string{"SSLv3", "TLSv1.0", "TLSv1.1", "TLSv1.2", "TLSv1.3"}

// The default range, HAProxy 2.6's and fulcrum's: TLSv1.2 to TLSv1.3.
const defMinVersion, defMaxVersion = 3, 4

func newVersions() tlsVersions { return tlsVersions{min: -1, max: -1, force: -1} }

// versionFlag maps no-tlsv12 / force-tlsv12 to a version number.
var versionFlag = map[string]int{"sslv3": 0, "tlsv10": 1, "tlsv11": 2, "tlsv12": 3, "tlsv13": 4}

// resolve returns the versions to write as ssl-min-ver and ssl-max-ver
// ("" when fulcrum's default is the one), or an error when the enabled
// versions are not a range fulcrum can express.
func (v *tlsVersions) resolve() (lo, hi string, err error) {
	min, max := defMinVersion, defMaxVersion
	if v.min >= 0 {
		min = v.min
	}
	if v.max >= 0 {
		max = v.max
	}
	if v.force >= 0 {
		min, max = v.force, v.force
	}
	var on []int
	for i := min; i <= max; i++ {
		if !v.no[i] || v.force == i {
			on = append(on, i)
		}
	}
	if len(on) == 0 {
		return "", "", fmt.Errorf("no TLS version left enabled")
	}
	if on[len(on)-1]-on[0] != len(on)-1 {
		return "", "", fmt.Errorf("TLS versions with a gap: fulcrum takes a range (ssl-min-ver, ssl-max-ver)")
	}
	if on[0] != defMinVersion || v.min >= 0 || v.force >= 0 {
		lo = versionNames[on[0]]
	}
	if on[len(on)-1] != defMaxVersion || v.max >= 0 || v.force >= 0 {
		hi = versionNames[on[len(on)-1]]
	}
	return lo, hi, nil
}

// joinBase joins a base directory (crt-base, ca-base) to a relative path,
// as HAProxy does ("BASE/PATH"); absolute paths and "@system-ca" stay.
func joinBase(base, p string) string {
	if base == "" || strings.HasPrefix(p, "/") || strings.HasPrefix(p, "@") {
		return p
	}
	return strings.TrimRight(base, "/") + "/" + p
}

// oneWord refuses a value fulcrum's bind string cannot hold: it splits
// binds on blanks.
func oneWord(v string) error {
	if v == "" || strings.ContainsAny(v, " \t\n\r") {
		return fmt.Errorf("a value with blanks: fulcrum's bind string splits on them")
	}
	return nil
}

// bindPass passes an option on to fulcrum's bind string as written.
func bindPass(o *optCtx, a []string) error {
	for _, v := range a {
		if err := oneWord(v); err != nil {
			return err
		}
	}
	o.bind.put(o.name, a...)
	return nil
}

// bindCrt: crt PATH, joined to crt-base.
func bindCrt(o *optCtx, a []string) error {
	p := joinBase(o.x.c.tls.crtBase, a[0])
	if err := oneWord(p); err != nil {
		return err
	}
	o.bind.put("crt", p)
	return nil
}

// bindCrtList: crt-list PATH. HAProxy joins crt-base to the certificates
// the list names, fulcrum reads them from the configuration's directory.
func bindCrtList(o *optCtx, a []string) error {
	if err := oneWord(a[0]); err != nil {
		return err
	}
	if o.x.c.tls.crtBase != "" {
		o.x.part(Differs, fmt.Sprintf("crt-list %s: fulcrum does not join crt-base to the relative paths the list names (it reads them from the configuration's directory): write them in full", a[0]))
	}
	o.bind.put("crt-list", a[0])
	return nil
}

// bindCAFile: ca-file PATH, joined to ca-base.
func bindCAFile(o *optCtx, a []string) error {
	p := joinBase(o.x.c.tls.caBase, a[0])
	if err := oneWord(p); err != nil {
		return err
	}
	o.bind.put("ca-file", p)
	return nil
}

// versionOpt records a version option (bind lines; on server lines
// serverVersion).
func versionOpt(o *optCtx, a []string) error {
	v := &o.bind.vers
	v.used = true
	switch {
	case o.name == "ssl-min-ver" || o.name == "ssl-max-ver":
		n := slices.Index(versionNames, a[0])
		if n < 0 {
			return fmt.Errorf("unknown version %q (SSLv3, TLSv1.0 to TLSv1.3)", a[0])
		}
		if o.name == "ssl-min-ver" {
			v.min = n
		} else {
			v.max = n
		}
	case strings.HasPrefix(o.name, "no-"):
		v.no[versionFlag[strings.TrimPrefix(o.name, "no-")]] = true
	case strings.HasPrefix(o.name, "force-"):
		v.force = versionFlag[strings.TrimPrefix(o.name, "force-")]
	}
	return nil
}

// serverVersion: a TLS version option on a server line. fulcrum offers
// servers crypto/tls's versions, TLSv1.2 and TLSv1.3: options that only
// keep older versions out change nothing.
func serverVersion(o *optCtx, a []string) error {
	switch {
	case o.name == "no-sslv3" || o.name == "no-tlsv10" || o.name == "no-tlsv11",
		o.name == "ssl-min-ver" && (a[0] == "SSLv3" || strings.HasPrefix(a[0], "TLSv1.") && a[0] <= "TLSv1.2"),
		o.name == "ssl-max-ver" && a[0] == "TLSv1.3":
		o.x.part(Builtin, fmt.Sprintf("%q: fulcrum offers servers TLSv1.2 and TLSv1.3", strings.TrimSpace(o.name+" "+strings.Join(a, " "))))
		return nil
	}
	o.x.part(Unsupported, fmt.Sprintf("%q: TLS versions to servers (fulcrum offers TLSv1.2 and TLSv1.3)", strings.TrimSpace(o.name+" "+strings.Join(a, " "))))
	return nil
}

// finishBind writes the versions of a bind as ssl-min-ver/ssl-max-ver.
// It returns false when they cannot be written (the line is skipped).
func (x *ctx) finishBind(b *bindBuild) bool {
	if !b.vers.used {
		return true
	}
	lo, hi, err := b.vers.resolve()
	if err != nil {
		x.skip(Unsupported, err.Error())
		return false
	}
	if lo != "" {
		b.put("ssl-min-ver", lo)
	}
	if hi != "" {
		b.put("ssl-max-ver", hi)
	}
	return true
}

// srvPath: a server's ca-file or crt, joined to ca-base or crt-base.
func srvPath(key string) func(*optCtx, []string) error {
	return func(o *optCtx, a []string) error {
		base := o.x.c.tls.caBase
		if key == "crt" {
			base = o.x.c.tls.crtBase
		}
		o.t.set(key, joinBase(base, a[0]), o.x.ln.num)
		return nil
	}
}

// proxyV2 adds TLVs to a server's proxy_v2_options (send-proxy-v2-ssl,
// send-proxy-v2-ssl-cn, proxy-v2-options LIST), with send_proxy_v2 for the
// keywords that imply it.
func proxyV2(implied ...string) func(*optCtx, []string) error {
	return func(o *optCtx, a []string) error {
		opts := implied
		if len(a) > 0 {
			opts = strings.Split(a[0], ",")
		} else {
			o.t.set("send_proxy_v2", true, o.x.ln.num)
		}
		var list []string
		if e := o.t.get("proxy_v2_options"); e != nil {
			list, _ = e.v.([]string)
		}
		list = slices.Clone(list)
		for _, p := range opts {
			if p != "" && !slices.Contains(list, p) {
				list = append(list, p)
			}
		}
		o.t.set("proxy_v2_options", list, o.x.ln.num)
		return nil
	}
}

// The global TLS settings.

// convCrtBase: crt-base DIR, joined into the relative crt paths of the
// bind and server lines that follow.
func convCrtBase(x *ctx) {
	x.c.tls.crtBase = x.arg(0)
	x.folded("joined into the relative crt paths of the bind and server lines below")
}

// convCABase: ca-base DIR, joined into the relative ca-file paths.
func convCABase(x *ctx) {
	x.c.tls.caBase = x.arg(0)
	x.folded("joined into the relative ca-file paths of the bind and server lines below")
}

// convDefaultBindOptions: ssl-default-bind-options OPTIONS, laid under the
// options of every ssl bind below; those fulcrum does not run are noted
// here.
func convDefaultBindOptions(x *ctx) {
	b := &bindBuild{vers: newVersions()}
	o := &optCtx{x: x, bind: b, noWhole: true}
	x.applyOptions(bindOpts, x.args(), o)
	if b.vers.used {
		if _, _, err := b.vers.resolve(); err != nil {
			x.part(Unsupported, err.Error())
			b.vers = newVersions()
		}
	}
	x.c.tls.bindDefaults = append(x.c.tls.bindDefaults, b.words...)
	x.c.tls.bindDefaults = append(x.c.tls.bindDefaults, versionWords(b.vers)...)
	x.folded("added to every ssl bind below that does not set its own")
}

// versionWords returns the version options of v as bind words, as
// written (ssl-default-bind-options keeps them for each bind to resolve
// with its own).
func versionWords(v tlsVersions) []bindWord {
	var out []bindWord
	if v.min >= 0 {
		out = append(out, bindWord{"ssl-min-ver", []string{versionNames[v.min]}})
	}
	if v.max >= 0 {
		out = append(out, bindWord{"ssl-max-ver", []string{versionNames[v.max]}})
	}
	for i, no := range v.no {
		if no {
			out = append(out, bindWord{"no-" + strings.ToLower(strings.ReplaceAll(versionNames[i], ".", "")), nil})
		}
	}
	if v.force >= 0 {
		out = append(out, bindWord{"force-" + strings.ToLower(strings.ReplaceAll(versionNames[v.force], ".", "")), nil})
	}
	return out
}

// convDefaultBindSetting: ssl-default-bind-ciphers, -ciphersuites and
// -curves, the default of every ssl bind below.
func convDefaultBindSetting(opt string) func(*ctx) {
	return func(x *ctx) {
		v := x.arg(0)
		var s tlsx.Settings
		if _, err := s.ParseOption(opt, v, nil); err != nil {
			x.skip(Unsupported, err.Error())
			return
		}
		if err := oneWord(v); err != nil {
			x.skip(Unsupported, err.Error())
			return
		}
		x.c.tls.bindDefaults = append(x.c.tls.bindDefaults, bindWord{opt, []string{v}})
		x.folded("added to every ssl bind below that does not set its own " + opt)
	}
}

// convServerVerify: ssl-server-verify none|required, the default verify
// of servers with ssl.
func convServerVerify(x *ctx) {
	switch x.arg(0) {
	case "none":
		x.c.tls.verifyNone, x.c.tls.verifyLine = true, x.ln.num
		x.folded("verify = \"none\" in the default_server of every backend with ssl servers below")
	case "required":
		x.c.tls.verifyNone = false
		x.folded("fulcrum's default (verify = \"required\")")
	default:
		x.skip(Unsupported, fmt.Sprintf("%q: none or required", x.arg(0)))
	}
}

// folded writes a global line fulcrum has no key for, and whose effect
// the conversion writes where it applies, as a comment saying where.
func (x *ctx) folded(where string) {
	lines := append([]string{}, x.ln.lead...)
	lines = append(lines, x.takePartials()...)
	lines = append(lines, fmt.Sprintf("line %d, converted: %s", x.ln.num, where), x.ln.raw)
	x.c.global.comment(x.ln.num, lines...)
}

// applyServerVerify gives a backend's ssl servers ssl-server-verify none
// (in its default_server, which servers that set verify override).
func (c *converter) applyServerVerify(p *proxy) {
	if !c.tls.verifyNone || p.be == nil {
		return
	}
	if p.ds != nil && p.ds.get("verify") != nil {
		return
	}
	uses := false
	for _, t := range append([]*table{p.ds}, serverTables(p)...) {
		if t == nil {
			continue
		}
		for _, k := range []string{"ssl", "check_ssl"} {
			if e := t.get(k); e != nil && e.v == true {
				uses = true
			}
		}
	}
	if uses {
		e := p.defaultServer().set("verify", "none", c.tls.verifyLine)
		e.trail = fmt.Sprintf("ssl-server-verify none, line %d", c.tls.verifyLine)
	}
}

// serverTables returns the tables of a proxy's servers.
func serverTables(p *proxy) []*table {
	var out []*table
	for _, s := range p.servers {
		out = append(out, s.t)
	}
	return out
}

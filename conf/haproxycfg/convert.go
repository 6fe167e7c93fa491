package haproxycfg

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// converter holds one conversion of a parsed file into TOML tables. A
// conversion runs again, from scratch, for each round of the check loop
// (import.go), with more lines in reject.
type converter struct {
	f *file
	// reject maps a line to the problem `fulcrum check` found in what it
	// became: the line is not converted, and says why.
	reject map[int]string
	// dir is the directory relative paths in the file are read from
	// (errorfile); "" for the current one.
	dir   string
	notes []Note
	noted map[string]bool // "line\x00why" of the notes already taken

	global   *table
	defaults *table   // [defaults]; nil when each section is written in full
	body     []*table // the other tables and comment blocks, in file order
	orphans  *table   // the lines before the first section, as comments
	sockets  []*table // [[global.stats_socket]], for `stats maxconn`
	// statsMaxconn is `stats maxconn`, every socket's default.
	statsMaxconn *chkVal

	// Defaults resolution (resolveDefaults).
	explicit bool                  // several defaults sections are in use
	primary  *section              // the defaults section [defaults] holds
	usesOf   map[*section]*section // a proxy section's defaults section
	parent   map[*section]*section // a defaults section's `from`
	blocks   map[*section]*table   // each defaults section's comment block

	referenced map[string]bool // backend names that routing rules name
	// localName is this instance's peer name when the conversion is for
	// it (Options.LocalPeer); "" keeps every peers section.
	localName string
	// removedPeers maps a peers section removed for not naming localName
	// to its header line.
	removedPeers map[string]int
	tls          tlsGlobal // the global TLS settings read so far
}

// none stands for "no defaults section": HAProxy's built-in defaults.
var none = &section{kind: "defaults"}

// newConverter prepares a conversion of f.
func newConverter(f *file, reject map[int]string) *converter {
	return &converter{
		f: f, reject: reject, noted: map[string]bool{},
		global: &table{header: "[global]"},
		usesOf: map[*section]*section{}, parent: map[*section]*section{},
		blocks: map[*section]*table{}, referenced: map[string]bool{},
	}
}

// note records a note once per line and reason.
func (c *converter) note(ln *line, kw string, kind Kind, why string) {
	key := strconv.Itoa(ln.num) + "\x00" + why
	if c.noted[key] {
		return
	}
	c.noted[key] = true
	c.notes = append(c.notes, Note{Line: ln.num, Keyword: kw, Kind: kind, Why: why})
}

// noteLine is the comment written above what a note is about:
// `line 14, not supported yet: "proto h2": HTTP/2 (being built)`.
func noteLine(ln *line, kind Kind, why string) string {
	return fmt.Sprintf("line %d, %s: %s", ln.num, kind, why)
}

// keywordOf names a line's keyword for notes: its first words, as far as
// the table knows them.
func keywordOf(ln *line) string {
	for _, ix := range []*rowIndex{proxyIndex, globalIndex} {
		if row, _, argi := ix.lookup(ln); row != nil && !strings.HasSuffix(row.name, "*") {
			return strings.Join(ln.args(0)[:argi], " ")
		}
	}
	if len(ln.words) == 0 {
		return "line"
	}
	return ln.kw(0)
}

// notYetMsg matches the messages of fulcrum's check for what it does not
// run yet ("...: not supported yet" and "..., got X"), not those that
// merely list such values among the valid ones ("unknown algorithm ...
// (rdp-cookie: not supported yet)").
var notYetMsg = regexp.MustCompile(`not supported yet(, got .*)?$`)

// rejected returns the note for a line `fulcrum check` refused, if any.
func (c *converter) rejected(ln *line) (Kind, string, bool) {
	msg, ok := c.reject[ln.num]
	if !ok {
		return 0, "", false
	}
	kind := Unsupported
	if notYetMsg.MatchString(msg) {
		kind = NotYet
	}
	return kind, "fulcrum check: " + msg, true
}

// run converts the whole file.
func (c *converter) run() {
	c.resolveDefaults()
	c.removedPeers = c.incompletePeers()
	for _, s := range c.f.sections {
		for _, ln := range s.lines {
			switch ln.kw(0) {
			case "use_backend", "default_backend":
				c.referenced[ln.kw(1)] = true
			}
		}
	}
	if len(c.f.orphans) > 0 {
		c.orphans = &table{}
		for _, ln := range c.f.orphans {
			c.commentLine(c.orphans, ln, Unsupported, "outside any section")
		}
	}
	if !c.explicit {
		c.defaults = &table{header: "[defaults]"}
		c.buildDefaults()
	}
	for _, s := range c.f.sections {
		switch s.kind {
		case "global":
			c.convertGlobal(s)
		case "defaults":
			c.convertDefaults(s)
		case "frontend", "backend", "listen":
			c.convertProxy(s)
		case "userlist":
			c.convertUserlist(s)
		case "peers":
			c.convertPeers(s)
		case "resolvers":
			c.convertResolvers(s)
		default:
			row := sectionRows[s.kind]
			c.commentSection(s, row.kind, row.why)
		}
	}
	c.headTimeouts()
}

// headTimeouts gives timeout_http_request the value of timeout client
// where HAProxy has no `timeout http-request` (own or from its defaults):
// HAProxy then waits for a request head, and between two requests on a
// kept-alive connection, for timeout client, where fulcrum's default is
// 10s (a fresh-user trial: an idle kept-alive connection closed after
// 10 s here, 5 s there, under "timeout client 5s").
func (c *converter) headTimeouts() {
	const lead = "timeout http-request not set: HAProxy waits timeout client for a request head and between requests"
	derive := func(t *table, tc *entry) {
		e := t.set("timeout_http_request", tc.v, tc.src)
		e.lead = append(e.lead, lead)
	}
	inherited := c.defaults != nil && c.defaults.get("timeout_http_request") != nil
	for _, t := range c.body {
		if t.header != "[[frontend]]" || inherited || t.get("timeout_http_request") != nil {
			continue
		}
		if tc := t.get("timeout_client"); tc != nil {
			derive(t, tc)
		}
	}
	if c.defaults != nil && !inherited {
		if tc := c.defaults.get("timeout_client"); tc != nil {
			derive(c.defaults, tc)
		}
	}
}

// commentLine writes a line that is not converted into t as comments,
// after the note saying why.
func (c *converter) commentLine(t *table, ln *line, kind Kind, why string) {
	c.note(ln, keywordOf(ln), kind, why)
	lines := append([]string{}, ln.lead...)
	lines = append(lines, noteLine(ln, kind, why), ln.raw)
	t.comment(ln.num, lines...)
}

// commentSection writes a whole section as comments, after the note
// saying why it is not converted.
func (c *converter) commentSection(s *section, kind Kind, why string) {
	block := &table{src: s.hdr.num}
	block.lead = append(append([]string{}, s.hdr.lead...), noteLine(s.hdr, kind, why), s.hdr.raw)
	c.note(s.hdr, s.kind, kind, why)
	for _, ln := range s.lines {
		block.comment(ln.num, append(append([]string{}, ln.lead...), ln.raw)...)
	}
	c.body = append(c.body, block)
}

// resolveDefaults finds the defaults section of each proxy section, as
// HAProxy 2.6 does: the last defaults section above it, or the named one
// of its `from`. When they all use the same one, it becomes [defaults];
// otherwise every section is written with its defaults in full.
func (c *converter) resolveDefaults() {
	named := map[string]*section{}
	last := none
	used := map[*section]bool{}
	for _, s := range c.f.sections {
		switch s.kind {
		case "defaults":
			if s.from != "" {
				if p := named[s.from]; p != nil && p != s {
					c.parent[s] = p
				}
			}
			last = s
			if s.name != "" {
				named[s.name] = s
			}
		case "frontend", "backend", "listen":
			d := last
			if s.from != "" {
				if n := named[s.from]; n != nil {
					d = n
				}
			}
			c.usesOf[s] = d
			used[d] = true
		}
	}
	c.explicit = len(used) > 1
	for d := range used {
		c.primary = d
	}
	if c.primary == nil {
		c.primary = none
	}
}

// chainLine is a line of a defaults section, with the section it is in.
type chainLine struct {
	ln  *line
	sec *section
}

// chain returns the lines a defaults section gives, its `from` section's
// first.
func (c *converter) chain(d *section) []chainLine {
	var secs []*section
	for s := d; s != nil && len(secs) < 32; s = c.parent[s] {
		secs = append([]*section{s}, secs...)
	}
	var out []chainLine
	for _, s := range secs {
		for _, ln := range s.lines {
			out = append(out, chainLine{ln, s})
		}
	}
	return out
}

// buildDefaults fills [defaults] from the primary defaults section: the
// keywords fulcrum's [defaults] has. The mode is always written: HAProxy's
// default mode is tcp, fulcrum's http.
func (c *converter) buildDefaults() {
	p := &proxy{kind: "defaults", fe: c.defaults, be: c.defaults}
	for _, cl := range c.chain(c.primary) {
		if _, _, rej := c.rejected(cl.ln); rej {
			continue
		}
		row, neg, argi := lookupProxy(cl.ln)
		if row == nil || row.conv == nil || !row.dflt {
			continue
		}
		x := &ctx{c: c, p: p, ln: cl.ln, row: row, neg: neg, argi: argi}
		x.convert()
	}
	if c.primary.hdr != nil {
		c.defaults.lead = append(c.defaults.lead, c.primary.hdr.lead...)
		c.defaults.trail = c.primary.hdr.comment
		c.defaults.src = c.primary.hdr.num
	}
	if c.defaults.get("mode") == nil {
		c.defaults.set("mode", "tcp", 0).trail = "HAProxy's default mode"
	}
}

// convertDefaults writes a defaults section's comment block: what became
// of it, and its lines that are not converted.
func (c *converter) convertDefaults(s *section) {
	block := &table{src: s.hdr.num}
	c.blocks[s] = block
	c.body = append(c.body, block)

	if why, ok := c.reject[s.hdr.num]; ok {
		c.note(s.hdr, "defaults", Unsupported, "fulcrum check: "+why)
	}
	name := "defaults"
	if s.name != "" {
		name += " " + s.name
	}
	used := false
	for _, d := range c.usesOf {
		for x := d; x != nil; x = c.parent[x] {
			if x == s {
				used = true
			}
		}
	}
	switch {
	case !used:
		block.lead = append(append([]string{}, s.hdr.lead...), fmt.Sprintf("%s (line %d): no section uses it", name, s.hdr.num))
		c.note(s.hdr, "defaults", Ignored, "no frontend, backend or listen section uses these defaults")
	case c.explicit:
		block.lead = append(append([]string{}, s.hdr.lead...), fmt.Sprintf("%s (line %d): written in full in each section that uses it", name, s.hdr.num))
	default:
		block.lead = []string{fmt.Sprintf("%s (line %d): in [defaults] above, and in each section for what [defaults] cannot hold", name, s.hdr.num)}
	}
	for _, ln := range s.lines {
		if kind, why, rej := c.rejected(ln); rej {
			c.commentLine(block, ln, kind, why)
			continue
		}
		row, _, _ := lookupProxy(ln)
		switch {
		case row == nil:
			c.commentLine(block, ln, Unsupported, proxyIndex.unknown(ln))
		case row.noDefaults:
			c.commentLine(block, ln, Unsupported, "not allowed in a defaults section")
		case row.conv == nil:
			c.commentLine(block, ln, row.kind, row.why)
		case !used:
		case c.explicit || !row.dflt:
			if len(ln.lead) > 0 {
				block.comment(ln.num, ln.lead...)
			}
		}
	}
}

// proxy is the TOML being built for one frontend, backend or listen
// section (or, with kind "defaults", for [defaults]).
type proxy struct {
	sec       *section
	kind      string // frontend, backend, listen, defaults
	name      string
	fe, be    *table // nil when the section has no such side
	tableOnly bool   // a backend holding only a stick-table: a [[table]]
	stats     *table // [frontend.stats]
	check     *table // [backend.check]
	ds        *table // [backend.default_server]
	dsAgent   agent  // default-server's agent settings
	servers   []*server
	// chk holds the check settings servers give (inter, rise...): fulcrum
	// has them per backend ([backend.check]).
	chk      map[string]chkVal
	hasTable bool // the section has a stick-table (listen: in the backend)
	// trackName is a listen section's table, named in its track-sc rules.
	trackName  string
	listenACLs []aclLine // a listen section's acl lines
}

// server is one server line being converted.
type server struct {
	t      *table
	ln     *line
	agent  agent
	cookie bool
}

// agent is an agent check's settings, as HAProxy spreads them over
// agent-check, agent-port, agent-inter, agent-addr and agent-send.
type agent struct {
	set, on, off bool // agent-check given; no-agent-check given
	port         int
	inter        dur
	addr, send   string
}

// chkVal is a check setting from a server or default-server line.
type chkVal struct {
	v  any
	ln *line
}

// convertProxy converts a frontend, backend or listen section.
func (c *converter) convertProxy(s *section) {
	if kind, why, rej := c.rejected(s.hdr); rej {
		c.commentSection(s, kind, why)
		return
	}
	if s.name == "" {
		c.commentSection(s, Unsupported, "a "+s.kind+" section needs a name")
		return
	}
	p := &proxy{sec: s, kind: s.kind, name: s.name, chk: map[string]chkVal{}}
	for _, ln := range s.lines {
		if ln.kw(0) == "stick-table" {
			p.hasTable = true
		}
	}
	newTable := func(h string) *table {
		t := &table{header: h, src: s.hdr.num}
		t.set("name", s.name, s.hdr.num)
		return t
	}
	switch s.kind {
	case "frontend":
		p.fe = newTable("[[frontend]]")
	case "backend":
		if c.isTableOnly(s) {
			p.tableOnly = true
			p.be = newTable("[[table]]")
		} else {
			p.be = newTable("[[backend]]")
		}
	case "listen":
		p.fe = newTable("[[frontend]]")
		p.be = newTable("[[backend]]")
		if p.hasTable {
			p.trackName = s.name
		}
	}
	first := p.fe
	if first == nil {
		first = p.be
	}
	first.lead = append(first.lead, s.hdr.lead...)
	first.trail = s.hdr.comment
	if s.from != "" && c.usesOf[s] == none {
		c.note(s.hdr, s.kind, Unsupported, fmt.Sprintf("from %q: no defaults section of that name above", s.from))
	}

	// The defaults first, then the section's own lines: HAProxy's order.
	if d := c.usesOf[s]; d != nil && !p.tableOnly {
		for _, cl := range c.chain(d) {
			if _, _, rej := c.rejected(cl.ln); rej {
				continue
			}
			row, neg, argi := lookupProxy(cl.ln)
			if row == nil || row.conv == nil || row.noDefaults || (!c.explicit && row.dflt) {
				continue
			}
			x := &ctx{c: c, p: p, ln: cl.ln, row: row, neg: neg, argi: argi, from: cl.sec}
			x.convert()
		}
	}
	for _, ln := range s.lines {
		c.convertLine(p, ln)
	}
	c.finishProxy(p)
}

// convertLine converts one line of a proxy section.
func (c *converter) convertLine(p *proxy, ln *line) {
	home := p.fe
	if home == nil {
		home = p.be
	}
	if kind, why, rej := c.rejected(ln); rej {
		c.commentLine(home, ln, kind, why)
		return
	}
	if ln.err != nil {
		c.commentLine(home, ln, Unsupported, "unmatched quote")
		return
	}
	if ln.envErr != nil {
		c.commentLine(home, ln, Unsupported, "environment variable: "+ln.envErr.Error())
		return
	}
	if ln.env {
		c.commentLine(home, ln, Unsupported, "environment variables (write the value)")
		return
	}
	row, neg, argi := lookupProxy(ln)
	if row == nil {
		c.commentLine(home, ln, Unsupported, proxyIndex.unknown(ln))
		return
	}
	if p.tableOnly && ln.kw(0) != "stick-table" {
		c.commentLine(home, ln, Ignored, "a stick table's section")
		return
	}
	x := &ctx{c: c, p: p, ln: ln, row: row, neg: neg, argi: argi}
	x.convert()
}

// isTableOnly reports whether a backend section only holds a stick table
// (and nothing routes to it): HAProxy's idiom for a shared table, a
// [[table]] in fulcrum.
func (c *converter) isTableOnly(s *section) bool {
	if c.referenced[s.name] {
		return false
	}
	has := false
	for _, ln := range s.lines {
		switch ln.kw(0) {
		case "stick-table":
			has = true
		case "mode", "description":
		default:
			return false
		}
	}
	return has
}

// finishProxy writes what depends on the whole section: the check
// settings the servers gave, the agents, the servers, and the tables in
// file order.
func (c *converter) finishProxy(p *proxy) {
	s := p.sec
	if p.be != nil && !p.tableOnly {
		c.applyServerVerify(p)
		for _, k := range []string{"inter", "fastinter", "downinter", "rise", "fall"} {
			if v, ok := p.chk[k]; ok {
				e := p.checkTable().set(k, v.v, v.ln.num)
				e.trail = fmt.Sprintf("from %s, line %d", v.ln.kw(0), v.ln.num)
			}
		}
		cookieMode := ""
		if e := p.be.get("cookie"); e != nil {
			if in, ok := e.v.(*inline); ok {
				cookieMode, _ = in.vals["mode"].(string)
			}
		}
		for _, srv := range p.servers {
			a := p.dsAgent
			a.merge(srv.agent)
			if (a.on || a.set && !a.off) && !a.off {
				if a.port == 0 {
					c.note(srv.ln, "server", Unsupported, "agent-check without agent-port")
					srv.t.lead = append(srv.t.lead, noteLine(srv.ln, Unsupported, "agent-check without agent-port"))
				} else {
					in := &inline{}
					in.set("port", a.port)
					if a.addr != "" {
						in.set("addr", a.addr)
					}
					if a.inter != "" {
						in.set("inter", a.inter)
					}
					if a.send != "" {
						in.set("send", a.send)
					}
					srv.t.set("agent", in, srv.ln.num)
				}
			}
			if cookieMode != "" && !srv.cookie {
				why := "no cookie value: fulcrum uses the server's name as its cookie, where HAProxy sets no cookie for this server"
				c.note(srv.ln, "server", Differs, why)
				srv.t.lead = append(srv.t.lead, noteLine(srv.ln, Differs, why))
			}
			p.be.subs = append(p.be.subs, srv.t)
		}
	}
	if p.kind == "listen" {
		// A listen section is a frontend routing to a backend of the same
		// name; a side with nothing in it is left out.
		if p.be.get("balance") == nil && len(p.servers) == 0 && !hasKeys(p.be, "cookie", "stick_table", "stick", "http_request") {
			p.be = nil
		} else if p.fe.get("bind") != nil {
			e := p.fe.set("default_backend", s.name, 0)
			e.trail = "the listen section's own servers"
			e.order = 1 << 30 // after the section's own keys
		}
		if p.be != nil && len(p.listenACLs) > 0 && stickHasCondition(p.be) {
			for _, a := range p.listenACLs {
				p.be.add("acl."+a.name, &elem{v: a.expr, src: a.ln.num}).one = true
			}
		}
		if p.fe.get("bind") == nil {
			if p.be == nil {
				c.commentSection(s, Unsupported, "a listen section without a bind fulcrum can run and without servers")
				return
			}
			if hasBindLine(s) {
				c.note(s.hdr, "listen", Unsupported, "no bind fulcrum can run: only its backend side is converted")
				p.be.lead = append(p.be.lead, noteLine(s.hdr, Unsupported, "no bind fulcrum can run: only the backend side of "+s.name+" is converted"))
			}
			p.fe = nil
		}
	}
	if c.explicit && !p.tableOnly {
		// No [defaults]: a section whose defaults set no mode runs in
		// HAProxy's default mode, tcp, where fulcrum's is http.
		for _, t := range []*table{p.fe, p.be} {
			if t != nil && t.get("mode") == nil {
				t.set("mode", "tcp", 0).trail = "HAProxy's default mode"
			}
		}
	}
	if p.fe != nil {
		c.defaultLogFormat(p)
	}
	if p.kind == "frontend" && p.fe.get("bind") == nil {
		c.commentSection(s, Unsupported, "no bind fulcrum can run")
		return
	}
	if p.fe != nil {
		c.body = append(c.body, p.fe)
	}
	if p.be != nil {
		if p.fe != nil {
			p.be.lead = nil // the section's comments went to the frontend
		}
		c.body = append(c.body, p.be)
	}
}

// hasKeys reports whether t has one of keys.
func hasKeys(t *table, keys ...string) bool {
	for _, k := range keys {
		if t.get(k) != nil {
			return true
		}
	}
	return false
}

// hasBindLine reports whether a section has a bind line.
func hasBindLine(s *section) bool {
	for _, ln := range s.lines {
		if ln.kw(0) == "bind" {
			return true
		}
	}
	return false
}

// checkTable returns [backend.check], creating it.
func (p *proxy) checkTable() *table {
	if p.check == nil {
		p.check = &table{header: "[backend.check]", src: p.be.src}
		if p.be.header == "[defaults]" {
			return p.check
		}
		p.be.subs = append([]*table{p.check}, p.be.subs...)
	}
	return p.check
}

// defaultServer returns [backend.default_server], creating it after
// [backend.check].
func (p *proxy) defaultServer() *table {
	if p.ds == nil {
		p.ds = &table{header: "[backend.default_server]", src: p.be.src}
		p.be.subs = append(p.be.subs, p.ds)
	}
	return p.ds
}

// statsTable returns [frontend.stats], creating it.
func (p *proxy) statsTable(src int) *table {
	if p.stats == nil {
		p.stats = p.fe.sub("[frontend.stats]", src)
		p.stats.set("enable", true, src)
	}
	return p.stats
}

// merge lays the settings of b over a.
func (a *agent) merge(b agent) {
	a.set = a.set || b.set
	if b.on {
		a.on, a.off = true, false
	}
	if b.off {
		a.on, a.off = false, true
	}
	if b.port != 0 {
		a.port = b.port
	}
	if b.inter != "" {
		a.inter = b.inter
	}
	if b.addr != "" {
		a.addr = b.addr
	}
	if b.send != "" {
		a.send = b.send
	}
}

// convertGlobal converts a global section (HAProxy allows several: they
// add up).
func (c *converter) convertGlobal(s *section) {
	g := c.global
	if g.src == 0 {
		g.src = s.hdr.num
		g.lead = append(g.lead, s.hdr.lead...)
		g.trail = s.hdr.comment
	}
	p := &proxy{kind: "global", fe: g, be: g}
	for _, ln := range s.lines {
		if c.unreadable(g, ln) {
			continue
		}
		row, neg, argi := globalIndex.lookup(ln)
		if row == nil {
			c.commentLine(g, ln, Unsupported, globalIndex.unknown(ln))
			continue
		}
		x := &ctx{c: c, p: p, ln: ln, row: row, neg: neg, argi: argi}
		x.convert()
	}
	if c.statsMaxconn != nil {
		for _, t := range c.sockets {
			if t.get("maxconn") == nil {
				e := t.set("maxconn", c.statsMaxconn.v, c.statsMaxconn.ln.num)
				e.trail = fmt.Sprintf("stats maxconn, line %d", c.statsMaxconn.ln.num)
			}
		}
	}
}

// stickHasCondition reports whether a backend's stick rules have an
// if or unless (which may name the section's ACLs).
func stickHasCondition(be *table) bool {
	e := be.get("stick")
	if e == nil {
		return false
	}
	list, _ := e.v.([]*elem)
	for _, el := range list {
		if s, _ := el.v.(string); strings.Contains(" "+s+" ", " if ") || strings.Contains(" "+s+" ", " unless ") {
			return true
		}
	}
	return false
}

// unreadable comments ln out into t when it is not converted whatever
// its keyword: `fulcrum check` refused what it became, or it has an
// unmatched quote or an environment variable.
func (c *converter) unreadable(t *table, ln *line) bool {
	if kind, why, rej := c.rejected(ln); rej {
		c.commentLine(t, ln, kind, why)
		return true
	}
	if ln.envErr != nil {
		c.commentLine(t, ln, Unsupported, "environment variable: "+ln.envErr.Error())
		return true
	}
	if ln.err != nil || ln.env {
		c.commentLine(t, ln, Unsupported, "unmatched quote or environment variable")
		return true
	}
	return false
}

// namedTable returns the table a named section (userlist, peers,
// resolvers) becomes, with its name; nil, the section commented out, when
// it has no name or fulcrum's check refused what it became.
func (c *converter) namedTable(s *section, header string) *table {
	if kind, why, rej := c.rejected(s.hdr); rej {
		c.commentSection(s, kind, why) // fulcrum check refused the table
		return nil
	}
	if s.name == "" {
		c.commentSection(s, Unsupported, "a "+s.kind+" section needs a name")
		return nil
	}
	t := &table{header: header, src: s.hdr.num, lead: s.hdr.lead, trail: s.hdr.comment}
	t.set("name", s.name, s.hdr.num)
	return t
}

// convertUserlist writes a userlist section as a [[userlist]] table: each
// `group NAME [users U1,U2]` and `user NAME [password HASH |
// insecure-password PASS] [groups G1,G2]` line becomes an element of its
// group or user array.
func (c *converter) convertUserlist(s *section) {
	t := c.namedTable(s, "[[userlist]]")
	if t == nil {
		return
	}
	for _, ln := range s.lines {
		if c.unreadable(t, ln) {
			continue
		}
		in, key, why := userlistLine(ln)
		if why != "" {
			c.commentLine(t, ln, Unsupported, why)
			continue
		}
		t.add(key, &elem{v: in, src: ln.num, lead: ln.lead, trail: ln.comment})
	}
	c.body = append(c.body, t)
}

// userlistLine converts one line of a userlist section: the inline table
// and the array it goes to, or why it is not converted.
func userlistLine(ln *line) (in *inline, key, why string) {
	args := ln.args(1)
	if len(args) == 0 {
		return nil, "", "needs a name"
	}
	in = &inline{}
	in.set("name", args[0])
	opts := args[1:]
	switch ln.kw(0) {
	case "group":
		for len(opts) > 0 {
			if opts[0] != "users" || len(opts) < 2 {
				return nil, "", fmt.Sprintf("unknown group option %q", opts[0])
			}
			in.set("users", strings.Split(opts[1], ","))
			opts = opts[2:]
		}
		return in, "group", ""
	case "user":
		for len(opts) > 0 {
			if len(opts) < 2 {
				return nil, "", fmt.Sprintf("%q needs a value", opts[0])
			}
			switch opts[0] {
			case "password":
				in.set("password", opts[1])
			case "insecure-password":
				in.set("insecure_password", opts[1])
			case "groups":
				in.set("groups", strings.Split(opts[1], ","))
			default:
				return nil, "", fmt.Sprintf("unknown user option %q", opts[0])
			}
			opts = opts[2:]
		}
		return in, "user", ""
	}
	return nil, "", "unknown keyword"
}

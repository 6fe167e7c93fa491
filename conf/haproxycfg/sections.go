package haproxycfg

// The conversions of the peers and resolvers sections, and of the
// server-template line that resolvers feed.

import (
	"fmt"
	"strings"
)

// localPeer returns the global section's `localpeer` name, "" without
// one (the last line wins, as HAProxy).
func (c *converter) localPeer() string {
	name := ""
	for _, s := range c.f.sections {
		if s.kind != "global" {
			continue
		}
		for _, ln := range s.lines {
			if ln.kw(0) == "localpeer" && len(ln.words) == 2 {
				name = ln.kw(1)
			}
		}
	}
	return name
}

// convLocalPeer: the global `localpeer NAME` is written into each
// [[peers]] (fulcrum has it per section); the line stays as a comment.
func convLocalPeer(x *ctx) {
	if x.nargs() != 1 {
		x.skip(Unsupported, "expects one name")
		return
	}
	x.c.global.comment(x.ln.num, append(x.lead(),
		fmt.Sprintf("line %d, converted: localpeer = %q in each [[peers]] below", x.ln.num, x.arg(0)), x.ln.raw)...)
}

// incompletePeers returns the peers sections, by name, that have no peer
// named c.localName (with their header line): HAProxy removes them at
// start. None when no name is known (fulcrum import of a file without
// a global localpeer).
func (c *converter) incompletePeers() map[string]int {
	out := map[string]int{}
	if c.localName == "" {
		return out
	}
	for _, s := range c.f.sections {
		if s.kind != "peers" {
			continue
		}
		if !hasPeer(s, c.localName) {
			out[s.name] = s.hdr.num
		}
	}
	return out
}

// hasPeer reports whether peers section s has a peer (or server) named
// name.
func hasPeer(s *section, name string) bool {
	for _, ln := range s.lines {
		if (ln.kw(0) == "peer" || ln.kw(0) == "server") && ln.kw(1) == name {
			return true
		}
	}
	return false
}

// convertPeers writes a peers section as a [[peers]] table: each `peer
// NAME ADDR` line, or HAProxy 2.x's `bind ADDR` with `server NAME [ADDR]`
// lines (the server without an address is this instance, at the bind
// address), becomes an element of its peer list.
func (c *converter) convertPeers(s *section) {
	if _, removed := c.removedPeers[s.name]; removed && s.name != "" {
		c.commentSection(s, Ignored, fmt.Sprintf("HAProxy 2.6 removes this section too: no peer is named %q, this instance's name (-L/--localpeer, else the global localpeer, else the host name); the tables naming it are not shared", c.localName))
		// Its tables stay, unshared, as HAProxy keeps them.
		holder := &table{header: "[[peers]]"} // (comments of refused lines: lost with the section)
		for _, ln := range s.lines {
			if ln.kw(0) == "table" && !c.unreadable(holder, ln) {
				if tt := c.peersTable(s, holder, ln, false); tt != nil {
					c.body = append(c.body, tt)
				}
			}
		}
		return
	}
	t := c.namedTable(s, "[[peers]]")
	if t == nil {
		return
	}
	if lp := c.localPeer(); lp != "" && hasPeer(s, lp) {
		// (not a member: --localpeer names another one, which wins)
		t.set("localpeer", lp, 0).trail = "global localpeer"
	}
	bind := ""
	var tables []*table
	for _, ln := range s.lines {
		if ln.kw(0) == "bind" && len(ln.words) > 1 {
			bind = ln.kw(1)
		}
	}
	for _, ln := range s.lines {
		if c.unreadable(t, ln) {
			continue
		}
		args := ln.args(1)
		switch ln.kw(0) {
		case "peer", "server":
			if len(args) == 0 {
				c.commentLine(t, ln, Unsupported, "a peer needs a name")
				continue
			}
			addr, opts := "", []string(nil)
			if len(args) > 1 {
				addr, opts = args[1], args[2:]
			}
			if addr == "" {
				if ln.kw(0) == "peer" || bind == "" {
					c.commentLine(t, ln, Unsupported, "a peer needs an address (HAProxy: the local server takes the bind line's)")
					continue
				}
				addr = bind
			}
			a, err := addrFamily(addr)
			if err != nil {
				c.commentLine(t, ln, Unsupported, fmt.Sprintf("address %q: %v", addr, err))
				continue
			}
			in := &inline{}
			in.set("name", args[0])
			in.set("address", a)
			var lead []string
			if len(opts) > 0 {
				why := fmt.Sprintf("peer options %q: fulcrum's peers connections are plain TCP", strings.Join(opts, " "))
				c.note(ln, ln.kw(0), Unsupported, why)
				lead = append(lead, noteLine(ln, Unsupported, why))
			}
			t.add("peer", &elem{v: in, src: ln.num, lead: append(append([]string{}, ln.lead...), lead...), trail: ln.comment})
		case "bind":
			if len(args) > 1 {
				c.commentLine(t, ln, Unsupported, fmt.Sprintf("bind options %q: fulcrum's peers connections are plain TCP", strings.Join(args[1:], " ")))
				continue
			}
			t.comment(ln.num, append(append([]string{}, ln.lead...),
				fmt.Sprintf("line %d, converted: the address of the server line without one", ln.num), ln.raw)...)
		case "enable":
			c.commentLine(t, ln, Ignored, "sections are enabled")
		case "disabled":
			c.commentLine(t, ln, Unsupported, "disabled sections")
		case "table":
			if tt := c.peersTable(s, t, ln, true); tt != nil {
				tables = append(tables, tt)
			}
		case "log":
			c.commentLine(t, ln, Ignored, "fulcrum logs peers events to stderr")
		default:
			c.commentLine(t, ln, Unsupported, "unknown or unsupported peers keyword")
		}
	}
	c.body = append(c.body, t)
	c.body = append(c.body, tables...)
}

// peersTable converts a peers section's `table NAME type ... size ...
// [expire T] [store D,...]` line, HAProxy's stick-table declared in the
// section, into a [[table]] named as HAProxy names it, "<peers>/NAME"
// (which rules and the Runtime API use), shared through the section (its
// peers know it as NAME), unless shared is false (the section is removed:
// HAProxy keeps its tables, unshared). nil when the line is not
// converted: it is then a comment in pt, the section's [[peers]].
func (c *converter) peersTable(s *section, pt *table, ln *line, shared bool) *table {
	if ln.kw(1) == "" {
		c.commentLine(pt, ln, Unsupported, "a table needs a name")
		return nil
	}
	tt := &table{header: "[[table]]", src: ln.num}
	tt.set("name", s.name+"/"+ln.kw(1), ln.num)
	p := &proxy{sec: s, kind: "backend", name: s.name + "/" + ln.kw(1), be: tt, tableOnly: true, chk: map[string]chkVal{}}
	// (the line's comments go above the [[table]], not inside it)
	x := &ctx{c: c, p: p, ln: ln, row: &keyword{name: "table", side: sideAny, conv: convStickTable}, argi: 2, leadUsed: true}
	x.convert()
	if tt.get("type") == nil {
		// Refused whole: its comments go to the [[peers]].
		for _, e := range tt.entries {
			if e.key == "" {
				pt.entries = append(pt.entries, e)
			}
		}
		return nil
	}
	if shared {
		tt.set("peers", s.name, ln.num)
	}
	tt.lead = append([]string{}, ln.lead...)
	return tt
}

// resolversKeys are the one-value keywords of a resolvers section.
var resolversKeys = map[string]struct {
	key  string
	time bool
}{
	"accepted_payload_size": {key: "accepted_payload_size"},
	"resolve_retries":       {key: "resolve_retries"},
	"timeout resolve":       {key: "timeout_resolve", time: true},
	"timeout retry":         {key: "timeout_retry", time: true},
	"hold valid":            {key: "hold_valid", time: true},
	"hold obsolete":         {key: "hold_obsolete", time: true},
	"hold nx":               {key: "hold_nx", time: true},
	"hold timeout":          {key: "hold_timeout", time: true},
	"hold refused":          {key: "hold_refused", time: true},
	"hold other":            {key: "hold_other", time: true},
}

// convertResolvers writes a resolvers section as a [[resolvers]] table.
func (c *converter) convertResolvers(s *section) {
	t := c.namedTable(s, "[[resolvers]]")
	if t == nil {
		return
	}
	for _, ln := range s.lines {
		if c.unreadable(t, ln) {
			continue
		}
		kw := ln.kw(0)
		argi := 1
		if kw == "timeout" || kw == "hold" {
			kw, argi = kw+" "+ln.kw(1), 2
		}
		args := ln.args(argi)
		put := func(key string, v any) {
			e := t.set(key, v, ln.num)
			e.lead, e.trail = append(e.lead, ln.lead...), ln.comment
		}
		switch {
		case kw == "nameserver":
			if len(args) != 2 {
				c.commentLine(t, ln, Unsupported, "expects a name and an address")
				continue
			}
			why := fmt.Sprintf("name server %q is named by its address in show resolvers", args[0])
			c.note(ln, "nameserver", Differs, why)
			t.add("nameserver", &elem{v: args[1], src: ln.num,
				lead: append(append([]string{}, ln.lead...), noteLine(ln, Differs, why)), trail: ln.comment})
		case kw == "parse-resolv-conf":
			put("parse_resolv_conf", true)
		case resolversKeys[kw].key != "":
			rk := resolversKeys[kw]
			if len(args) != 1 {
				c.commentLine(t, ln, Unsupported, "expects one value")
				continue
			}
			if rk.time {
				d, err := haproxyTime(args[0])
				if err != nil {
					c.commentLine(t, ln, Unsupported, err.Error())
					continue
				}
				put(rk.key, d)
				continue
			}
			n, err := atoi(args[0])
			if err != nil {
				c.commentLine(t, ln, Unsupported, err.Error())
				continue
			}
			put(rk.key, n)
		default:
			c.commentLine(t, ln, Unsupported, "unknown or unsupported resolvers keyword")
		}
	}
	c.body = append(c.body, t)
}

// convServerTemplate: server-template PREFIX COUNT FQDN[:PORT] [options]
// becomes a [[backend.server_template]] with the server options.
func convServerTemplate(x *ctx) {
	prefix, count, spec := x.arg(0), x.arg(1), x.arg(2)
	if from, to, ok := strings.Cut(count, "-"); ok {
		// A range from 1 is a count: "1-3" makes PREFIX1..PREFIX3.
		if from != "1" {
			x.skip(Unsupported, fmt.Sprintf("a range of server numbers %q not starting at 1: fulcrum numbers a template's servers from 1", count))
			return
		}
		count = to
	}
	n, err := atoi(count)
	if err != nil {
		x.skip(Unsupported, "count: "+err.Error())
		return
	}
	if prefix == "" || spec == "" {
		x.skip(Unsupported, "expects a prefix, a count and a name")
		return
	}
	fqdn, port := spec, ""
	if i := strings.LastIndexByte(spec, ':'); i >= 0 {
		fqdn, port = spec[:i], spec[i+1:]
	}
	t := &table{header: "[[backend.server_template]]", src: x.ln.num}
	t.set("prefix", prefix, x.ln.num)
	t.set("count", n, x.ln.num)
	t.set("fqdn", fqdn, x.ln.num)
	if port != "" {
		p, err := atoi(port)
		if err != nil {
			x.skip(Unsupported, "port: "+err.Error())
			return
		}
		t.set("port", p, x.ln.num)
	}
	x.addServer(t, x.args()[3:])
}

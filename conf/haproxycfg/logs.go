package haproxycfg

// The conversions of the access log's keywords: `log` (global and per
// section), `log-format`, `option httplog`/`tcplog`/`httpslog`,
// `option dontlognull`, `capture request|response header` and the
// global `log-tag`. fulcrum's keys are HAProxy's: [[global.log]], a
// frontend's log list, log_format, capture_*_header, dontlognull.

import (
	"fmt"
	"strings"
)

// logTarget converts the words of a `log` line after the keyword
// (`<target> [len <n>] [format <f>] [sample <r>:<s>] <facility> [<level>
// [<minlevel>]]`, configuration manual 4.2 "log") into fulcrum's target
// keys, or says why it cannot be.
func logTarget(words []string) (*inline, string) {
	if len(words) == 0 {
		return nil, "no target"
	}
	in := &inline{}
	target := words[0]
	switch {
	case strings.HasPrefix(target, "ring@"):
		return nil, "ring buffers as log targets"
	case target == "fd@1":
		target = "stdout"
	case target == "fd@2":
		target = "stderr"
	case strings.HasPrefix(target, "fd@"):
		return nil, fmt.Sprintf("log target %q: fulcrum writes to stdout (fd@1) or stderr (fd@2) only", target)
	case strings.HasPrefix(target, "ipv4@"), strings.HasPrefix(target, "ipv6@"):
		target = target[len("ipv4@"):]
	}
	in.set("target", target)
	rest := words[1:]
	for len(rest) > 0 {
		switch rest[0] {
		case "len", "format":
			if len(rest) < 2 {
				return nil, fmt.Sprintf("%q without its value", rest[0])
			}
			if rest[0] == "len" {
				n, err := atoi(rest[1])
				if err != nil {
					return nil, "len: " + err.Error()
				}
				in.set("len", n)
			} else {
				in.set("format", rest[1])
			}
			rest = rest[2:]
			continue
		case "sample":
			return nil, "log sampling (fulcrum would send every line)"
		}
		break
	}
	if len(rest) == 0 {
		return nil, "no facility (HAProxy would refuse the line)"
	}
	if len(rest) > 3 {
		return nil, fmt.Sprintf("unexpected %q after the levels", rest[3])
	}
	in.set("facility", rest[0])
	if len(rest) > 1 {
		in.set("level", rest[1])
	}
	if len(rest) > 2 {
		in.set("min_level", rest[2])
	}
	return in, ""
}

// convGlobalLog: a global `log` line becomes a [[global.log]] table.
func convGlobalLog(x *ctx) {
	in, why := logTarget(x.args())
	if why != "" {
		x.skip(Unsupported, why)
		return
	}
	t := &table{header: "[[global.log]]", src: x.ln.num, lead: x.lead(), trail: x.trail()}
	for _, k := range in.keys {
		t.set(k, in.vals[k], x.ln.num)
	}
	x.c.global.subs = append(x.c.global.subs, t)
}

// convLog: `log global`, `log <target> ...` and `no log` in a frontend
// or listen section, or in defaults (written into each frontend that uses
// them, before its own lines: HAProxy adds a section's log lines to those
// of its defaults, where fulcrum's frontend list replaces [defaults]').
func convLog(x *ctx) {
	if x.p.fe == nil {
		if x.from == nil {
			x.skip(Ignored, "fulcrum logs a request with its frontend's log targets (HAProxy logs a backend's health checks there)")
		}
		return
	}
	if x.neg {
		x.put(x.p.fe, "log", []string{})
		return
	}
	if x.nargs() == 1 && x.arg(0) == "global" {
		in := &inline{}
		in.set("target", "global")
		x.push(x.p.fe, "log", in)
		return
	}
	in, why := logTarget(x.args())
	if why != "" {
		x.skip(Unsupported, why)
		return
	}
	x.push(x.p.fe, "log", in)
}

// convLogFormat: log-format "<format>", one argument as HAProxy 2.6
// requires.
func convLogFormat(x *ctx) {
	if x.nargs() != 1 {
		x.skip(Unsupported, "log-format expects one argument: quote the format (HAProxy 2.6 refuses it too)")
		return
	}
	x.put(x.side(sideFront), "log_format", sampleAliases(x.arg(0)))
}

// convHTTPLog: option httplog [clf], option httpslog and option tcplog
// choose one of HAProxy's predefined formats.
func convHTTPLog(x *ctx) {
	name := "httplog"
	switch {
	case x.row.name == "option tcplog":
		name = "tcplog"
	case x.row.name == "option httpslog":
		x.part(Differs, "httpslog's TLS fields are not logged: the httplog format is used")
	case x.arg(0) == "clf":
		name = "clf"
	case x.nargs() > 0:
		x.skip(Unsupported, fmt.Sprintf("unknown httplog argument %q (HAProxy would refuse it)", x.arg(0)))
		return
	}
	x.put(x.side(sideFront), "log_format", name)
}

// convCapture: capture request|response header <name> len <length>.
func convCapture(x *ctx) {
	if x.nargs() != 3 || x.arg(1) != "len" {
		x.skip(Unsupported, "expects <name> len <length> (HAProxy would refuse it)")
		return
	}
	n, err := atoi(x.arg(2))
	if err != nil {
		x.skip(Unsupported, "len: "+err.Error())
		return
	}
	key := "capture_request_header"
	if x.row.name == "capture response header" {
		key = "capture_response_header"
	}
	in := &inline{}
	in.set("name", x.arg(0))
	in.set("len", n)
	x.push(x.p.fe, key, in)
}

// defaultLogFormat gives a frontend that sends its log lines somewhere
// but names no format the line HAProxy logs then (configuration manual
// 8.2.1, "Default log format"): "Connect from <client> to <listener>
// (<frontend>/<MODE>)". HAProxy writes it when the connection is
// accepted; fulcrum when each request (tcp: connection) ends, noted.
func (c *converter) defaultLogFormat(p *proxy) {
	e := p.fe.get("log")
	if e == nil {
		return
	}
	if list, _ := e.v.([]*elem); len(list) == 0 {
		return
	}
	if p.fe.get("log_format") != nil || c.defaults != nil && c.defaults.get("log_format") != nil {
		return
	}
	mode := "tcp"
	for _, t := range []*table{p.fe, c.defaults} {
		if t == nil {
			continue
		}
		if m := t.get("mode"); m != nil {
			mode, _ = m.v.(string)
			break
		}
	}
	f := p.fe.set("log_format", "Connect from %ci:%cp to %fi:%fp (%f/"+strings.ToUpper(mode)+")", 0)
	f.trail = "HAProxy's line without option httplog, tcplog or log-format"
	why := "no option httplog, tcplog or log-format: HAProxy logs \"Connect from\" when a connection is accepted, fulcrum the same line when each request (tcp: connection) ends"
	c.note(p.sec.hdr, p.kind, Differs, why)
	p.fe.lead = append(p.fe.lead, noteLine(p.sec.hdr, Differs, why))
}

package runtime

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/fulcrum-proxy/fulcrum/conf"
	"github.com/fulcrum-proxy/fulcrum/proxy"
)

// `show config-diff`, fulcrum's own: what the running configuration has
// that its file does not, written in the file's TOML so that an operator
// can carry it back into the file: servers added and deleted at runtime,
// and the weights, admin states, addresses and maxconn set at runtime. The
// file is the configuration as it was loaded (at start or the last
// reload); an empty reply means the running servers are the file's.
var configDiffCommands = []Command{
	{Words: []string{"show", "config-diff"}, Level: LevelOperator, Usage: "show config-diff",
		Help: "show what the running servers have that the configuration file does not, in its TOML", Run: showConfigDiff},
}

func showConfigDiff(c *Context, args []string) error {
	WriteConfigDiff(c, c.Proxy)
	return nil
}

// WriteConfigDiff writes `show config-diff` for p to w: per backend that
// differs, a comment naming it, then
//   - for a server of the file changed at runtime, a comment and the keys
//     to set in its [[backend.server]] table, each with the file's value
//     in a comment;
//   - for a server of the file deleted at runtime, a comment saying to
//     remove its table;
//   - for a server added at runtime, its whole [[backend.server]] table:
//     every key whose value is not what the backend's default_server
//     gives (an added server does not take default_server's settings, as
//     HAProxy's), its weight and state as they are now.
//
// A DRAIN state and an id given by an operator have no key in the file:
// they are comments.
func WriteConfigDiff(w io.Writer, p *proxy.Proxy) {
	file := p.Conf.File
	if file == "" {
		file = "the configuration"
	}
	at := func(line int) string {
		if line <= 0 {
			return ""
		}
		return " (" + file + ":" + strconv.Itoa(line) + ")"
	}
	confs := map[string]*conf.Backend{}
	for _, cb := range p.Conf.Backends {
		confs[cb.Name] = cb
	}
	first := true
	for _, b := range p.Backends {
		cb := confs[b.Name]
		if cb == nil {
			continue
		}
		var out strings.Builder
		running := map[string]*proxy.Server{}
		for _, s := range b.Servers() {
			running[s.Name] = s
		}
		for _, sc := range cb.Servers {
			s := running[sc.Name]
			if sc.Template != "" {
				writeSlotChanges(&out, s, sc, at(sc.Line))
				continue
			}
			if s == nil || s.Dynamic() {
				fmt.Fprintf(&out, "\n# server %q%s: deleted at runtime; remove its [[backend.server]] table\n", sc.Name, at(sc.Line))
				continue
			}
			keys, comments, notes := serverChanges(s, sc)
			if len(keys) == 0 && len(notes) == 0 {
				continue
			}
			fmt.Fprintf(&out, "\n# server %q%s: changed at runtime; in its [[backend.server]] table:\n", sc.Name, at(sc.Line))
			for _, n := range notes {
				fmt.Fprintf(&out, "# %s\n", n)
			}
			conf.WriteTOMLKeys(&out, keys, comments)
		}
		base := cb.DefaultServer
		if base == nil {
			base = conf.BuiltinDefaultServer()
		}
		for _, s := range b.Servers() {
			if !s.Dynamic() {
				continue
			}
			sc := *s.Conf
			sc.Address = s.Addr()
			sc.Weight = int(s.UserWeight.Load())
			sc.MaxConn = s.MaxConn()
			sc.Disabled = s.Admin() == proxy.AdminMaint
			fmt.Fprintf(&out, "\n# server %q: added at runtime (id %d)\n", s.Name, s.ID)
			if s.Admin() == proxy.AdminDrain {
				out.WriteString("# in DRAIN: the file has no key for it (weight = 0 keeps only persistent clients)\n")
			}
			if s.ForcedID() {
				fmt.Fprintf(&out, "# its id %d was given with `id`: the file numbers servers by their place\n", s.ID)
			}
			out.WriteString("[[backend.server]]\n")
			conf.WriteTOMLKeys(&out, conf.ServerTOMLKeys(&sc, base), nil)
		}
		if out.Len() > 0 {
			if !first {
				io.WriteString(w, "\n")
			}
			first = false
			fmt.Fprintf(w, "# backend %q%s\n", b.Name, at(cb.Line))
			io.WriteString(w, strings.TrimPrefix(out.String(), "\n"))
		}
	}
}

// serverChanges returns what an operator changed at runtime on s, a server
// of the file defined by sc: the keys to set, the file's value of each (as
// comments), and notes for what has no key.
func serverChanges(s *proxy.Server, sc *conf.Server) (keys []conf.TOMLKey, comments map[string]string, notes []string) {
	comments = map[string]string{}
	add := func(k, v, was string) {
		keys = append(keys, conf.TOMLKey{Key: k, Value: v})
		comments[k] = "file: " + was
	}
	if a := s.Addr(); a != sc.Address && s.DNS() == nil { // DNS's address is not the operator's
		add("address", conf.TOMLString(a), conf.TOMLString(sc.Address))
	}
	if w := int(s.UserWeight.Load()); w != sc.Weight {
		add("weight", strconv.Itoa(w), strconv.Itoa(sc.Weight))
	}
	if m := s.MaxConn(); m != sc.MaxConn {
		add("maxconn", strconv.Itoa(m), strconv.Itoa(sc.MaxConn))
	}
	switch a := s.OperatorAdmin(); { // MAINT (resolution) is DNS's, not the operator's
	case a == proxy.AdminMaint && !sc.Disabled:
		add("disabled", "true", "false (MAINT set at runtime)")
	case a != proxy.AdminMaint && sc.Disabled:
		add("disabled", "false", "true ("+a.String()+" set at runtime)")
	}
	if s.Admin() == proxy.AdminDrain {
		notes = append(notes, "in DRAIN: the file has no key for it (weight = 0 keeps only persistent clients)")
	}
	return keys, comments, notes
}

// writeSlotChanges writes what an operator changed at runtime on a slot
// of a [[backend.server_template]] (sc; s the running server, nil once
// deleted): a template has no per-slot key, so these are comments. What
// DNS changed (address, port, SRV weight, MAINT (resolution)) is not an
// operator's change and is not written.
func writeSlotChanges(out *strings.Builder, s *proxy.Server, sc *conf.Server, at string) {
	if s == nil || s.Dynamic() {
		fmt.Fprintf(out, "\n# server %q%s: slot of server_template %q, deleted at runtime; the template makes it again at a reload\n",
			sc.Name, at, sc.Template)
		return
	}
	var set string
	switch a := s.OperatorAdmin(); {
	case a == proxy.AdminMaint && !sc.Disabled, a == proxy.AdminDrain:
		set = a.String()
	case a != proxy.AdminMaint && sc.Disabled:
		set = a.String()
	}
	if set != "" {
		fmt.Fprintf(out, "\n# server %q%s: slot of server_template %q, %s set at runtime; a server_template has no per-slot key for it\n",
			sc.Name, at, sc.Template, set)
	}
}

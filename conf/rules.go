package conf

// ACLs and rules: compiled through proxy/acl at load, so that `fulcrum
// check` reports every bad expression, unknown fetch, unknown ACL, bad
// regular expression or unreadable -f file with its line, and the proxy
// gets the compiled rules in the model.

import (
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/fulcrum-proxy/fulcrum/proxy/acl"
)

// aclDefinitions is the value of one name in an `acl` table: one
// expression, or a list of them that OR together (HAProxy's several
// "acl NAME ..." lines of one name).
type aclDefinitions []string

var aclDefinitionsType = reflect.TypeFor[aclDefinitions]()

// decodeACLDefinitions reads a string or an array of strings.
func (s scope) decodeACLDefinitions(data any, rv reflect.Value) bool {
	if v, ok := data.(string); ok {
		rv.Set(reflect.ValueOf(aclDefinitions{v}))
		return true
	}
	if _, ok := data.([]any); !ok {
		s.errorf("expected a string or an array of strings, got %s", describeValue(data))
		return false
	}
	return s.decodeArray(data, rv)
}

// validateACLs checks that every ACL definition is non-empty.
func validateACLs(s scope, acls map[string]aclDefinitions) {
	for _, name := range slices.Sorted(maps.Keys(acls)) {
		defs := acls[name]
		if len(defs) == 0 {
			s.at(name).errorf("needs a condition")
		}
		for j, d := range defs {
			if isBlank(d) {
				at := s.at(name)
				if len(defs) > 1 {
					at = at.item(j)
				}
				at.errorf("needs a condition, got %q", d)
			}
		}
	}
}

func isBlank(v string) bool {
	for _, r := range v {
		if r != ' ' && r != '\t' {
			return false
		}
	}
	return true
}

// compileRules compiles the ACLs and rules of every frontend and backend
// into one pattern registry (numbered in file order, as `show acl`).
// Problems are reported on the key holding the expression.
func (f *fileSection) compileRules(s scope) *acl.Registry {
	reg := acl.NewRegistry(s.c.file)
	reg.SetUserlists(f.compileUserlists(s))
	reg.SetTables(f.tableNames())
	for i, fe := range f.Frontends {
		item := s.at("frontend").item(i)
		sc := reg.NewScope()
		sc.SetProxy(fe.Name)
		defineACLs(item.at("acl"), fe.ACL, sc)
		rs := &acl.Rules{}
		for j, text := range fe.TCPRequest {
			at := item.at("tcp_request").item(j)
			if r, err := sc.TCPRule(text, at.line()); err != nil {
				at.errorf("%v", err)
			} else {
				rs.TCPConnection = append(rs.TCPConnection, r)
			}
		}
		rs.HTTP = compileHTTP(item.at("http_request"), fe.HTTPRequest, sc, fe.Mode, sc.HTTPRule)
		rs.HTTPResponse = compileHTTP(item.at("http_response"), fe.HTTPResponse, sc, fe.Mode, sc.HTTPResponseRule)
		for j, u := range fe.UseBackend {
			at := item.at("use_backend").item(j)
			rule := acl.UseBackendRule{Backend: u.Backend}
			var err error
			switch {
			case u.If != "":
				at = at.at("if")
				rule.Cond, err = sc.Condition(u.If, false, at.line())
			case u.Unless != "":
				at = at.at("unless")
				rule.Cond, err = sc.Condition(u.Unless, true, at.line())
			}
			if err != nil {
				at.errorf("%v", err)
				continue
			}
			rs.UseBackend = append(rs.UseBackend, rule)
		}
		if st := fe.Stats; st != nil && strings.TrimSpace(st.Admin) != "" {
			at := item.at("stats").at("admin")
			cond, err := sc.Condition(statsAdminCondition(st.Admin), false, at.line())
			if err != nil {
				at.errorf("%v", err)
			} else {
				st.adminCond = cond
			}
		}
		fe.rules = rs
		fe.compileLog(item, sc)
	}
	for i, be := range f.Backends {
		item := s.at("backend").item(i)
		sc := reg.NewScope()
		sc.SetProxy(be.Name)
		defineACLs(item.at("acl"), be.ACL, sc)
		be.rules = &acl.Rules{
			HTTP:         compileHTTP(item.at("http_request"), be.HTTPRequest, sc, be.Mode, sc.HTTPRule),
			HTTPResponse: compileHTTP(item.at("http_response"), be.HTTPResponse, sc, be.Mode, sc.HTTPResponseRule),
		}
		for j, text := range be.Stick {
			if isBlank(text) {
				continue // reported by validate
			}
			at := item.at("stick").item(j)
			r, err := sc.StickRule(text, at.line())
			switch {
			case err != nil:
				at.errorf("%v", err)
			case r.Expr.L7() && be.Mode != nil && *be.Mode != ModeHTTP:
				at.errorf("'%s' needs mode http", r.Expr)
			default:
				be.stickRules = append(be.stickRules, r)
			}
		}
	}
	return reg
}

// tableNames returns the names of the stick tables: the frontends' and
// backends' (named as their section) and the [[table]]s.
func (f *fileSection) tableNames() map[string]bool {
	names := map[string]bool{}
	for _, fe := range f.Frontends {
		if fe.StickTable != nil {
			names[fe.Name] = true
		}
	}
	for _, be := range f.Backends {
		if be.StickTable != nil {
			names[be.Name] = true
		}
	}
	for _, t := range f.Tables {
		names[t.Name] = true
	}
	return names
}

// checkTables checks that table names are unique (a frontend's or
// backend's table is named as its section) and that every table a stick or
// track-sc rule uses exists.
func (f *fileSection) checkTables(s scope) {
	tables := map[string]int{}
	add := func(at scope, name string) {
		if first, dup := tables[name]; dup {
			at.errorf("duplicate stick table name %q, first defined at line %d", name, first)
			return
		}
		tables[name] = at.line()
	}
	for i, fe := range f.Frontends {
		if fe.StickTable != nil {
			add(s.at("frontend").item(i).at("stick_table"), fe.Name)
		}
	}
	for i, be := range f.Backends {
		if be.StickTable != nil {
			add(s.at("backend").item(i).at("stick_table"), be.Name)
		}
	}
	for i, t := range f.Tables {
		add(s.at("table").item(i).at("name"), t.Name)
	}
	need := func(at scope, table string, own bool, what string) {
		switch {
		case table == "" && !own:
			at.errorf("%s: no stick table in this section (add stick_table or 'table <name>')", what)
		case table != "":
			if _, ok := tables[table]; !ok {
				at.errorf("%s: unknown stick table %q", what, table)
			}
		}
	}
	track := func(at scope, rules []*acl.Rule, texts []string, own bool) {
		for _, r := range rules {
			if r.Action == acl.ActTrackSC {
				need(at.item(slices.Index(texts, r.Text)), r.TrackTable(), own, "track-sc"+strconv.Itoa(r.TrackSlot()))
			}
		}
	}
	for i, fe := range f.Frontends {
		item := s.at("frontend").item(i)
		track(item.at("tcp_request"), fe.rules.TCPRules(), fe.TCPRequest, fe.StickTable != nil)
		track(item.at("http_request"), fe.rules.HTTPRules(), fe.HTTPRequest, fe.StickTable != nil)
	}
	for i, be := range f.Backends {
		item := s.at("backend").item(i)
		track(item.at("http_request"), be.rules.HTTPRules(), be.HTTPRequest, be.StickTable != nil)
		for _, r := range be.stickRules {
			j := slices.Index(be.Stick, r.Text)
			need(item.at("stick").item(j), r.Table, be.StickTable != nil, "stick")
		}
	}
}

// defineACLs defines the named ACLs of a section, in file order.
func defineACLs(s scope, acls map[string]aclDefinitions, sc *acl.Scope) {
	for _, name := range s.sortedKeys(anyKeys(acls)) {
		defs := acls[name]
		for j, expr := range defs {
			at := s.at(name)
			if len(defs) > 1 {
				at = at.item(j)
			}
			if isBlank(expr) {
				continue // reported by validate
			}
			if err := sc.Define(name, expr, at.line()); err != nil {
				at.errorf("%v", err)
			}
		}
	}
}

// compileHTTP compiles a section's http_request or http_response rules
// (s is the key, compile the scope's compiler for it).
func compileHTTP(s scope, texts []string, sc *acl.Scope, mode *Mode, compile func(string, int) (*acl.Rule, error)) []*acl.Rule {
	var out []*acl.Rule
	for j, text := range texts {
		at := s.item(j)
		if mode != nil && *mode != ModeHTTP {
			at.errorf("%s rules need mode http", s.p[len(s.p)-1])
			continue
		}
		if isBlank(text) {
			continue // reported by validate
		}
		if r, err := compile(text, at.line()); err != nil {
			at.errorf("%v", err)
		} else {
			out = append(out, r)
		}
	}
	return out
}

// anyKeys returns m with its values dropped, for scope.sortedKeys.
func anyKeys(m map[string]aclDefinitions) map[string]any {
	out := make(map[string]any, len(m))
	for k := range m {
		out[k] = nil
	}
	return out
}

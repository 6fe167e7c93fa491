package conf

// ACLs and rules: compiled through proxy/acl at load, so that `fulcrum
// check` reports every bad expression, unknown fetch, unknown ACL, bad
// regular expression or unreadable -f file with its line, and the proxy
// gets the compiled rules in the model.

import (
	"maps"
	"reflect"
	"slices"
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
	for i, fe := range f.Frontends {
		item := s.at("frontend").item(i)
		sc := reg.NewScope()
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
		rs.HTTP = compileHTTP(item.at("http_request"), fe.HTTPRequest, sc, fe.Mode)
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
	}
	for i, be := range f.Backends {
		item := s.at("backend").item(i)
		sc := reg.NewScope()
		defineACLs(item.at("acl"), be.ACL, sc)
		be.rules = &acl.Rules{HTTP: compileHTTP(item.at("http_request"), be.HTTPRequest, sc, be.Mode)}
	}
	return reg
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

// compileHTTP compiles a section's http_request rules.
func compileHTTP(s scope, texts []string, sc *acl.Scope, mode *Mode) []*acl.Rule {
	var out []*acl.Rule
	for j, text := range texts {
		at := s.item(j)
		if mode != nil && *mode != ModeHTTP {
			at.errorf("http_request rules need mode http")
			continue
		}
		if isBlank(text) {
			continue // reported by validate
		}
		if r, err := sc.HTTPRule(text, at.line()); err != nil {
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

package conf

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// defaulted returns each section struct as setDefaults leaves an empty one,
// with its inheritance from an empty [defaults] or default_server. Every
// struct with toml tags must be here: TestDocDefaults fails on one that is
// missing, so that a new section cannot skip the check.
func defaulted() map[string]any {
	defaults := func() *defaultsSection {
		d := &defaultsSection{}
		d.setDefaults()
		return d
	}
	serverDefaults := func() *serverParams {
		sp := &serverParams{}
		sp.setDefaults()
		return sp
	}
	return map[string]any{
		"fileSection": nil, // only tables, checked one by one
		"globalSection": func() any {
			g := &globalSection{}
			g.setDefaults()
			return g
		}(),
		"statsSocketSection": func() any {
			ss := &statsSocketSection{}
			ss.setDefaults()
			return ss
		}(),
		"defaultsSection": defaults(),
		"frontendSection": func() any {
			f := &frontendSection{}
			f.setDefaults(defaults())
			return f
		}(),
		"useBackendRule": &useBackendRule{}, // no defaults
		"statsPageSection": func() any {
			sp := &statsPageSection{}
			sp.setDefaults()
			return sp
		}(),
		"backendSection": func() any {
			b := &backendSection{}
			b.setDefaults(defaults())
			return b
		}(),
		"cookieSection": func() any {
			ck := &cookieSection{}
			ck.setDefaults()
			return ck
		}(),
		"stickTableSection": &stickTableSection{}, // no defaults
		"tableSection":      &tableSection{},      // no defaults
		"peersSection":      &peersSection{},      // no defaults
		"peerEntry":         &peerEntry{},         // no defaults
		"userlistSection":   &userlistSection{},   // no defaults
		"userlistGroup":     &userlistGroup{},     // no defaults
		"userlistUser":      &userlistUser{},      // no defaults
		"checkSection": func() any {
			ch := &checkSection{}
			ch.setDefaults()
			return ch
		}(),
		"serverParams": serverDefaults(),
		"serverSection": func() any {
			srv := &serverSection{}
			srv.setDefaults(serverDefaults())
			return srv
		}(),
		"logTargetSection": func() any {
			l := &logTargetSection{}
			l.setDefaults()
			return l
		}(),
		"captureSection": &captureSection{}, // no defaults
		"resolversSection": func() any {
			r := &resolversSection{}
			r.setDefaults()
			return r
		}(),
		"serverTemplateSection": func() any {
			st := &serverTemplateSection{}
			st.serverParams.inherit(serverDefaults())
			return st
		}(),
		"agentSection": func() any {
			a := &agentSection{}
			a.setDefaults()
			return a
		}(),
	}
}

// docDefault finds the default a field comment states: the first
// `default <literal>` (any case, optional colon), where the literal is a
// TOML string, integer or boolean. "Inherited from [defaults]; default
// "30s"" states "30s".
var docDefault = regexp.MustCompile(`(?i)\bdefault:?\s+("[^"]*"|-?\d+|true\b|false\b)`)

// sectionComments returns, for each struct type with toml tags in the
// package's non-test files, its fields' doc comments by field name.
func sectionComments(t *testing.T) map[string]map[string]string {
	t.Helper()
	fset := token.NewFileSet()
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]string{}
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, name, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			ts, ok := n.(*ast.TypeSpec)
			if !ok {
				return true
			}
			st, ok := ts.Type.(*ast.StructType)
			if !ok {
				return true
			}
			fields := map[string]string{}
			tagged := false
			for _, f := range st.Fields.List {
				if f.Tag != nil && strings.Contains(f.Tag.Value, `toml:"`) {
					tagged = true
				}
				for _, name := range f.Names {
					fields[name.Name] = f.Doc.Text()
				}
			}
			if tagged {
				out[ts.Name.Name] = fields
			}
			return true
		})
	}
	return out
}

// TestDocDefaults checks that the default each field comment states is the
// value setDefaults gives, and that setDefaults gives no default that the
// comments do not state.
func TestDocDefaults(t *testing.T) {
	values := defaulted()
	all := sectionComments(t)
	for typeName, comments := range all {
		v, ok := values[typeName]
		if !ok {
			t.Errorf("%s: has toml tags but is not in defaulted(); add it", typeName)
			continue
		}
		if v == nil {
			continue
		}
		checkStructDefaults(t, typeName, reflect.ValueOf(v).Elem(), comments, all)
	}
}

// checkStructDefaults checks the fields of one defaulted section, and those
// of an embedded struct (a server's serverParams) against that struct's
// comments, so that inheriting them is checked too.
func checkStructDefaults(t *testing.T, typeName string, rv reflect.Value, comments map[string]string, all map[string]map[string]string) {
	t.Helper()
	for i := range rv.NumField() {
		sf := rv.Type().Field(i)
		if sf.Anonymous && sf.Type.Kind() == reflect.Struct {
			checkStructDefaults(t, typeName, rv.Field(i), all[sf.Type.Name()], all)
			continue
		}
		if sf.Tag.Get("toml") == "" {
			continue
		}
		key := typeName + "." + sf.Tag.Get("toml")
		checkDocDefault(t, key, comments[sf.Name], rv.Field(i))
	}
}

// checkDocDefault compares one field's stated default with its value.
func checkDocDefault(t *testing.T, key, doc string, fv reflect.Value) {
	t.Helper()
	if doc == "" {
		t.Errorf("%s: no doc comment; each key's comment is its reference", key)
	}
	m := docDefault.FindStringSubmatch(doc)
	isPtr := fv.Kind() == reflect.Pointer
	if isPtr && fv.Type().Elem().Kind() == reflect.Struct || fv.Kind() == reflect.Slice || fv.Kind() == reflect.Map {
		if m != nil {
			t.Errorf("%s: comment states default %s for a table or list", key, m[1])
		}
		return
	}
	if isPtr {
		if fv.IsNil() {
			if m != nil {
				t.Errorf("%s: comment states default %s, setDefaults leaves it unset", key, m[1])
			} else {
				t.Errorf("%s: setDefaults leaves it unset; the model needs a value", key)
			}
			return
		}
		fv = fv.Elem()
	}
	if m == nil {
		if !fv.IsZero() {
			t.Errorf("%s: setDefaults gives %v, the comment states no default", key, fv.Interface())
		}
		return
	}
	lit := m[1]
	var want any
	switch {
	case fv.Type() == durationType:
		d, err := ParseDuration(strings.Trim(lit, `"`))
		if err != nil {
			t.Errorf("%s: comment states default %s: %v", key, lit, err)
			return
		}
		want = d
	case fv.Kind() == reflect.String:
		s, err := strconv.Unquote(lit)
		if err != nil {
			t.Errorf("%s: comment states default %s, want a quoted string", key, lit)
			return
		}
		want = reflect.ValueOf(s).Convert(fv.Type()).Interface()
	case fv.Kind() == reflect.Int:
		n, err := strconv.Atoi(lit)
		if err != nil {
			t.Errorf("%s: comment states default %s, want an integer", key, lit)
			return
		}
		want = n
	case fv.Kind() == reflect.Bool:
		want = lit == "true" || lit == "True" || lit == "TRUE"
	}
	if got := fv.Interface(); got != want {
		t.Errorf("%s: setDefaults gives %v, the comment states %s", key, got, lit)
	}
}

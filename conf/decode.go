package conf

// Decoding the TOML tree into the section structs.
//
// BurntSushi/toml's struct decoding stops at the first value of the wrong
// type, and MetaData.Undecoded, which lists unknown keys, is only meaningful
// once decoding succeeded. fulcrum reports every problem of a file at once,
// so the toml package is used for what it does well, parsing (syntax errors
// come from it, with their line), into a generic tree; decode then walks that
// tree against the section structs by reflection and their `toml` tags, and
// records every unknown key and every value of the wrong type under its full
// path, and carries on. Values that failed are left unset, so that defaults
// apply and later checks do not report the same key twice.

import (
	"cmp"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/fulcrum-proxy/fulcrum/proxy/tlsx"
)

// checker holds what every step of loading one file shares: the file name,
// the generic TOML tree, the key positions and the problems found so far.
type checker struct {
	file   string
	tree   map[string]any
	pos    positions
	errs   []Error
	failed map[string]bool // path keys that already have a problem
	warns  []Error         // what loads but deserves a look (an expired certificate)
	tls    *tlsx.Loader    // the binds' certificates, read once (tlsLoader)
}

// tlsLoader returns the loader of the binds' TLS files, which resolves
// relative paths against the configuration file's directory.
func (c *checker) tlsLoader() *tlsx.Loader {
	if c.tls == nil {
		c.tls = tlsx.NewLoader(filepath.Dir(c.file))
	}
	return c.tls
}

// where returns "FILE:LINE" for line of the file.
func (c *checker) where(line int) string {
	file := c.file
	if file == "" {
		file = "config"
	}
	return fmt.Sprintf("%s:%d", file, line)
}

// scope is a place in the file that checks report problems about: a section,
// a key or an array element.
type scope struct {
	c *checker
	p path
}

// at returns the scope of key inside s.
func (s scope) at(key string) scope { return scope{s.c, s.p.child(key)} }

// item returns the scope of element i of the array at s.
func (s scope) item(i int) scope { return scope{s.c, s.p.index(i)} }

// line returns the line of s, or of its nearest enclosing table.
func (s scope) line() int { return s.c.pos.line(s.p) }

// errorf records a problem with the value at s, as `FILE:LINE: PATH: msg`.
// A place that already has a problem, or sits inside one that has, gets no
// second one: one bad value is reported once.
func (s scope) errorf(format string, args ...any) {
	for n := len(s.p); n > 0; n-- {
		if s.c.failed[s.p[:n].key()] {
			return
		}
	}
	s.c.failed[s.p.key()] = true
	msg := fmt.Sprintf(format, args...)
	if d := s.c.describe(s.p); d != "" {
		msg = d + ": " + msg
	}
	s.c.errs = append(s.c.errs, Error{File: s.c.file, Line: s.line(), Msg: msg})
}

// warnf records a warning about the value at s, as `FILE:LINE: PATH:
// msg`: the file loads, but the operator should know.
func (s scope) warnf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if d := s.c.describe(s.p); d != "" {
		msg = d + ": " + msg
	}
	s.c.warns = append(s.c.warns, Error{File: s.c.file, Line: s.line(), Msg: msg})
}

// labelKeys names the key whose value labels an element of an array of
// tables in messages: `backend "web"` reads better than `backend #2`.
var labelKeys = map[string]string{
	"frontend":        "name",
	"backend":         "name",
	"server":          "name",
	"stats_socket":    "path",
	"peers":           "name",
	"peer":            "name",
	"table":           "name",
	"resolvers":       "name",
	"server_template": "prefix",
	"userlist":        "name",
	"group":           "name",
	"user":            "name",
}

// describe returns p the way messages name it: `backend "web": server "s2":
// weight`. An array element is labelled by its name when it has one, else by
// its 1-based position: `use_backend #2`, `bind #1`.
func (c *checker) describe(p path) string {
	var parts []string
	var node any = c.tree
	for i := 0; i < len(p); i++ {
		key := p[i]
		node = lookup(node, key)
		if i+1 < len(p) && isIndex(p[i+1]) {
			n := indexOf(p[i+1])
			node = lookup(node, p[i+1])
			label := fmt.Sprintf("%s #%d", quoteKey(key), n+1)
			if m, ok := node.(map[string]any); ok {
				if name, ok := m[labelKeys[key]].(string); ok && name != "" && labelKeys[key] != "" {
					label = fmt.Sprintf("%s %q", quoteKey(key), name)
				}
			}
			parts = append(parts, label)
			i++
			continue
		}
		parts = append(parts, quoteKey(key))
	}
	return strings.Join(parts, ": ")
}

// lookup returns the child of a tree node by key or "[i]" index, or nil.
func lookup(node any, elem string) any {
	switch n := node.(type) {
	case map[string]any:
		return n[elem]
	case []map[string]any:
		if i := indexOf(elem); i >= 0 && i < len(n) {
			return n[i]
		}
	case []any:
		if i := indexOf(elem); i >= 0 && i < len(n) {
			return n[i]
		}
	}
	return nil
}

var durationType = reflect.TypeFor[Duration]()

// decode stores data, the tree value at s, into rv, whose type is a section
// struct or one of its field types. It reports unknown keys and values of the
// wrong type and returns false when the value at s itself was unusable (rv is
// then left as it was). A struct with bad keys inside still returns true.
func (s scope) decode(data any, rv reflect.Value) bool {
	t := rv.Type()
	switch {
	case t == durationType:
		return s.decodeDuration(data, rv)
	case t == aclDefinitionsType:
		return s.decodeACLDefinitions(data, rv)
	case t.Kind() == reflect.Pointer:
		// A pointer is set only when its value decoded, so that a bad value
		// counts as unset; but a section is always allocated, even from a
		// value that is not a table, so that code after decoding never meets
		// a nil element in a list of sections.
		v := reflect.New(t.Elem())
		ok := s.decode(data, v.Elem())
		if ok || t.Elem().Kind() == reflect.Struct {
			rv.Set(v)
		}
		return ok
	}
	switch t.Kind() {
	case reflect.String:
		v, ok := data.(string)
		if !ok {
			s.errorf("expected a string, got %s", describeValue(data))
			return false
		}
		rv.SetString(v)
	case reflect.Int:
		v, ok := data.(int64)
		if !ok {
			s.errorf("expected an integer, got %s", describeValue(data))
			return false
		}
		if rv.OverflowInt(v) {
			s.errorf("out of range, got %d", v)
			return false
		}
		rv.SetInt(v)
	case reflect.Bool:
		v, ok := data.(bool)
		if !ok {
			s.errorf("expected true or false, got %s", describeValue(data))
			return false
		}
		rv.SetBool(v)
	case reflect.Slice:
		return s.decodeArray(data, rv)
	case reflect.Map:
		return s.decodeMap(data, rv)
	case reflect.Struct:
		return s.decodeTable(data, rv)
	default:
		panic("conf: no decoding for field type " + t.String())
	}
	return true
}

// decodeDuration reads a duration string. A TOML number gets its own message:
// it is the likeliest mistake, from HAProxy's unitless milliseconds.
func (s scope) decodeDuration(data any, rv reflect.Value) bool {
	switch v := data.(type) {
	case string:
		d, err := ParseDuration(v)
		if err != nil {
			s.errorf("%v", err)
			return false
		}
		rv.Set(reflect.ValueOf(d))
		return true
	case int64, float64:
		s.errorf("duration needs a unit, got %v", v)
	default:
		s.errorf("expected a duration such as \"5s\", got %s", describeValue(data))
	}
	return false
}

// decodeArray reads a TOML array, or an array of tables, into a slice.
func (s scope) decodeArray(data any, rv reflect.Value) bool {
	var elems []any
	switch v := data.(type) {
	case []any:
		elems = v
	case []map[string]any:
		for _, m := range v {
			elems = append(elems, m)
		}
	default:
		if rv.Type().Elem().Kind() == reflect.String {
			s.errorf("expected an array of strings, got %s", describeValue(data))
		} else {
			s.errorf("expected an array of tables, got %s", describeValue(data))
		}
		return false
	}
	out := reflect.MakeSlice(rv.Type(), len(elems), len(elems))
	for i, e := range elems {
		s.item(i).decode(e, out.Index(i))
	}
	rv.Set(out)
	return true
}

// decodeMap reads a table of free-form keys (such as acl) into a map.
func (s scope) decodeMap(data any, rv reflect.Value) bool {
	m, ok := data.(map[string]any)
	if !ok {
		s.errorf("expected a table, got %s", describeValue(data))
		return false
	}
	out := reflect.MakeMapWithSize(rv.Type(), len(m))
	for _, k := range s.sortedKeys(m) {
		v := reflect.New(rv.Type().Elem()).Elem()
		if s.at(k).decode(m[k], v) {
			out.SetMapIndex(reflect.ValueOf(k), v)
		}
	}
	rv.Set(out)
	return true
}

// decodeTable reads a TOML table into a section struct; every key without a
// field is reported as unknown, with its full schema path.
func (s scope) decodeTable(data any, rv reflect.Value) bool {
	m, ok := data.(map[string]any)
	if !ok {
		s.errorf("expected a table, got %s", describeValue(data))
		return false
	}
	fields := tomlFields(rv.Type())
	for _, k := range s.sortedKeys(m) {
		index, ok := fields[k]
		if !ok {
			s.at(k).errorUnknown(fields)
			continue
		}
		s.at(k).decode(m[k], rv.FieldByIndex(index))
	}
	return true
}

// errorUnknown reports the key at s as unknown, naming the table it is in
// and the nearest key of valid, the keys that table has:
// `unknown key "maxconns" in frontend "www"; did you mean "maxconn"?`
// (suggest.go).
func (s scope) errorUnknown(valid map[string][]int) {
	s.c.failed[s.p.key()] = true
	s.c.errs = append(s.c.errs, Error{
		File: s.c.file,
		Line: s.line(),
		Msg:  s.c.unknownKeyMessage(s.p[:len(s.p)-1], s.p[len(s.p)-1], valid),
	})
}

// sortedKeys returns the keys of m in file order, so that problems are found
// in the order they are read.
// Each key's line is looked up once, not once per comparison: a reload
// of 10,000 servers spent a tenth of its time here (issue 11).
func (s scope) sortedKeys(m map[string]any) []string {
	type keyLine struct {
		key  string
		line int
	}
	kl := make([]keyLine, 0, len(m))
	for k := range m {
		kl = append(kl, keyLine{k, s.at(k).line()})
	}
	slices.SortFunc(kl, func(a, b keyLine) int {
		return cmp.Or(cmp.Compare(a.line, b.line), cmp.Compare(a.key, b.key))
	})
	keys := make([]string, len(kl))
	for i := range kl {
		keys[i] = kl[i].key
	}
	return keys
}

// tomlFieldCache holds tomlFields' result per type: it is asked once per
// table decoded (10,000 times for 10,000 servers).
var tomlFieldCache sync.Map // reflect.Type -> map[string][]int

// tomlFields maps the TOML keys of a section struct to field indexes. The
// fields of an embedded struct without a tag are keys of the outer table.
// The map returned is shared: callers only read it.
func tomlFields(t reflect.Type) map[string][]int {
	if m, ok := tomlFieldCache.Load(t); ok {
		return m.(map[string][]int)
	}
	m := buildTOMLFields(t)
	tomlFieldCache.Store(t, m)
	return m
}

// buildTOMLFields is tomlFields without the cache.
func buildTOMLFields(t reflect.Type) map[string][]int {
	fields := map[string][]int{}
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("toml")
		switch {
		case f.Anonymous && tag == "" && f.Type.Kind() == reflect.Struct:
			for k, index := range tomlFields(f.Type) {
				fields[k] = append([]int{i}, index...)
			}
		case tag != "" && tag != "-":
			fields[tag] = []int{i}
		}
	}
	return fields
}

// describeValue names a tree value's TOML type, and its value for scalars.
func describeValue(v any) string {
	switch v := v.(type) {
	case string:
		return fmt.Sprintf("string %q", v)
	case int64:
		return fmt.Sprintf("integer %d", v)
	case float64:
		return "float " + strconv.FormatFloat(v, 'g', -1, 64)
	case bool:
		return fmt.Sprintf("boolean %t", v)
	case time.Time:
		// The toml package marks local dates and times by their location.
		switch v.Location().String() {
		case "date-local":
			return "date " + v.Format(time.DateOnly)
		case "time-local":
			return "time " + v.Format("15:04:05.999999999")
		case "datetime-local":
			return "datetime " + v.Format("2006-01-02T15:04:05.999999999")
		}
		return "datetime " + v.Format(time.RFC3339Nano)
	case []any:
		return "an array"
	case []map[string]any:
		return "an array of tables"
	case map[string]any:
		return "a table"
	}
	return fmt.Sprintf("%v", v)
}

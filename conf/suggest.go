package conf

// Suggestions for unknown keys: `unknown key "maxconns" in frontend "www";
// did you mean "maxconn"?`. The candidates are the keys of the table the
// unknown key sits in, read from the section struct's toml tags, so the
// list is written once (the structs) and never kept by hand.

import (
	"reflect"
	"slices"
	"strings"

	"github.com/fulcrum-proxy/fulcrum/internal/suggest"
)

// nearestKey returns the candidate closest to key, or "" when none is
// close enough to be what the operator meant. HAProxy's spelling with
// dashes ("timeout-connect", "hash-type") matches the snake_case key
// exactly; otherwise suggest.Nearest decides.
func nearestKey(key string, candidates []string) string {
	norm := strings.ToLower(strings.ReplaceAll(key, "-", "_"))
	if slices.Contains(candidates, norm) {
		return norm
	}
	return suggest.Nearest(norm, candidates)
}

// keyHomes names, for the tables whose keys operators most often put in
// the wrong place, the other tables and what to call them in a message:
// `balance` set in a frontend belongs in a backend, a server's `expect_status`
// in [backend.check].
var keyHomes = map[string][]struct {
	schema string // the other table, as a schema path
	name   string // how the message names it
}{
	"frontend":       {{"backend", "a backend"}, {"global", "[global]"}},
	"backend":        {{"frontend", "a frontend"}, {"backend.check", "[backend.check]"}},
	"defaults":       {{"global", "[global]"}, {"backend", "a backend"}},
	"global":         {{"defaults", "[defaults]"}},
	"backend.server": {{"backend.check", "[backend.check]"}, {"backend", "the backend"}},
	"backend.default_server": {
		{"backend.check", "[backend.check]"}, {"backend", "the backend"},
	},
}

// topLevelHints explain top-level tables that HAProxy has and fulcrum
// spells differently.
var topLevelHints = map[string]string{
	"listen": "an HAProxy listen section is a [[frontend]] and a [[backend]] of the same name; `fulcrum import` converts an haproxy.cfg",
	"server": "servers are [[backend.server]] tables",
}

// schemaType returns the section struct type of the table at a schema
// path ("backend.server"), or nil when there is none.
func schemaType(schema string) reflect.Type {
	t := reflect.TypeFor[fileSection]()
	if schema == "" {
		return t
	}
	for _, part := range strings.Split(schema, ".") {
		index, ok := tomlFields(t)[part]
		if !ok {
			return nil
		}
		t = t.FieldByIndex(index).Type
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct {
			return nil
		}
	}
	return t
}

// unknownKeyMessage returns the message for key, unknown in the table at
// parent: it names the table, suggests the nearest valid key, or says
// where the key belongs when another table has it.
func (c *checker) unknownKeyMessage(parent path, key string, valid map[string][]int) string {
	msg := "unknown key " + quoteString(key)
	switch {
	case len(parent) == 1:
		msg += " in [" + quoteKey(parent[0]) + "]"
	case len(parent) > 1:
		msg += " in " + c.describe(parent)
	default:
		msg += " at the top level"
	}
	keys := make([]string, 0, len(valid))
	for k := range valid {
		keys = append(keys, k)
	}
	if near := nearestKey(key, keys); near != "" {
		return msg + "; did you mean " + quoteString(near) + "?"
	}
	if len(parent) == 0 {
		if hint := topLevelHints[key]; hint != "" {
			return msg + "; " + hint
		}
	}
	for _, home := range keyHomes[parent.schema()] {
		if t := schemaType(home.schema); t != nil {
			norm := strings.ReplaceAll(key, "-", "_")
			if _, ok := tomlFields(t)[norm]; ok {
				return msg + "; " + quoteString(norm) + " belongs in " + home.name
			}
		}
	}
	return msg
}

// quoteString quotes s as the messages do.
func quoteString(s string) string {
	return `"` + strings.ReplaceAll(strings.ReplaceAll(s, `\`, `\\`), `"`, `\"`) + `"`
}

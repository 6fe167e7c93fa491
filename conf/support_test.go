package conf

import (
	"reflect"
	"strings"
	"testing"
)

// TestNotYetKeys checks the supported-set table: every key it lists is a
// key of the schema (a typo would silently let a key through), and the
// values it allows are the key's built-in default, the value that behaves
// as if the key were absent.
func TestNotYetKeys(t *testing.T) {
	f := &fileSection{
		Frontends: []*frontendSection{{}},
		Backends:  []*backendSection{{Servers: []*serverSection{{}}}},
	}
	f.setDefaults()
	for key, allow := range notYet {
		fv, ok := schemaField(reflect.ValueOf(f).Elem(), strings.Split(key, "."))
		if !ok {
			t.Errorf("notYet lists %q, which is not a key of the schema", key)
			continue
		}
		if allow == nil {
			continue
		}
		if fv.Kind() == reflect.Pointer {
			fv = fv.Elem()
		}
		got := fv.Interface() // a Duration stays one: its kind is Int64
		switch fv.Kind() {
		case reflect.Int:
			got = int(fv.Int())
		case reflect.String:
			got = fv.String()
		}
		if got != allow[0] {
			t.Errorf("notYet allows %q = %v, but its default is %v", key, allow[0], got)
		}
	}
}

// schemaField returns the field at a schema path in a defaulted file,
// taking the first element of each list of sections.
func schemaField(v reflect.Value, keys []string) (reflect.Value, bool) {
	for _, k := range keys {
		for v.Kind() == reflect.Pointer || v.Kind() == reflect.Slice {
			if v.Kind() == reflect.Slice {
				if v.Len() == 0 {
					return reflect.Value{}, false
				}
				v = v.Index(0)
				continue
			}
			if v.IsNil() {
				v = reflect.New(v.Type().Elem()).Elem()
				continue
			}
			v = v.Elem()
		}
		if v.Kind() != reflect.Struct {
			return reflect.Value{}, false
		}
		index, ok := tomlFields(v.Type())[k]
		if !ok {
			return reflect.Value{}, false
		}
		v = v.FieldByIndex(index)
	}
	return v, true
}

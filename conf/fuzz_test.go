package conf

import (
	"bytes"
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzParse checks that Parse never panics nor hangs, that a failure is a
// non-empty *Errors whose lines point into the input, and that the line
// scanner finds every key the toml package reads.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("../testdata/conf/*.toml")
	for _, file := range files {
		t := &testing.T{}
		config, _ := readCase(t, file)
		f.Add(config)
	}
	for _, seed := range []string{
		"",
		"[[backend]]\nname = 'a'\nserver = [{name = 's', address = '1.2.3.4:5'}]\n",
		"frontend = [1, 2]\nbackend = 'x'\n",
		"[[frontend]]\nacl = { 'a.b' = 'path /', \"c\\\"d\" = 1 }\n",
		"[global]\nhard_stop_after = 1979-05-27T07:32:00Z\nmaxconn = 9223372036854775807\n",
		"a = \"\"\"\n[[backend]]\n\"\"\"\n[[backend]]\n[[backend.server]]\n[[backend.server]]\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := Parse("fuzz.toml", data)
		checkPositionsCoverKeys(t, data)
		if err == nil {
			if cfg == nil {
				t.Fatal("got neither a config nor an error")
			}
			return
		}
		var errs *Errors
		if !errors.As(err, &errs) || len(errs.List) == 0 {
			t.Fatalf("got %T %v, want a non-empty *Errors", err, err)
		}
		lines := bytes.Count(data, []byte("\n")) + 1
		for _, e := range errs.List {
			if e.File != "fuzz.toml" || e.Line < 0 || e.Line > lines || e.Msg == "" || strings.Contains(e.Msg, "\n") {
				t.Errorf("bad problem report %+v for a %d-line input", e, lines)
			}
		}
	})
}

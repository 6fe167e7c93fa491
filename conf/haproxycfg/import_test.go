package haproxycfg

import (
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fulcrum-proxy/fulcrum/conf"
	"github.com/fulcrum-proxy/fulcrum/internal/testutil"
)

var update = flag.Bool("update", false, "rewrite the golden files of ../../testdata/import from the current output")

// corpusDir holds the import corpus (its README says how it is laid out).
const corpusDir = "../../testdata/import"

// corpus returns the names of the corpus's cases.
func corpus(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(corpusDir, "*.cfg"))
	if err != nil || len(files) < 30 {
		t.Fatalf("the corpus needs at least 30 cases, found %d (%v)", len(files), err)
	}
	var names []string
	for _, f := range files {
		names = append(names, strings.TrimSuffix(filepath.Base(f), ".cfg"))
	}
	return names
}

// notesText is the notes as `fulcrum import` prints them.
func notesText(file string, r *Result) string {
	var b strings.Builder
	for _, n := range r.Notes {
		b.WriteString(file + ":" + n.String() + "\n")
	}
	if r.NoFrontend {
		b.WriteString(file + ": no frontend or listen section fulcrum can run: nothing would listen\n")
	}
	return b.String()
}

// golden compares got with the file at path, or rewrites it with -update.
func golden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test ./conf/haproxycfg -run TestCorpus -update writes it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs (go test ./conf/haproxycfg -run TestCorpus -update to accept):\n--- got\n%s--- want\n%s", filepath.Base(path), got, want)
	}
}

// TestCorpus converts every case of the corpus: the TOML and the notes
// must be the golden ones, and the TOML must pass fulcrum's check.
func TestCorpus(t *testing.T) {
	for _, name := range corpus(t) {
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(corpusDir, name+".cfg"))
			if err != nil {
				t.Fatal(err)
			}
			r, err := Import(data, Options{Name: name + ".cfg", Dir: corpusDir})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := conf.Parse(filepath.Join(corpusDir, name+".toml"), r.TOML); err != nil {
				t.Fatalf("the output does not pass fulcrum check:\n%v", err)
			}
			golden(t, filepath.Join(corpusDir, name+".toml"), string(r.TOML))
			golden(t, filepath.Join(corpusDir, name+".txt"), notesText(name+".cfg", r))
		})
	}
}

// TestCorpusHAProxyAccepts runs `haproxy -c` on the cases written as
// valid HAProxy files, so that the corpus is what operators write, not
// what the importer happens to read.
func TestCorpusHAProxyAccepts(t *testing.T) {
	haproxy := testutil.NeedTool(t, "haproxy", "haproxy")
	type result struct {
		name string
		out  []byte
		err  error
	}
	names := corpus(t)
	results := make(chan result, len(names))
	sem := make(chan struct{}, 8) // haproxy -c mostly waits: 8 at a time
	for _, name := range names {
		data, err := os.ReadFile(filepath.Join(corpusDir, name+".cfg"))
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(string(data), "# haproxy -c: refused") {
			results <- result{name: name}
			continue
		}
		go func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			// -q: without it haproxy takes three times as long.
			cmd := exec.Command(haproxy, "-c", "-q", "-f", name+".cfg")
			cmd.Dir = corpusDir
			out, err := cmd.CombinedOutput()
			results <- result{name, out, err}
		}()
	}
	for range names {
		r := <-results
		if r.err != nil {
			t.Errorf("haproxy -c refuses %s.cfg (%v):\n%s", r.name, r.err, r.out)
		}
	}
}

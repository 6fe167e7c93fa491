package proxy

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the fuzz seeds testdata/fuzz/Fuzz*/diff-* from the differential corpora")

// maxSeed is the largest shape kept as a fuzz seed: larger ones (100 kB
// bodies, 70 kB lines) slow the mutator for nothing the small ones lack.
const maxSeed = 8 << 10

// diffSeeds returns the fuzz seed files the differential corpora give:
// path (under testdata/fuzz) → content, in the go test fuzz v1 encoding.
func diffSeeds() map[string]string {
	out := map[string]string{}
	for _, sh := range diffRequestShapes {
		if len(sh.raw) <= maxSeed {
			out[filepath.Join("testdata", "fuzz", "FuzzHTTPRequest", "diff-"+sh.name)] = fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", sh.raw)
		}
	}
	for _, sh := range diffResponseShapes {
		if len(sh.resp) <= maxSeed {
			out[filepath.Join("testdata", "fuzz", "FuzzHTTPResponse", "diff-"+sh.name)] = fmt.Sprintf("go test fuzz v1\n[]byte(%q)\nbool(%v)\n", sh.resp, sh.closeAfter)
		}
	}
	return out
}

// TestDiffFuzzSeeds checks that FuzzHTTPRequest and FuzzHTTPResponse are
// seeded with every shape of the differential corpora (up to maxSeed
// bytes), one file diff-<name> each; -update rewrites them.
func TestDiffFuzzSeeds(t *testing.T) {
	want := diffSeeds()
	var have []string
	for _, dir := range []string{"FuzzHTTPRequest", "FuzzHTTPResponse"} {
		m, err := filepath.Glob(filepath.Join("testdata", "fuzz", dir, "diff-*"))
		if err != nil {
			t.Fatal(err)
		}
		have = append(have, m...)
	}
	if *update {
		for _, p := range have {
			if _, ok := want[p]; !ok {
				if err := os.Remove(p); err != nil {
					t.Fatal(err)
				}
			}
		}
		for p, content := range want {
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return
	}
	for _, p := range have {
		if _, ok := want[p]; !ok {
			t.Errorf("%s: no such shape (go test ./proxy -run TestDiffFuzzSeeds -update)", p)
		}
	}
	for p, content := range want {
		got, err := os.ReadFile(p)
		if err != nil || string(got) != content {
			t.Errorf("%s: missing or not the shape's bytes (go test ./proxy -run TestDiffFuzzSeeds -update)", p)
		}
	}
}

package haproxycfg

import (
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkImport converts the corpus's largest file (40 backends, 160
// servers, 40 ACLs): what `fulcrum run -c haproxy.cfg` pays at each
// reload, the check of the output included.
func BenchmarkImport(b *testing.B) {
	data, err := os.ReadFile(filepath.Join(corpusDir, "many_backends.cfg"))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Import(data, Options{Name: "many_backends.cfg"}); err != nil {
			b.Fatal(err)
		}
	}
}

package haproxycfg

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/fulcrum-proxy/fulcrum/conf"
)

// FuzzImport: no input makes Import panic or fail, and its output always
// passes fulcrum's check. The corpus cases are the seeds.
func FuzzImport(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join(corpusDir, "*.cfg"))
	for _, file := range files {
		if data, err := os.ReadFile(file); err == nil {
			f.Add(data)
		}
	}
	f.Add([]byte("frontend f\n bind :80\n default_backend b\nbackend b\n server s \"a\n"))
	f.Add([]byte("frontend f\n bind 127.0.0.1:${XP}\n http-request set-header A \"${XV}-$Y\"\n default_backend b\nbackend b\n server s $X:80\n"))
	f.Add([]byte("peers mesh\n peer lb1 127.0.0.1:1\n table limits type ip size 100k expire 30s store http_req_rate(10s),gpc0\n table t2 type string len 8 size 10 nopurge\ndefaults\n mode http\nfrontend f\n bind :80\n http-request track-sc0 src table mesh/limits\n http-request deny if { sc_http_req_rate(0) gt 5 }\n default_backend b\nbackend b\n server s 10.0.0.1:80\n"))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 64<<10 {
			return
		}
		// As fulcrum import, and as check/run for an instance named lb1.
		// With an environment whose values need escaping (X...) or are
		// unset (the rest): expand.go.
		env := func(name string) (string, bool) {
			if len(name) > 0 && name[0] == 'X' {
				return "a b\"c'$d#e\\f\t", true
			}
			return "", false
		}
		for _, opt := range []Options{{Name: "fuzz.cfg", Dir: dir}, {Name: "fuzz.cfg", Dir: dir, HostName: "lb1"}, {Name: "fuzz.cfg", Dir: dir, Env: env}} {
			r, err := Import(data, opt)
			if err != nil {
				t.Fatalf("Import(%+v): %v", opt, err)
			}
			if _, err := conf.Parse(filepath.Join(dir, "fuzz.toml"), r.TOML); err != nil {
				t.Fatalf("the output does not pass fulcrum check (%+v): %v\n%s", opt, err, r.TOML)
			}
		}
	})
}

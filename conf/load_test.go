package conf

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the expected part of ../testdata/conf/*.toml from the current output")

// separator divides a golden case into the config and the expected output.
const separator = "----------"

// validOutput is what a case expects when the config has no problem, as
// `fulcrum check` prints it.
const validOutput = "configuration is valid"

// readCase splits a golden case file into its config and its expected lines.
func readCase(t *testing.T, file string) (config []byte, want string) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	text := "\n" + string(data) // so that an empty config needs no line
	i := strings.Index(text, "\n"+separator+"\n")
	if i < 0 {
		t.Fatalf("%s: no line %q between the config and the expected output", file, separator)
	}
	return []byte(text[1 : i+1]), strings.TrimSpace(text[i+len(separator)+2:])
}

// checkOutput returns what `fulcrum check` would print for config.
func checkOutput(name string, config []byte) string {
	if _, err := Parse(name, config); err != nil {
		return err.Error()
	}
	return validOutput
}

// TestGolden runs every testdata/conf/<case>.toml: the config above the line
// of ten dashes must give exactly the lines below it.
func TestGolden(t *testing.T) {
	for _, file := range goldenFiles(t) {
		name := filepath.Base(file)
		t.Run(strings.TrimSuffix(name, ".toml"), func(t *testing.T) {
			config, want := readCase(t, file)
			got := checkOutput(name, config)
			if *update {
				out := append(config, []byte(separator+"\n"+got+"\n")...)
				if err := os.WriteFile(file, out, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if got != want {
				t.Errorf("got:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}

// TestErrorsType checks that every failure is an *Errors in file order.
func TestErrorsType(t *testing.T) {
	tests := []struct {
		name   string
		config string
		want   []Error
	}{
		{
			name:   "syntax error",
			config: "[global]\nmaxconn = \n",
			want:   []Error{{File: "x.toml", Line: 2}},
		},
		{
			name:   "unterminated table name",
			config: "# c\n[global\nmaxconn = 10\n",
			want:   []Error{{File: "x.toml", Line: 2}},
		},
		{
			name:   "unterminated array table name",
			config: "[[backend\nname = \"a\"\n",
			want:   []Error{{File: "x.toml", Line: 1}},
		},
		{
			name:   "problems sorted by line",
			config: "[[backend]]\nname = \"a\"\n[[backend.server]]\nname = \"s\"\nweight = -1\n[global]\nlog_level = \"x\"\n[defaults]\nretries = -1\n",
			want:   []Error{{File: "x.toml", Line: 3}, {File: "x.toml", Line: 5}, {File: "x.toml", Line: 7}, {File: "x.toml", Line: 9}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("x.toml", []byte(tt.config))
			var errs *Errors
			if !errors.As(err, &errs) {
				t.Fatalf("got %T %v, want *Errors", err, err)
			}
			if len(errs.List) != len(tt.want) {
				t.Fatalf("got %d problems:\n%v\nwant %d", len(errs.List), err, len(tt.want))
			}
			for i, e := range errs.List {
				if e.File != tt.want[i].File || e.Line != tt.want[i].Line {
					t.Errorf("problem %d: got %s:%d, want %s:%d", i, e.File, e.Line, tt.want[i].File, tt.want[i].Line)
				}
			}
		})
	}
}

// TestLoad checks that Load reads a file and reports problems under its
// path, and that a missing file is an *Errors too.
func TestLoad(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.toml")
	config := "[[frontend]]\nname = \"www\"\nbind = [\"127.0.0.1:0\"]\n"
	if err := os.WriteFile(good, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(good)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.File != good || len(cfg.Frontends) != 1 || cfg.Frontends[0].Line != 1 {
		t.Errorf("got File %q, frontends %v; want %q and one frontend on line 1", cfg.File, cfg.Frontends, good)
	}

	missing := filepath.Join(dir, "missing.toml")
	_, err = Load(missing)
	var errs *Errors
	if !errors.As(err, &errs) {
		t.Fatalf("got %T %v, want *Errors", err, err)
	}
	if want := missing + ": cannot read: no such file or directory"; err.Error() != want {
		t.Errorf("got %q, want %q", err.Error(), want)
	}
}

// TestGoldenSeparator guards the golden format: each case has exactly one
// separator line, so that an expected output can never be mistaken for
// config.
func TestGoldenSeparator(t *testing.T) {
	for _, file := range goldenFiles(t) {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if n := bytes.Count(append([]byte("\n"), data...), []byte("\n"+separator+"\n")); n != 1 {
			t.Errorf("%s: got %d separator lines, want 1", file, n)
		}
	}
}

// goldenFiles returns the golden cases.
func goldenFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("../testdata/conf/*.toml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden cases in ../testdata/conf: %v", err)
	}
	return files
}

// TestHTTP2Model: proto h2 on a bind and on servers, check_proto and
// tune_h2_max_concurrent_streams reach the model.
func TestHTTP2Model(t *testing.T) {
	cfg, err := Parse("h2.toml", []byte(`
[global]
tune_h2_max_concurrent_streams = 1000
[[frontend]]
name = "h2"
bind = ["127.0.0.1:8080 proto h2", "127.0.0.1:8081"]
default_backend = "grpc"
[[backend]]
name = "grpc"
[backend.default_server]
proto = "h2"
[backend.check]
check_proto = "grpc"
[[backend.server]]
name = "g1"
address = "127.0.0.1:50051"
`))
	if err != nil {
		t.Fatal(err)
	}
	fe, be := cfg.Frontends[0], cfg.Backends[0]
	if got := fmt.Sprint(fe.Binds); got != "[127.0.0.1:8080 127.0.0.1:8081]" || fe.BindOptions[0].Proto != "h2" || fe.BindOptions[1].Proto != "" {
		t.Errorf("binds: got %s, protos %q and %q; want h2 and \"\"", got, fe.BindOptions[0].Proto, fe.BindOptions[1].Proto)
	}
	if cfg.Global.H2MaxStreams != 1000 || be.Servers[0].Proto != "h2" || be.Check.Proto != "grpc" {
		t.Errorf("got max streams %d, server proto %q, check proto %q; want 1000, h2, grpc",
			cfg.Global.H2MaxStreams, be.Servers[0].Proto, be.Check.Proto)
	}
}

// TestTuneNetIO: tune_netio defaults to DefaultNetIO ("uring" on Linux), takes "go", "epoll" and "uring", and refuses
// anything else with the file and line.
func TestTuneNetIO(t *testing.T) {
	const rest = `
[[frontend]]
name = "f"
bind = ["127.0.0.1:8080"]
`
	for _, tc := range []struct{ global, want string }{
		{"", DefaultNetIO},
		{`tune_netio = "go"`, "go"},
		{`tune_netio = "epoll"`, "epoll"},
		{`tune_netio = "uring"`, "uring"},
	} {
		cfg, err := Parse("n.toml", []byte("[global]\n"+tc.global+"\n"+rest))
		if err != nil {
			t.Fatalf("%q: %v", tc.global, err)
		}
		if cfg.Global.NetIO != tc.want {
			t.Errorf("%q: NetIO = %q, want %q", tc.global, cfg.Global.NetIO, tc.want)
		}
	}
	_, err := Parse("n.toml", []byte("[global]\ntune_netio = \"iouring\"\n"+rest))
	const want = `n.toml:2: global: tune_netio: must be one of go, epoll, uring, got "iouring"`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("tune_netio = \"iouring\": %v, want %s", err, want)
	}
}

// TestTuneSocketBufs: tune_sndbuf_* and tune_rcvbuf_* reach the model
// (0 when unset) and a negative size is refused with the file and line.
func TestTuneSocketBufs(t *testing.T) {
	const rest = `
[[frontend]]
name = "f"
bind = ["127.0.0.1:8080"]
`
	cfg, err := Parse("b.toml", []byte("[global]\ntune_sndbuf_client = 16384\ntune_rcvbuf_client = 8192\ntune_sndbuf_server = 4096\ntune_rcvbuf_server = 2048\n"+rest))
	if err != nil {
		t.Fatal(err)
	}
	g := cfg.Global
	if g.ClientBufs != (SocketBufs{Snd: 16384, Rcv: 8192}) || g.ServerBufs != (SocketBufs{Snd: 4096, Rcv: 2048}) {
		t.Errorf("client %+v, server %+v; want {16384 8192} and {4096 2048}", g.ClientBufs, g.ServerBufs)
	}
	cfg, err = Parse("b.toml", []byte("[global]\n"+rest))
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.Global.ClientBufs.IsZero() || !cfg.Global.ServerBufs.IsZero() {
		t.Errorf("unset: client %+v, server %+v; want zero", cfg.Global.ClientBufs, cfg.Global.ServerBufs)
	}
	_, err = Parse("b.toml", []byte("[global]\nmaxconn = 10\ntune_rcvbuf_server = -1\n"+rest))
	const want = `b.toml:3: global: tune_rcvbuf_server: must not be negative, got -1`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("tune_rcvbuf_server = -1: %v, want %s", err, want)
	}
}

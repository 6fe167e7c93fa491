package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fulcrum-proxy/fulcrum/conf"
	"github.com/fulcrum-proxy/fulcrum/proxy"
	"github.com/rs/zerolog"
)

// BenchmarkReload measures a reload (issue 11's benchmark: goal under
// 200 ms) of a configuration of 100 backends of 100 servers: reading and
// validating the file, building the new proxy with the old one's state,
// taking over the listener and restarting the checker, i.e. the time from
// the signal to the new configuration serving. The old proxy's drain runs
// after, in the background, as in the daemon.
//
//	go test ./cmd/fulcrum/ -run '^$' -bench Reload -benchtime 20x
func BenchmarkReload(b *testing.B) {
	for _, checks := range []bool{false, true} {
		b.Run(fmt.Sprintf("100x100/checks=%v", checks), func(b *testing.B) {
			var sb strings.Builder
			sb.WriteString("[[frontend]]\nname = \"www\"\nbind = [\"127.0.0.1:0\"]\ndefault_backend = \"b0\"\n")
			for i := range 100 {
				fmt.Fprintf(&sb, "\n[[backend]]\nname = \"b%d\"\n", i)
				if checks {
					sb.WriteString("[backend.check]\ninter = \"60s\"\n")
				}
				for j := range 100 {
					fmt.Fprintf(&sb, "[[backend.server]]\nname = \"s%d\"\naddress = \"127.0.0.1:%d\"\ncheck = %v\n", j, 10000+j, checks)
				}
			}
			path := filepath.Join(b.TempDir(), "big.toml")
			if err := os.WriteFile(path, []byte(sb.String()), 0o644); err != nil {
				b.Fatal(err)
			}
			cfg, err := conf.Load(path)
			if err != nil {
				b.Fatal(err)
			}
			log := zerolog.New(io.Discard)
			p, err := proxy.New(cfg, log)
			if err != nil {
				b.Fatal(err)
			}
			if err := p.Start(); err != nil {
				b.Fatal(err)
			}
			r := newReloader(cfg, p, io.Discard, log)
			r.stopChecks = startChecks(p, log)
			// Keep the listener across reloads, as an operator's file does.
			bound := p.Frontends[0].Addrs()[0].String()
			data := strings.Replace(sb.String(), "127.0.0.1:0", bound, 1)
			if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for range b.N {
				if err := r.reload(); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			r.retiring.Wait()
			r.stopChecks()
			r.close().Shutdown(context.Background())
		})
	}
}

package conf

import (
	"testing"
	"time"
)

// loadCase parses the config part of a golden case, which must be valid.
func loadCase(t *testing.T, name string) *Config {
	t.Helper()
	config, _ := readCase(t, "../testdata/conf/"+name)
	cfg, err := Parse(name, config)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return cfg
}

// field is one value of the model and what it should be.
type field struct {
	name      string
	got, want any
}

func checkFields(t *testing.T, fields []field) {
	t.Helper()
	for _, f := range fields {
		if f.got != f.want {
			t.Errorf("%s: got %v, want %v", f.name, f.got, f.want)
		}
	}
}

// TestInheritance checks the model of defaults_inheritance.toml: values
// from [defaults], overrides in a frontend and a backend, built-in defaults
// for what nobody set, and [backend.default_server] for servers.
func TestInheritance(t *testing.T) {
	cfg := loadCase(t, "defaults_inheritance.toml")
	if len(cfg.Frontends) != 1 || len(cfg.Backends) != 2 || len(cfg.Backends[0].Servers) != 2 {
		t.Fatalf("got %d frontends, %d backends; want 1 and 2, the first with 2 servers", len(cfg.Frontends), len(cfg.Backends))
	}
	fe, web, other := cfg.Frontends[0], cfg.Backends[0], cfg.Backends[1]
	s1, s2 := web.Servers[0], web.Servers[1]
	checkFields(t, []field{
		{"global.LogLevel (built-in)", cfg.Global.LogLevel, "info"},
		{"global.LogFormat (built-in)", cfg.Global.LogFormat, "json"},
		{"global.HardStopAfter (built-in)", cfg.Global.HardStopAfter, time.Duration(0)},
		{"global.MaxConn (built-in)", cfg.Global.MaxConn, 0},

		{"www.Line", fe.Line, 8},
		{"www.TimeoutClient (own, over [defaults] 20s)", fe.TimeoutClient, 5 * time.Second},
		{"www.TimeoutHTTPRequest (built-in)", fe.TimeoutHTTPRequest, 10 * time.Second},
		{"www.ForwardFor (from [defaults])", fe.ForwardFor, true},
		{"www.Mode (built-in)", fe.Mode, ModeHTTP},
		{"www.MaxConn (built-in)", fe.MaxConn, 0},
		{"www.DefaultBackend", fe.DefaultBackend, "web"},

		{"web.Line", web.Line, 14},
		{"web.TimeoutServer (from [defaults])", web.TimeoutServer, 45 * time.Second},
		{"web.TimeoutConnect (own)", web.TimeoutConnect, time.Second},
		{"web.TimeoutQueue (built-in)", web.TimeoutQueue, time.Duration(0)},
		{"web.ForwardFor (own false over [defaults] true)", web.ForwardFor, false},
		{"web.Retries (from [defaults])", web.Retries, 5},
		{"web.Mode (built-in)", web.Mode, ModeHTTP},
		{"web.Balance (built-in)", web.Balance, "roundrobin"},
		{"web.HashType (built-in)", web.HashType, "map-based"},
		{"web.HTTPReuse (built-in)", web.HTTPReuse, "safe"},
		{"web.Redispatch (built-in)", web.Redispatch, false},
		{"web.HashKey (built-in: none)", web.HashKey, ""},
		{"web.HashPreserveAffinity (built-in)", web.HashPreserveAffinity, "always"},

		{"s1.Line", s1.Line, 22},
		{"s1.Weight (from default_server)", s1.Weight, 7},
		{"s1.Address", s1.Address, "127.0.0.1:9001"},
		{"s1.Disabled (built-in)", s1.Disabled, false},
		{"s2.Weight (own over default_server)", s2.Weight, 3},

		{"other.TimeoutConnect (built-in)", other.TimeoutConnect, 5 * time.Second},
		{"other.TimeoutServer (from [defaults])", other.TimeoutServer, 45 * time.Second},
		{"other.ForwardFor (from [defaults])", other.ForwardFor, true},
		{"other.Retries (from [defaults])", other.Retries, 5},
	})
}

// TestValidFull checks a few values of valid_full.toml, where every
// supported key is set, against what the file says.
func TestValidFull(t *testing.T) {
	cfg := loadCase(t, "valid_full.toml")
	www, db := cfg.Frontends[0], cfg.Frontends[1]
	web, pg := cfg.Backends[0], cfg.Backends[1]
	checkFields(t, []field{
		{"global.MaxConn", cfg.Global.MaxConn, 20000},
		{"global.HardStopAfter", cfg.Global.HardStopAfter, 30 * time.Second},
		{"global.LogLevel", cfg.Global.LogLevel, "debug"},
		{"global.LogFormat", cfg.Global.LogFormat, "console"},
		{"www.Binds", len(www.Binds), 2},
		{"www.Binds[1]", www.Binds[1], "[::1]:8080"},
		{"www.MaxConn", www.MaxConn, 2000},
		{"www.TimeoutClient", www.TimeoutClient, 45 * time.Second},
		{"www.TimeoutHTTPRequest", www.TimeoutHTTPRequest, 3 * time.Second},
		{"www.ForwardFor", www.ForwardFor, false},
		{"db.Mode", db.Mode, ModeTCP},
		{"db.MaxConn (from [defaults])", db.MaxConn, 1000},
		{"db.TimeoutClient (from [defaults])", db.TimeoutClient, time.Minute},
		{"web.HTTPReuse", web.HTTPReuse, "always"},
		{"web.TimeoutServer", web.TimeoutServer, 10 * time.Second},
		{"web.Retries", web.Retries, 0},
		{"web.s1.Weight", web.Servers[0].Weight, 256},
		{"web.s2.Weight", web.Servers[1].Weight, 0},
		{"web.s3.Weight (default_server)", web.Servers[2].Weight, 10},
		{"web.s3.Disabled", web.Servers[2].Disabled, true},
		{"pg.Mode", pg.Mode, ModeTCP},
		{"pg.HTTPReuse", pg.HTTPReuse, "never"},
		{"pg.TimeoutServer (from [defaults])", pg.TimeoutServer, 90 * time.Second},
		{"pg.pg1.Weight (built-in)", pg.Servers[0].Weight, 1},
		{"web.Balance", web.Balance, "uri len 8 whole"},
		{"web.HashType", web.HashType, "map-based"},
		{"web.HashBalanceFactor (from [defaults])", web.HashBalanceFactor, 150},
		{"web.PanicThreshold", web.PanicThreshold, 50},
		{"web.AllBackups", web.AllBackups, true},
		{"web.s1.MaxConn (default_server)", web.Servers[0].MaxConn, 100},
		{"web.s1.Slowstart (default_server)", web.Servers[0].Slowstart, 10 * time.Second},
		{"web.s3.Backup", web.Servers[2].Backup, true},
		{"web.s3.MaxConn", web.Servers[2].MaxConn, 0},
		{"pg.Balance", pg.Balance, "source"},
		{"pg.HashType (from [defaults])", pg.HashType, "consistent djb2"},
		{"web.HashKey (from [global])", web.HashKey, "global-secret-0123456789"},
		{"pg.HashKey (own over [global])", pg.HashKey, "pg-own-secret-0123456789"},
		{"web.HashPreserveAffinity (from [defaults])", web.HashPreserveAffinity, "maxqueue"},
		{"pg.HashPreserveAffinity (own)", pg.HashPreserveAffinity, "maxconn"},
	})
}

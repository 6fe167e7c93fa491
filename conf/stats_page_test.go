package conf

import (
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/fulcrum-proxy/fulcrum/proxy/acl"
)

// TestStatsPageModel checks what [frontend.stats] gives the proxy, and
// which client addresses its admin condition lets act.
func TestStatsPageModel(t *testing.T) {
	const backend = "[[backend]]\nname = \"web\"\n[[backend.server]]\nname = \"s1\"\naddress = \"127.0.0.1:9001\"\n"
	const frontend = "[[frontend]]\nname = \"www\"\nbind = [\"127.0.0.1:8080\"]\ndefault_backend = \"web\"\n" +
		"acl = { internal = \"src 10.0.0.0/8\", blocked = \"src 10.9.0.0/16\" }\n"
	for _, tc := range []struct {
		name    string
		section string
		want    *StatsPage
		admins  []string // sources the admin condition allows, among probes
	}{
		{"absent", "", nil, nil},
		{"disabled", "enable = false\n", nil, nil},
		{"defaults", "enable = true\n", &StatsPage{URI: "/haproxy?stats"}, nil},
		{"full", "enable = true\nuri = \"/stats\"\nrefresh = \"5s\"\nauth = [\"a:b\"]\nadmin = \"{ src 127.0.0.1 10.0.0.0/8 }\"\nhide_version = true\n",
			&StatsPage{URI: "/stats", Refresh: 5 * time.Second, Auth: []string{"a:b"}, Admin: "{ src 127.0.0.1 10.0.0.0/8 }", HideVersion: true},
			[]string{"127.0.0.1", "10.1.2.3", "10.9.0.1"}},
		{"TRUE", "enable = true\nadmin = \"TRUE\"\n", &StatsPage{URI: "/haproxy?stats", Admin: "TRUE"},
			[]string{"127.0.0.1", "10.1.2.3", "10.9.0.1", "192.0.2.1", "::1"}},
		{"FALSE", "enable = true\nadmin = \"FALSE\"\n", &StatsPage{URI: "/haproxy?stats", Admin: "FALSE"}, nil},
		{"LOCALHOST", "enable = true\nadmin = \"LOCALHOST\"\n", &StatsPage{URI: "/haproxy?stats", Admin: "LOCALHOST"},
			[]string{"127.0.0.1", "::1"}},
		{"src without braces", "enable = true\nadmin = \"src 192.0.2.0/24\"\n", &StatsPage{URI: "/haproxy?stats", Admin: "src 192.0.2.0/24"},
			[]string{"192.0.2.1"}},
		{"named ACLs", "enable = true\nadmin = \"internal !blocked\"\n", &StatsPage{URI: "/haproxy?stats", Admin: "internal !blocked"},
			[]string{"10.1.2.3"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := frontend + backend
			if tc.section != "" {
				src = frontend + "[frontend.stats]\n" + tc.section + backend
			}
			cfg, err := Parse("t.toml", []byte(src))
			if err != nil {
				t.Fatal(err)
			}
			got := cfg.Frontends[0].Stats
			if (got == nil) != (tc.want == nil) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
			if got == nil {
				return
			}
			if got.URI != tc.want.URI || got.Refresh != tc.want.Refresh || !slices.Equal(got.Auth, tc.want.Auth) ||
				got.Admin != tc.want.Admin || got.HideVersion != tc.want.HideVersion {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
			var allowed []string
			for _, probe := range []string{"127.0.0.1", "10.1.2.3", "10.9.0.1", "192.0.2.1", "::1"} {
				r := acl.Request{Src: netip.AddrPortFrom(netip.MustParseAddr(probe), 40000), HTTP: true,
					Method: []byte("POST"), URI: []byte("/stats"), Version: []byte("1.1")}
				if got.AdminCond != nil && got.AdminCond.Eval(&r) {
					allowed = append(allowed, probe)
				}
			}
			if !slices.Equal(allowed, tc.admins) {
				t.Errorf("admin allowed from %v, want %v", allowed, tc.admins)
			}
		})
	}
}

package conf

import (
	"net/netip"
	"slices"
	"testing"
	"time"
)

// TestStatsPageModel checks what [frontend.stats] gives the proxy.
func TestStatsPageModel(t *testing.T) {
	const base = "[[frontend]]\nname = \"www\"\nbind = [\"127.0.0.1:8080\"]\ndefault_backend = \"web\"\n" +
		"[[backend]]\nname = \"web\"\n[[backend.server]]\nname = \"s1\"\naddress = \"127.0.0.1:9001\"\n"
	for _, tc := range []struct {
		name    string
		section string
		want    *StatsPage
	}{
		{"absent", "", nil},
		{"disabled", "enable = false\n", nil},
		{"defaults", "enable = true\n", &StatsPage{URI: "/haproxy?stats"}},
		{"full", "enable = true\nuri = \"/stats\"\nrefresh = \"5s\"\nauth = [\"a:b\"]\nadmin = \"{ src 127.0.0.1 10.0.0.0/8 }\"\nhide_version = true\n",
			&StatsPage{URI: "/stats", Refresh: 5 * time.Second, Auth: []string{"a:b"}, Admin: "{ src 127.0.0.1 10.0.0.0/8 }",
				AdminFrom: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32"), netip.MustParsePrefix("10.0.0.0/8")}, HideVersion: true}},
		{"TRUE", "enable = true\nadmin = \"TRUE\"\n", &StatsPage{URI: "/haproxy?stats", Admin: "TRUE", AdminAlways: true}},
		{"LOCALHOST", "enable = true\nadmin = \"LOCALHOST\"\n", &StatsPage{URI: "/haproxy?stats", Admin: "LOCALHOST",
			AdminFrom: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := base
			if tc.section != "" {
				src = "[[frontend]]\nname = \"www\"\nbind = [\"127.0.0.1:8080\"]\ndefault_backend = \"web\"\n[frontend.stats]\n" + tc.section +
					"[[backend]]\nname = \"web\"\n[[backend.server]]\nname = \"s1\"\naddress = \"127.0.0.1:9001\"\n"
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
				got.Admin != tc.want.Admin || got.AdminAlways != tc.want.AdminAlways ||
				!slices.Equal(got.AdminFrom, tc.want.AdminFrom) || got.HideVersion != tc.want.HideVersion {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

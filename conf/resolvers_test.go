package conf

import (
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestResolversModel checks the model of testdata/conf/resolvers.toml: the
// section with its name servers (named as written, port 53 by default),
// and the servers, plain and from templates, numbered together in file
// order with their DNS keys (inherited from default_server or set).
func TestResolversModel(t *testing.T) {
	data, err := os.ReadFile("../testdata/conf/resolvers.toml")
	if err != nil {
		t.Fatal(err)
	}
	config, _, _ := strings.Cut(string(data), "\n"+separator+"\n")
	cfg, err := Parse("resolvers.toml", []byte(config))
	if err != nil {
		t.Fatal(err)
	}
	r := cfg.Resolvers[0]
	want := &Resolvers{Name: "dns", Line: 6,
		Nameservers:         []Nameserver{{"127.0.0.1:5353", "127.0.0.1:5353"}, {"[::1]:53", "[::1]:53"}, {"10.0.0.2", "10.0.0.2:53"}},
		AcceptedPayloadSize: 8192, ResolveRetries: 2, TimeoutResolve: 500 * time.Millisecond, TimeoutRetry: 300 * time.Millisecond,
		HoldValid: time.Second, HoldObsolete: 2 * time.Second, HoldNX: 3 * time.Second, HoldTimeout: 3 * time.Second,
		HoldRefused: 3 * time.Second, HoldOther: 3 * time.Second}
	if !reflect.DeepEqual(r, want) {
		t.Errorf("resolvers:\ngot  %+v\nwant %+v", *r, *want)
	}
	var got []string
	for _, s := range cfg.Backends[0].Servers {
		got = append(got, fmt.Sprintf("%s %s %q %q %d %s %v %v %v %q %d %v", s.Name, s.Address, s.Resolvers, s.FQDN, s.Port,
			strings.Join(s.InitAddr, ","), s.ResolvePrefer, s.AllowDupIP, s.IgnoreWeight, s.Template, s.Weight, s.Check))
	}
	wantServers := []string{
		`s1 app.example.com:8080 "dns" "app.example.com" 8080 last,libc,none ipv4 true true "" 1 false`,
		`srv1 _http._tcp.web.service.consul "dns" "_http._tcp.web.service.consul" 0 last,libc,none ipv6 false false "srv" 10 true`,
		`srv2 _http._tcp.web.service.consul "dns" "_http._tcp.web.service.consul" 0 last,libc,none ipv6 false false "srv" 10 true`,
		`srv3 _http._tcp.web.service.consul "dns" "_http._tcp.web.service.consul" 0 last,libc,none ipv6 false false "srv" 10 true`,
		`srv4 _http._tcp.web.service.consul "dns" "_http._tcp.web.service.consul" 0 last,libc,none ipv6 false false "srv" 10 true`,
		`srv5 _http._tcp.web.service.consul "dns" "_http._tcp.web.service.consul" 0 last,libc,none ipv6 false false "srv" 10 true`,
		`app1 app.example.com:80 "dns" "app.example.com" 80 none ipv6 false false "app" 1 false`,
		`app2 app.example.com:80 "dns" "app.example.com" 80 none ipv6 false false "app" 1 false`,
		`app3 app.example.com:80 "dns" "app.example.com" 80 none ipv6 false false "app" 1 false`,
		`static 127.0.0.1:9000 "dns" "" 9000 last,libc,none ipv6 false false "" 1 false`,
	}
	if !reflect.DeepEqual(got, wantServers) {
		t.Errorf("servers:\ngot\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(wantServers, "\n"))
	}
	if !cfg.Backends[0].Servers[1].IsSRV() || cfg.Backends[0].Servers[6].IsSRV() {
		t.Errorf("IsSRV")
	}
}

// TestInitAddrDefault: HAProxy's default init-addr is "last,libc", with
// "none" appended for a server with resolvers.
func TestInitAddrDefault(t *testing.T) {
	for _, tt := range []struct {
		v         string
		resolvers bool
		want      string
	}{
		{"", false, "last,libc"},
		{"", true, "last,libc,none"},
		{"libc, 10.0.0.1", true, "libc,10.0.0.1"},
	} {
		if got := strings.Join(parseInitAddr(tt.v, tt.resolvers), ","); got != tt.want {
			t.Errorf("parseInitAddr(%q, %v): got %q, want %q", tt.v, tt.resolvers, got, tt.want)
		}
	}
}

// TestReadResolvConf: the nameserver lines of a resolv.conf, in order.
func TestReadResolvConf(t *testing.T) {
	in := "# comment\nsearch example.com\nnameserver 10.0.0.53\nnameserver ::1\nnameserver bogus\noptions ndots:2\nnameserver 192.168.1.1 # trailing\n"
	if got, want := readResolvConf(strings.NewReader(in)), []string{"10.0.0.53", "::1", "192.168.1.1"}; !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

// TestCheckFQDN checks the names a template may resolve.
func TestCheckFQDN(t *testing.T) {
	for _, tt := range []struct {
		name string
		ok   bool
	}{
		{"web.example.com", true}, {"_http._tcp.web.service.consul", true}, {"web.example.com.", true},
		{"a-b.c_d", true}, {"", false}, {".", false}, {"a..b", false}, {"a b", false}, {"a/b", false},
		{strings.Repeat("a", 64) + ".com", false}, {strings.Repeat("a.", 127) + "com", false},
	} {
		if err := checkFQDN(tt.name); (err == nil) != tt.ok {
			t.Errorf("checkFQDN(%q): %v, want ok %v", tt.name, err, tt.ok)
		}
	}
}

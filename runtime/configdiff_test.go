package runtime

import (
	"net"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/fulcrum-proxy/fulcrum/conf"
	"github.com/fulcrum-proxy/fulcrum/proxy"
)

// diffConfig is one backend (the last of the file: tables appended to the
// file are its servers) whose default_server gives several keys.
const diffConfig = `
[[frontend]]
name = "www"
bind = ["127.0.0.1:0"]
default_backend = "web"

[[backend]]
name = "web"

[backend.default_server]
check = true
weight = 2
slowstart = "5s"
pool_max_conn = 10
error_limit = 4

[[backend.server]]
name = "s1"
address = "127.0.0.1:18081"
`

// TestConfigDiffWritesBack: the [[backend.server]] tables show config-diff
// prints for servers added at runtime, appended to the file, define
// exactly those servers as they run (their weight and state set at
// runtime included), default_server notwithstanding.
func TestConfigDiffWritesBack(t *testing.T) {
	e := startEnv(t, diffConfig)
	for _, cmd := range []string{
		"add server web/d1 127.0.0.1:9101",
		"add server web/d2 [::1]:9102 weight 5 maxconn 10 maxqueue 3 minconn 2 check inter 2s fastinter 500ms downinter 1m rise 3 fall 1 backup slowstart 1s enabled",
		"add server web/d3 host-3.example:80 agent-check agent-port 9999 agent-inter 250ms agent-addr 127.0.0.2 agent-send \"ping\\n\" observe layer4 on-error mark-down error-limit 3 cookie c3 pool-max-conn -1 pool-low-conn 1 pool-purge-delay 1m id 40",
		"set weight web/d1 9",
		"set server web/d3 state ready",
		"set server web/d3 addr 127.0.0.3 port 8003",
	} {
		if got := e.run(t, LevelAdmin, cmd); strings.HasPrefix(got, "'") || strings.Contains(got, "No such") || strings.Contains(got, "expects") {
			t.Fatalf("%s: %q", cmd, got)
		}
	}
	diff := e.run(t, LevelAdmin, "show config-diff")
	var tables []string
	for _, part := range strings.Split(diff, "[[backend.server]]\n")[1:] {
		table, _, _ := strings.Cut(part, "\n\n")
		tables = append(tables, "[[backend.server]]\n"+table+"\n")
	}
	if len(tables) != 3 {
		t.Fatalf("%d tables in\n%s", len(tables), diff)
	}
	cfg, err := conf.Parse("test.toml", []byte(diffConfig+"\n"+strings.Join(tables, "\n")))
	if err != nil {
		t.Fatalf("the tables do not load: %v\n%s", err, strings.Join(tables, "\n"))
	}
	b := e.p.Backend("web")
	for _, sc := range cfg.Backends[0].Servers[1:] {
		s := b.Server(sc.Name)
		want := *s.Conf
		want.Address, want.Weight, want.Disabled = s.Addr(), int(s.UserWeight.Load()), s.Admin() == proxy.AdminMaint
		if _, port, err := net.SplitHostPort(want.Address); err == nil {
			want.Port, _ = strconv.Atoi(port) // the address set at runtime
		}
		got := *sc
		got.Line = 0
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s written back:\n got %+v\nwant %+v", sc.Name, got, want)
		}
	}
}

// TestConfigDiffTemplateSlots: the slots of a server_template have no
// table of their own: an operator's MAINT and a deleted slot are written
// as comments, and what DNS holds (MAINT (resolution), no address) is not
// an operator's change.
func TestConfigDiffTemplateSlots(t *testing.T) {
	e := startEnv(t, `
[[resolvers]]
name = "dns"
nameserver = ["127.0.0.1:1"]

[[frontend]]
name = "www"
bind = ["127.0.0.1:0"]
default_backend = "tb"

[[backend]]
name = "tb"

[[backend.server_template]]
prefix = "web"
count = 3
fqdn = "_http._tcp.svc.test"
resolvers = "dns"
init_addr = "none"
`)
	if got := e.run(t, LevelAdmin, "show config-diff"); got != "\n" {
		t.Fatalf("slots waiting for DNS: %q, want no difference", got)
	}
	for _, cmd := range []string{"set server tb/web1 state maint", "del server tb/web2"} {
		if got := e.run(t, LevelAdmin, cmd); got != "\n" && got != "Server deleted.\n" {
			t.Fatalf("%s: %q", cmd, got)
		}
	}
	want := `# backend "tb" (test.toml:11)
# server "web1" (test.toml:14): slot of server_template "web", MAINT set at runtime; a server_template has no per-slot key for it

# server "web2" (test.toml:14): slot of server_template "web", deleted at runtime; the template makes it again at a reload

`
	if got := e.run(t, LevelAdmin, "show config-diff"); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

package cli

import (
	"bufio"
	"net"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// fakeAPI answers the commands completion sends, in prompt mode, with
// fulcrum's replies for a proxy with backends web (s1, s2) and api (a1),
// frontend www, one stick table and two ACL pattern sets.
func fakeAPI(t *testing.T) Addr {
	t.Helper()
	replies := map[string]string{
		"help": `Unknown command. Please enter one of the following commands only:
  clear table <table> [<filter>]*         : remove an entry from a table (filter: data/key)
  del acl <acl> [<key>|#<ref>]            : delete acl entries matching <key>
  disable health                          : disable health checks
  disable server (DEPRECATED)             : disable a server for maintenance (use 'set server' instead)
  enable server  (DEPRECATED)             : enable a disabled server (use 'set server' instead)
  get weight <bk>/<srv>                   : report a server's current weight
  set maxconn frontend <frontend> <value> : change a frontend's maxconn setting
  set server <bk>/<srv> [opts]            : change a server's state, weight, address or ssl
  set table <table> key <k> [data.* <v>]* : update or create a table entry's data
  set timeout [cli] <delay>               : change a timeout setting
  show acl [@<ver>] <acl>]                : report available acls or dump an acl's contents
  show servers conn [<backend>]           : dump server connections status (all or for a single backend)
  show servers state [<backend>]          : dump volatile server information (all or for a single backend)
  show stat [desc|json|no-maint|typed|up]*: report counters for each proxy and server
  show table <table> [<filter>]*          : report table usage stats or dump this table's contents (filter: data/key)
  help [<command>]                        : list matching or all commands
  quit                                    : disconnect
`,
		"show stat": `# pxname,svname,status,
www,FRONTEND,OPEN,
web,s1,UP,
web,s2,UP,
web,BACKEND,UP,
api,a1,UP,
api,BACKEND,UP,
stats,BACKEND,UP,
`,
		"show table": "# table: www, type: ip, size:102400, used:0\n",
		"show acl": `# id (file) description
0 (./blocked.acl) pattern loaded from file './blocked.acl' used by acl at file 'f.toml' line 9. curr_ver=0 next_ver=0 entry_cnt=2
1 () acl 'path_beg' file 'f.toml' line 9. curr_ver=0 next_ver=0 entry_cnt=2
`,
		"show map":          "# id (file) description\n",
		"set server web/s1": "usage: set server <backend>/<server> agent | health | state | weight\n",
	}
	path := filepath.Join(t.TempDir(), "api.sock")
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					reply := replies[strings.TrimSpace(line)]
					if strings.TrimSpace(line) == "prompt" {
						reply = ""
					}
					if reply != "" && !strings.HasSuffix(reply, "\n") {
						reply += "\n"
					}
					c.Write([]byte(reply + "\n> "))
				}
			}()
		}
	}()
	return Addr(path)
}

// TestCompletion: what Tab offers after each line, from the server's help
// and the names it reports.
func TestCompletion(t *testing.T) {
	s, err := Dial(fakeAPI(t), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	comp := &Completer{Sess: s, Verbs: []Verb{
		{Name: "drain", Flags: []string{"--wait", "--timeout", "--maint-after", "--yes"}, Args: ArgServers},
		{Name: "ready", Args: ArgServers},
		{Name: "watch", Flags: []string{"--interval"}, Args: ArgBackend},
	}}
	data := dataNames()
	tests := []struct {
		name, line string
		want       []string
	}{
		{"first words, with fulcrumctl's verbs", "", []string{"clear", "del", "disable", "drain", "enable", "get", "help", "quit", "ready", "set", "show", "watch"}},
		{"second words", "show s", []string{"servers", "stat"}},
		{"third words", "show servers ", []string{"conn", "state"}},
		{"servers after enable server (help has no placeholder)", "enable server ", []string{"api/", "web/"}},
		{"servers of a backend", "disable server web/", []string{"web/s1", "web/s2"}},
		{"disable health takes a server", "disable health a", []string{"api/"}},
		{"get weight", "get weight web/s", []string{"web/s1", "web/s2"}},
		{"set server: servers", "set server ", []string{"api/", "web/"}},
		{"set server: subcommands from the server's usage reply", "set server web/s1 ", []string{"agent", "health", "state", "weight"}},
		{"set server state values", "set server web/s1 state ", []string{"drain", "maint", "ready"}},
		{"set server health values", "set server web/s1 health ", []string{"down", "stopping", "up"}},
		{"set server agent values", "set server web/s1 agent ", []string{"down", "up"}},
		{"set server weight: a number", "set server web/s1 weight ", nil},
		{"show table: tables", "show table ", []string{"www"}},
		{"show table: filters", "show table www ", append(append([]string{}, data...), "key")},
		{"show table: data names", "show table www data.http_req_r", []string{"data.http_req_rate"}},
		{"show table: operators", "show table www data.http_req_rate ", []string{"eq", "ge", "gt", "le", "lt", "ne"}},
		{"show table: a value", "show table www data.http_req_rate gt ", nil},
		{"show table: a second filter", "show table www data.http_req_rate gt 10 ", append(append([]string{}, data...), "key")},
		{"clear table", "clear table w", []string{"www"}},
		{"set table: key", "set table www ", []string{"key"}},
		{"set table: data after the key", "set table www key 10.0.0.1 ", data},
		{"acl ids and files", "del acl ", []string{"#0", "#1", "./blocked.acl"}},
		{"show acl", "show acl #", []string{"#0", "#1"}},
		{"show servers state: backends", "show servers state ", []string{"api", "stats", "web"}},
		{"show servers conn: backends", "show servers conn w", []string{"web"}},
		{"frontends", "set maxconn frontend ", []string{"www"}},
		{"show stat: proxies and options", "show stat ", []string{"api", "desc", "json", "no-maint", "stats", "typed", "up", "web", "www"}},
		{"drain: servers and backend/*", "drain web/", []string{"web/*", "web/s1", "web/s2"}},
		{"drain: backends", "drain ", []string{"api/", "web/"}},
		{"drain: flags", "drain web/s1 --", []string{"--maint-after", "--timeout", "--wait", "--yes"}},
		{"watch: backends", "watch ", []string{"api", "stats", "web"}},
		{"watch: one backend only", "watch web ", nil},
		{"set timeout: literal", "set timeout ", []string{"cli"}},
		{"show histogram: proxies and backends of servers", "show histogram ", []string{"api", "api/", "stats", "web", "web/", "www"}},
		{"show histogram: servers", "show histogram web/", []string{"web/s1", "web/s2"}},
		{"show histogram: timings", "show histogram web/s1 ", []string{"connect", "queue", "response", "total"}},
		{"show histogram: nothing after the timing", "show histogram web total ", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := comp.Candidates(tc.line)
			if len(got) == 0 && len(tc.want) == 0 {
				return
			}
			if !reflect.DeepEqual(got, sortedCopy(tc.want)) {
				t.Errorf("Candidates(%q) = %q, want %q", tc.line, got, sortedCopy(tc.want))
			}
		})
	}
	// What readline inserts: the rest of the word, a space after a
	// complete word, none after "backend/".
	if got, n := comp.Do([]rune("set server web/s1 st"), len("set server web/s1 st")); len(got) != 1 || string(got[0]) != "ate " || n != 2 {
		t.Errorf("Do: %q %d", got, n)
	}
	if got, _ := comp.Do([]rune("enable server w"), len("enable server w")); len(got) != 1 || string(got[0]) != "eb/" {
		t.Errorf("Do after a backend: %q", got)
	}
}

func sortedCopy(in []string) []string { return uniqueSorted(in) }

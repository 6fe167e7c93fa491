package conf

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestParseServerLine: a server line gives the server HAProxy's `add
// server` would, starting in MAINT unless "enabled"; Keywords writes it
// back so that it reads the same.
func TestParseServerLine(t *testing.T) {
	def := func(f func(s *Server)) *Server {
		s := &Server{Name: "n1", Address: "127.0.0.1:8080", Weight: 1, Disabled: true, ErrorLimit: 10,
			OnError: "fail-check", PoolMaxConn: -1, PoolPurgeDelay: 5 * time.Second}
		if f != nil {
			f(s)
		}
		// The DNS keys of a server without resolvers, as the file's.
		_, s.Port = serverHostPort(s.Address)
		s.ResolvePrefer, s.InitAddr = "ipv6", []string{"last", "libc"}
		return s
	}
	cases := []struct {
		name string
		line string
		want *Server
		id   int
	}{
		{"address only", "127.0.0.1:8080", def(nil), 0},
		{"enabled", "127.0.0.1:8080 enabled", def(func(s *Server) { s.Disabled = false }), 0},
		{"enabled then disabled", "127.0.0.1:8080 enabled disabled", def(nil), 0},
		{"host name", "web-1.internal:80", def(func(s *Server) { s.Address = "web-1.internal:80" }), 0},
		{"IPv6 with brackets", "[::1]:80", def(func(s *Server) { s.Address = "[::1]:80" }), 0},
		{"IPv6 without brackets", "::1:80", def(func(s *Server) { s.Address = "[::1]:80" }), 0},
		{"every keyword", "127.0.0.1:8080 weight 10 maxconn 5 maxqueue 3 minconn 1 check inter 2s fastinter 500 downinter 1m " +
			"rise 3 fall 4 backup slowstart 5s agent-check agent-port 9999 agent-inter 250ms agent-send ping agent-addr 127.0.0.2 " +
			"observe layer7 on-error mark-down error-limit 3 cookie c1 id 100 pool-max-conn 10 pool-low-conn 1 pool-purge-delay 1s enabled",
			def(func(s *Server) {
				s.Weight, s.MaxConn, s.MaxQueue, s.MinConn, s.Check = 10, 5, 3, 1, true
				s.Inter, s.FastInter, s.DownInter, s.Rise, s.Fall = 2*time.Second, 500*time.Millisecond, time.Minute, 3, 4
				s.Backup, s.Slowstart, s.Disabled = true, 5*time.Second, false
				s.Agent = &Agent{Port: 9999, Inter: 250 * time.Millisecond, Send: "ping", Addr: "127.0.0.2"}
				s.Observe, s.OnError, s.ErrorLimit, s.Cookie = "layer7", "mark-down", 3, "c1"
				s.PoolMaxConn, s.PoolLowConn, s.PoolPurgeDelay = 10, 1, time.Second
			}), 100},
		{"agent settings without agent-check", "127.0.0.1:8080 agent-port 9999", def(nil), 0},
		{"minconn above maxconn", "127.0.0.1:8080 maxconn 2 minconn 5", def(func(s *Server) { s.MaxConn, s.MinConn = 2, 2 }), 0},
		{"observe none", "127.0.0.1:8080 observe layer4 observe none", def(nil), 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, line, err := ParseServerLine("n1", strings.Fields(tc.line), nil)
			if err != nil {
				t.Fatalf("got error %q", err)
			}
			if !reflect.DeepEqual(got, tc.want) || line.ID != tc.id {
				t.Fatalf("got %+v id %d\nwant %+v id %d", got, line.ID, tc.want, tc.id)
			}
			again, line2, err := ParseServerLine("n1", got.Keywords(line.ID, !got.Disabled), nil)
			if err != nil || !reflect.DeepEqual(again, got) || line2 != line {
				t.Fatalf("Keywords %q read back as %+v (%v), want %+v", got.Keywords(line.ID, !got.Disabled), again, err, got)
			}
		})
	}
}

// TestParseServerLineErrors: each mistake gets its reply, HAProxy 2.6's
// text where it has one for the same mistake (captured in
// testdata/runtime/haproxy/add-server.txt).
func TestParseServerLineErrors(t *testing.T) {
	cases := []struct {
		name, line, want string
	}{
		{"b@d", "127.0.0.1:1", "character '@' is not permitted in server name 'b@d'."},
		{"n1", "", "'server' expects <name> and <addr>[:<port>] as arguments."},
		{"n1", "127.0.0.1:abc", "invalid character 'a' in port number 'abc' in '127.0.0.1:abc'\n"},
		{"n1", "127.0.0.1:70000", "invalid port '70000'"},
		{"n1", "127.0.0.1:0", "invalid port '0'"},
		{"n1", "127.0.0.1", "Missing port in server address '127.0.0.1' (fulcrum needs one)."},
		{"n1", "999.1.1.1:80", "invalid address: '999.1.1.1:80'."},
		{"n1", ":80", "Missing address in ':80'."},
		{"n1", "127.0.0.1:1 weight 300", "weight of server n1 is not within 0 and 256 (300).."},
		{"n1", "127.0.0.1:1 weight -1", "weight of server n1 is not within 0 and 256 (-1).."},
		{"n1", "127.0.0.1:1 weight abc", "'weight' expects an integer argument, got 'abc'."},
		{"n1", "127.0.0.1:1 weight", "'weight' expects an argument."},
		{"n1", "127.0.0.1:1 maxconn abc", "'maxconn' expects an integer of at least 0, got 'abc'."},
		{"n1", "127.0.0.1:1 bogus", "unknown keyword 'bogus'."},
		{"n1", "127.0.0.1:1 track web/s1", "unknown keyword 'track'."},
		{"n1", "127.0.0.1:1 id 0", "'id' : custom id has to be > 0."},
		{"n1", "127.0.0.1:1 id abc", "'id' : custom id has to be > 0."},
		{"n1", "127.0.0.1:1 id", "'id' : expects an integer argument."},
		{"a17", "127.0.0.1:1 fastinter 0", "invalid value 0 for argument 'fastinter' of server a17.."},
		{"a18", "127.0.0.1:1 downinter abc", "unexpected character 'a' in 'downinter' argument of server a18.."},
		{"a16", "127.0.0.1:1 inter", "'inter' expects a delay as argument.."},
		{"a16", "127.0.0.1:1 inter 5x", "unexpected character 'x' in 'inter' argument of server a16.."},
		{"a14", "127.0.0.1:1 agent-inter 0", "invalid value 0 for argument 'agent-inter' of server a14.."},
		{"n1", "127.0.0.1:1 rise", "'rise' expects an integer argument.."},
		{"n1", "127.0.0.1:1 rise abc", "'rise' has to be > 0.."},
		{"n1", "127.0.0.1:1 fall -1", "'fall' has to be > 0.."},
		{"n1", "127.0.0.1:1 agent-send", "'agent-send' expects a string as argument.."},
		{"n1", "127.0.0.1:1 agent-addr", "'agent-addr' expects an address as argument.."},
		{"n1", "127.0.0.1:1 agent-check", "server n1 does not have agent port. Agent check has been disabled."},
		{"n1", "127.0.0.1:1 agent-port 0", "'agent-port' expects a port number (1..65535), got '0'."},
		{"n1", "127.0.0.1:1 pool-low-conn", "'pool-low-conn' expects <value> as argument.."},
		{"n1", "127.0.0.1:1 pool-purge-delay x", "unexpected character 'x' in argument to <pool-purge-delay>.."},
		{"n1", "127.0.0.1:1 observe layer9", "'observe' expects one of 'none', 'layer4', 'layer7' but got 'layer9'."},
		{"n1", "127.0.0.1:1 on-error x", "'on-error' expects one of 'fastinter', 'fail-check', 'sudden-death' or 'mark-down' but got 'x'."},
		{"n1", "127.0.0.1:1 error-limit 0", "error-limit has to be > 0.."},
		// TLS and the PROXY protocol, HAProxy 2.6's texts
		// (testdata/runtime/haproxy/add-server-tls.txt).
		{"n1", "127.0.0.1:1 no-ssl", "'no-ssl' option is not accepted for dynamic server"},
		{"n1", "127.0.0.1:1 ssl ca-file /nonexistent/ca.pem", "'ca-file' : unable to load /nonexistent/ca.pem."},
		{"n1", "127.0.0.1:1 ssl verify none sni nosuchfetch(x)", "error detected while parsing sni expression : unknown fetch method 'nosuchfetch'"},
		{"n1", "127.0.0.1:1 ssl verify maybe", "'verify' : unknown verify method 'maybe', only 'none' and 'required' are supported."},
		{"n1", "127.0.0.1:1 ssl verify none crt /nonexistent/c.pem", "unable to stat SSL certificate '/nonexistent/c.pem'."},
		{"n1", "127.0.0.1:1 ssl verify none alpn", "'alpn' : missing the comma-delimited ALPN protocol suite."},
		{"n1", "127.0.0.1:1 send-proxy-v2 proxy-v2-options bogus", "'bogus' : proxy v2 option not implemented."},
		{"n1", "127.0.0.1:1 ssl verify none sni", "'sni' : missing sni expression."},
		{"n1", "127.0.0.1:1 ssl verify none verifyhost", "'verifyhost' : missing hostname to verify against."},
		{"n1", "127.0.0.1:1 ssl verify none ca-file", "'ca-file' : missing CAfile path."},
		{"n1", "127.0.0.1:1 ssl verify none crt", "'crt' : missing certificate file path."},
		{"n1", "127.0.0.1:1 proxy-v2-options", "'' : proxy v2 option not implemented."},
		{"n1", "127.0.0.1:1 verify", "'verify' : missing verify method."},
		// fulcrum's own, as the file's keys.
		{"n1", "127.0.0.1:1 send-proxy proxy-v2-options ssl", "'proxy-v2-options' needs 'send-proxy-v2'."},
	}
	for _, tc := range cases {
		t.Run(tc.line, func(t *testing.T) {
			_, _, err := ParseServerLine(tc.name, strings.Fields(tc.line), nil)
			if err == nil {
				t.Fatalf("no error, want %q", tc.want)
			}
			if _, ok := err.(*ServerLineError); !ok || err.Error() != tc.want {
				t.Fatalf("got %q (%T), want %q", err, err, tc.want)
			}
		})
	}
}

// TestCheckTimes: a server's own check timings win over its backend's;
// fastinter and downinter follow its own inter.
func TestCheckTimes(t *testing.T) {
	bc := &Check{Inter: 2 * time.Second, FastInter: time.Second, DownInter: 5 * time.Second, Rise: 2, Fall: 3}
	cases := []struct {
		name string
		s    Server
		want [5]any
	}{
		{"backend's", Server{}, [5]any{2 * time.Second, time.Second, 5 * time.Second, 2, 3}},
		{"own inter", Server{Inter: 3 * time.Second}, [5]any{3 * time.Second, 3 * time.Second, 3 * time.Second, 2, 3}},
		{"own all", Server{Inter: 3 * time.Second, FastInter: time.Second, DownInter: 9 * time.Second, Rise: 1, Fall: 1},
			[5]any{3 * time.Second, time.Second, 9 * time.Second, 1, 1}},
	}
	for _, tc := range cases {
		i, f, d, r, fa := tc.s.CheckTimes(bc)
		if got := [5]any{i, f, d, r, fa}; got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
	if i, _, _, r, f := (&Server{}).CheckTimes(nil); i != 2*time.Second || r != 2 || f != 3 {
		t.Errorf("without [backend.check]: %v %d %d", i, r, f)
	}
}

// FuzzServerLine: no server line makes the parser panic, and every line it
// accepts is written back by Keywords into a line that reads the same.
func FuzzServerLine(f *testing.F) {
	for _, seed := range []string{
		"127.0.0.1:8080", "::1:80 check inter 2s rise 3", "[::1]:80 weight 10 maxconn 5 enabled",
		"web:80 agent-check agent-port 9 agent-send hello agent-inter 1m", "1.2.3.4:5 slowstart 10s id 7 cookie x",
		"127.0.0.1:abc", "127.0.0.1:1 weight 300", "x:1 pool-purge-delay 5d observe layer4 on-error sudden-death",
		"127.0.0.1:1 ssl verify none sni str(x) verifyhost x alpn h2,http/1.1 send-proxy-v2 proxy-v2-options ssl,crc32c",
		"127.0.0.1:1 check check-ssl sni req.hdr(host) check-send-proxy", "127.0.0.1:1 send-proxy ssl ca-file @system-ca",
	} {
		f.Add("n1", seed)
	}
	f.Fuzz(func(t *testing.T, name, line string) {
		s, l, err := ParseServerLine(name, strings.Fields(line), nil)
		if err != nil {
			if _, ok := err.(*ServerLineError); !ok {
				t.Fatalf("error of type %T", err)
			}
			return
		}
		again, l2, err := ParseServerLine(name, s.Keywords(l.ID, !s.Disabled), nil)
		if err != nil || !reflect.DeepEqual(again, s) || l2 != l {
			t.Fatalf("%q: written back as %q, read as %+v (%v), want %+v", line, s.Keywords(l.ID, !s.Disabled), again, err, s)
		}
	})
}

package haproxycfg

// HAProxy and fulcrum on the same configuration, the same upstreams and
// the same scripted requests must choose the same servers: the import
// keeps routing and balancing, not only the syntax.

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"text/template"
	"time"

	"github.com/fulcrum-proxy/fulcrum/conf"
	"github.com/fulcrum-proxy/fulcrum/internal/testutil"
	fproxy "github.com/fulcrum-proxy/fulcrum/proxy"
	"github.com/rs/zerolog"
)

// step is one scripted request.
type step struct {
	client int    // the request comes from 127.0.0.<client> (1 when 0)
	method string // GET when ""
	path   string
	host   string
	header string // "Name: value", "" for none
	cookie string // a Cookie header of its own; else the client's jar is sent
}

// String describes the step in the .want files.
func (s step) String() string {
	d := fmt.Sprintf("client %d %s %s", max(s.client, 1), cmpOr(s.method, "GET"), s.path)
	if s.host != "" {
		d += " host=" + s.host
	}
	if s.header != "" {
		d += " [" + s.header + "]"
	}
	if s.cookie != "" {
		d += " cookie=" + s.cookie
	}
	return d
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// cycles are the cases compared cycle by cycle (as sets of that many
// requests) rather than request by request: weighted round-robin spreads
// a cycle alike, but HAProxy's and fulcrum's smooth orders break ties
// differently (issue 23; see weighted_rr.cfg).
var cycles = map[string]int{"weighted_rr": 4}

// routingCases are the scripts, by configuration (testdata/import/routing).
var routingCases = map[string][]step{
	"roundrobin":  repeat(9, step{path: "/"}),
	"weighted_rr": repeat(12, step{path: "/"}),
	"uri_hash": func() []step {
		var s []step
		for _, p := range []string{"/a", "/b", "/c", "/img/1.png", "/img/2.png", "/api/v1/users", "/index.html", "/x?y=1", "/a", "/c", "/img/1.png", "/x?y=2"} {
			s = append(s, step{path: p})
		}
		return s
	}(),
	"acl_routing": {
		{path: "/", host: "api.example.com"},
		{path: "/api/users"},
		{path: "/style.css"},
		{method: "POST", path: "/style.css"},
		{path: "/", header: "X-Beta: 1"},
		{client: 2, path: "/"},
		{path: "/"},
		{path: "/other"},
		{path: "/logo.png", host: "api.example.com"},
	},
	"stick_src": {
		{client: 1, path: "/"}, {client: 2, path: "/"}, {client: 3, path: "/"}, {client: 4, path: "/"},
		{client: 1, path: "/"}, {client: 2, path: "/"}, {client: 3, path: "/"}, {client: 4, path: "/"},
		{client: 4, path: "/"}, {client: 1, path: "/"},
	},
	"cookie": {
		{client: 1, path: "/"}, {client: 1, path: "/"}, {client: 2, path: "/"}, {client: 2, path: "/"},
		{client: 3, path: "/"}, {client: 1, path: "/"}, {client: 4, path: "/", cookie: "SRV=c3"},
		{client: 4, path: "/", cookie: "SRV=nosuch"}, {client: 3, path: "/"},
	},
	"source_hash": {
		{client: 1, path: "/"}, {client: 2, path: "/"}, {client: 3, path: "/"}, {client: 4, path: "/"},
		{client: 5, path: "/"}, {client: 6, path: "/"}, {client: 7, path: "/"}, {client: 1, path: "/"},
	},
	"url_param": {
		{path: "/?user=alice"}, {path: "/?user=bob"}, {path: "/?user=carol"}, {path: "/p?x=1&user=dave"},
		{path: "/?user=alice"}, {path: "/"}, {path: "/"}, {path: "/?user=bob"},
	},
}

func repeat(n int, s step) []step {
	out := make([]step, n)
	for i := range out {
		out[i] = s
	}
	return out
}

// upstreams starts three HTTP servers that answer with their name.
func upstreams(t *testing.T) map[string]string {
	t.Helper()
	addrs := map[string]string{}
	for _, name := range []string{"s1", "s2", "s3"} {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, name)
		})}
		go srv.Serve(l)
		t.Cleanup(func() { srv.Close() })
		addrs[strings.ToUpper(name)] = l.Addr().String()
	}
	return addrs
}

// instantiate fills a routing template.
func instantiate(t *testing.T, name string, vars map[string]string) []byte {
	t.Helper()
	tmpl, err := template.ParseFiles(filepath.Join(corpusDir, "routing", name+".cfg"))
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := tmpl.Execute(&b, vars); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// freePort returns a port that was free a moment ago.
func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, port, _ := net.SplitHostPort(l.Addr().String())
	return port
}

// runHAProxy runs haproxy on cfg until the test ends and returns the
// frontend's address.
func runHAProxy(t *testing.T, haproxy string, cfg []byte, port string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "haproxy.cfg")
	if err := os.WriteFile(path, cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(haproxy, "-db", "-q", "-f", path)
	var out testutil.SyncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	addr := "127.0.0.1:" + port
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return addr
		}
		if time.Now().After(deadline) {
			t.Fatalf("haproxy does not listen on %s: %v\n%s", addr, err, out.String())
		}
		time.Sleep(20 * time.Millisecond) // polling for the listener, with a deadline
	}
}

// runFulcrum imports cfg, runs it in this process until the test ends and
// returns the frontend's address.
func runFulcrum(t *testing.T, cfg []byte) string {
	t.Helper()
	r, err := Import(cfg, Options{Name: "routing.cfg"})
	if err != nil {
		t.Fatal(err)
	}
	if b := r.Blocking(); len(b) > 0 {
		t.Fatalf("the routing configuration has lines fulcrum does not run: %v", b)
	}
	c, err := conf.Parse("routing.toml", r.TOML)
	if err != nil {
		t.Fatal(err)
	}
	p, err := fproxy.New(c, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		p.Shutdown(ctx)
	})
	return p.Frontends[0].Addrs()[0].String()
}

// play sends the script to addr and returns, for each step, the server
// that answered (or the status when it is not 200).
func play(t *testing.T, addr string, script []step) []string {
	t.Helper()
	jars := map[int]map[string]string{}
	var out []string
	for _, s := range script {
		client := max(s.client, 1)
		local := &net.TCPAddr{IP: net.IPv4(127, 0, 0, byte(client))}
		tr := &http.Transport{
			DialContext:       (&net.Dialer{LocalAddr: local, Timeout: 5 * time.Second}).DialContext,
			DisableKeepAlives: true,
		}
		req, err := http.NewRequest(cmpOr(s.method, "GET"), "http://"+addr+s.path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if s.host != "" {
			req.Host = s.host
		}
		if name, v, ok := strings.Cut(s.header, ": "); ok {
			req.Header.Set(name, v)
		}
		if jars[client] == nil {
			jars[client] = map[string]string{}
		}
		if s.cookie != "" {
			req.Header.Set("Cookie", s.cookie)
		} else {
			for k, v := range jars[client] {
				req.AddCookie(&http.Cookie{Name: k, Value: v})
			}
		}
		resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Do(req)
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		tr.CloseIdleConnections()
		if s.cookie == "" {
			for _, c := range resp.Cookies() {
				jars[client][c.Name] = c.Value
			}
		}
		if resp.StatusCode != http.StatusOK {
			out = append(out, "status "+strconv.Itoa(resp.StatusCode))
			continue
		}
		out = append(out, string(body))
	}
	return out
}

// transcript writes a script and the servers chosen, one step a line.
func transcript(script []step, got []string) string {
	var b strings.Builder
	for i, s := range script {
		fmt.Fprintf(&b, "%s -> %s\n", s, got[i])
	}
	return b.String()
}

// TestRoutingMatchesHAProxy runs each routing configuration under fulcrum
// (imported) and checks the servers it chooses for the script against the
// ones HAProxy 2.6 chose (testdata/import/routing/<case>.want); when
// haproxy is installed it runs HAProxy on the same configuration and
// upstreams too, and -update records HAProxy's choices.
func TestRoutingMatchesHAProxy(t *testing.T) {
	// Without haproxy (and outside CI, where it is required), fulcrum is
	// still checked against HAProxy's recorded choices.
	haproxy, err := exec.LookPath("haproxy")
	if err != nil && os.Getenv("CI") == "true" {
		testutil.NeedTool(t, "haproxy", "haproxy")
	}
	for name, script := range routingCases {
		t.Run(name, func(t *testing.T) {
			ups := upstreams(t)
			port := freePort(t)
			hvars := map[string]string{"Port": port}
			fvars := map[string]string{"Port": "0"}
			for k, v := range ups {
				hvars[k], fvars[k] = v, v
			}
			ful := transcript(script, play(t, runFulcrum(t, instantiate(t, name, fvars)), script))
			want := filepath.Join(corpusDir, "routing", name+".want")
			var hap string
			if haproxy != "" {
				hap = transcript(script, play(t, runHAProxy(t, haproxy, instantiate(t, name, hvars), port), script))
				golden(t, want, hap)
			} else {
				b, err := os.ReadFile(want)
				if err != nil {
					t.Fatal(err)
				}
				hap = string(b)
				t.Logf("haproxy not installed: compared with its recorded choices (%s)", filepath.Base(want))
			}
			if n := cycles[name]; n > 0 {
				ful, hap = byCycle(ful, n), byCycle(hap, n)
			}
			if ful != hap {
				t.Errorf("fulcrum chose other servers than HAProxy:\n--- fulcrum\n%s--- haproxy\n%s", ful, hap)
			}
		})
	}
}

// byCycle rewrites a transcript as the sorted servers of each cycle of n
// requests.
func byCycle(transcript string, n int) string {
	var servers []string
	for _, l := range strings.Split(strings.TrimSpace(transcript), "\n") {
		_, srv, _ := strings.Cut(l, " -> ")
		servers = append(servers, srv)
	}
	var b strings.Builder
	for i := 0; i < len(servers); i += n {
		cycle := slices.Clone(servers[i:min(i+n, len(servers))])
		slices.Sort(cycle)
		fmt.Fprintf(&b, "cycle %d: %s\n", i/n+1, strings.Join(cycle, " "))
	}
	return b.String()
}

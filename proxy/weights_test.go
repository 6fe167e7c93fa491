package proxy

import (
	"bufio"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-proxy/fulcrum/conf"
	"github.com/rs/zerolog"
)

// TestStatsWeightsAsHAProxy is issue 16 point 11: during slowstart the
// server rows kept showing the user weight with an empty throttle, and a
// backend whose backups were in use (without allbackups) summed every
// backup's weight (8 for 3 and 5) where HAProxy shows the one in use (3).
// It replays the configuration and events of
// testdata/stats/slowstart-haproxy-2.6.txt, a capture of HAProxy 2.6's
// `show stat`, on a fake clock, samples the snapshot once a second of each
// ramp (HAProxy steps its ramps on whole seconds) and after each event, and
// compares the sequence of values each row shows.
func TestStatsWeightsAsHAProxy(t *testing.T) {
	srv := func(name string, w int, ss time.Duration, maxconn int) *conf.Server {
		return &conf.Server{Name: name, Address: "127.0.0.1:1", Weight: w, Slowstart: ss, MaxConn: maxconn}
	}
	backup := func(name string, w int) *conf.Server {
		s := srv(name, w, 0, 0)
		s.Backup = true
		return s
	}
	be := func(name, balance, hash string, all bool, servers ...*conf.Server) *conf.Backend {
		return &conf.Backend{Name: name, Mode: conf.ModeHTTP, Balance: balance, HashType: hash, AllBackups: all,
			TimeoutConnect: time.Second, Servers: servers}
	}
	const ss = 20 * time.Second
	cfg := &conf.Config{Backends: []*conf.Backend{
		be("rr", "roundrobin", "", false, srv("s1", 100, ss, 50), srv("s2", 12, ss, 7), srv("s3", 1, ss, 0),
			srv("s4", 256, ss, 1000), srv("s5", 10, 0, 0)),
		be("lc", "leastconn", "", false, srv("l1", 100, 7*time.Second, 30), srv("l2", 3, 0, 0)),
		be("st", "static-rr", "", false, srv("a1", 100, ss, 40), srv("a2", 50, 0, 0)),
		be("ch", "uri", "consistent", false, srv("c1", 20, ss, 0), srv("c2", 20, 0, 0)),
		be("bk", "roundrobin", "", false, srv("act", 10, 0, 0), backup("b1", 3), backup("b2", 5)),
		be("bkall", "roundrobin", "", true, srv("act", 10, 0, 0), backup("b1", 3), backup("b2", 5)),
	}}
	p, err := New(cfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	clk := newFakeClock()
	for _, b := range p.Backends {
		b.mu.Lock()
		b.clock = clk
		b.mu.Unlock()
	}
	server := func(name string) (*Backend, *Server) {
		bn, sn, _ := strings.Cut(name, "/")
		b := p.Backend(bn)
		return b, b.Server(sn)
	}
	// Before t=0 the checked servers are DOWN (their port is closed).
	checked := []string{"rr/s1", "rr/s2", "rr/s3", "rr/s4", "lc/l1", "st/a1", "ch/c1", "bk/act", "bkall/act"}
	for _, name := range checked {
		b, s := server(name)
		b.SetOp(s, OpDown)
	}

	got := map[string][]string{}
	sample := func() {
		for _, bs := range p.Snapshot().Backends {
			for _, ss := range bs.Servers {
				th := "-"
				if ss.Throttle >= 0 {
					th = fmt.Sprint(ss.Throttle)
				}
				appendChange(got, bs.Name+"/"+ss.Name, fmt.Sprintf("%d/%d/%s", ss.Weight, ss.UserWeight, th))
			}
			appendChange(got, bs.Name+"/BACKEND", fmt.Sprintf("%d/%d/%d/%d", bs.Weight, bs.UserWeight, bs.Act, bs.Bck))
		}
	}
	sample()
	for _, name := range checked { // the ports open: every check passes
		b, s := server(name)
		b.SetOp(s, OpUp)
	}
	events := map[time.Duration]func(){
		9500 * time.Millisecond: func() { b, s := server("rr/s3"); b.SetAdmin(s, AdminDrain) },
		10500 * time.Millisecond: func() {
			b, s := server("rr/s2")
			if _, err := b.SetWeight(s, 24); err != nil {
				t.Fatal(err)
			}
		},
		13500 * time.Millisecond: func() { b, s := server("ch/c1"); b.SetAdmin(s, AdminMaint) },
		15 * time.Second:         func() { b, s := server("ch/c1"); b.SetAdmin(s, AdminReady) },
		16 * time.Second:         func() { b, s := server("bk/act"); b.SetAdmin(s, AdminMaint) },
	}
	for at := time.Duration(0); at <= 40*time.Second; at += 500 * time.Millisecond {
		if at > 0 {
			clk.Advance(500 * time.Millisecond)
		}
		if ev := events[at]; ev != nil {
			ev()
		}
		if at%time.Second == 0 {
			sample()
		}
	}

	want := readWeightsGolden(t, "../testdata/stats/slowstart-haproxy-2.6.txt")
	for _, name := range sortedKeys(want) {
		if g, w := strings.Join(got[name], " "), strings.Join(want[name], " "); g != w {
			t.Errorf("%s:\n got %s\nwant %s", name, g, w)
		}
	}
	if clk.pending() != 0 {
		t.Errorf("%d slowstart timers left after every ramp ended", clk.pending())
	}
}

// appendChange appends v to m[key] unless it is the last value already.
func appendChange(m map[string][]string, key, v string) {
	if l := m[key]; len(l) == 0 || l[len(l)-1] != v {
		m[key] = append(l, v)
	}
}

// readWeightsGolden reads "row value value..." lines, # comments aside.
func readWeightsGolden(t *testing.T, path string) map[string][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string][]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if line := sc.Text(); line != "" && !strings.HasPrefix(line, "#") {
			fields := strings.Fields(line)
			out[fields[0]] = fields[1:]
		}
	}
	if len(out) == 0 {
		t.Fatalf("%s: no rows", path)
	}
	return out
}

// sortedKeys returns m's keys in order.
func sortedKeys(m map[string][]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

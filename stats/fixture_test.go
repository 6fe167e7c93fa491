package stats

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/fulcrum-proxy/fulcrum/proxy"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/stats")

// taken is the fixed instant of the test snapshot.
var taken = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

// testSnapshot is a fixed snapshot with one server in each state the status
// column distinguishes: UP, UP going down, DOWN, DOWN going up, no check,
// MAINT (checks paused), DRAIN, NOLB, an agent, a backup, a limited server, a DOWN backend and an empty one.
func testSnapshot() *proxy.Snapshot {
	ago := func(s int) time.Time { return taken.Add(-time.Duration(s) * time.Second) }
	check := func(status, desc string, health, rise, fall int) *proxy.CheckSnapshot {
		return &proxy.CheckSnapshot{Status: status, Desc: desc, Rise: rise, Fall: fall, Health: health, Duration: 1}
	}
	srv := func(id int, name string, w int) proxy.ServerSnapshot {
		return proxy.ServerSnapshot{Name: name, ID: id, Addr: "127.0.0.1:1808" + string(rune('0'+id)),
			InitialWeight: w, UserWeight: w, EffectiveWeight: w, Weight: w, Throttle: -1, LastChange: ago(161)}
	}
	web := []proxy.ServerSnapshot{
		srv(1, "s1", 100), srv(2, "s2", 50), srv(3, "s3", 1), srv(4, "s4", 1),
		srv(5, "s5", 1), srv(6, "s6", 1), srv(7, "s7", 10), srv(8, "b1", 1),
	}
	// s1: UP, checks at full health, some traffic.
	web[0].Check = check("L7OK", "Layer7 check passed", 4, 3, 2)
	web[0].Check.Code = 200
	web[0].Check.Downs = 6
	web[0].Check.Downtime = 1
	web[0].Agent = &proxy.AgentSnapshot{Status: "L7OK", Desc: "Layer7 check passed", Info: "via agent : up",
		Duration: 1, Rise: 1, Fall: 1, Health: 1}
	web[0].CounterValues = proxy.CounterValues{Scur: 2, Smax: 7, Stot: 120, Bin: 14200, Bout: 981234,
		Lbtot: 120, ReqTot: 120, Hrsp2xx: 110, Hrsp3xx: 4, Hrsp4xx: 5, Hrsp5xx: 1, Rate: 3, RateMax: 9,
		Econ: 1, Eresp: 2, Wretr: 1, Wredis: 1, CliAbrt: 1, SrvAbrt: 1, LastSess: ago(2),
		Qtime: 0, Ctime: 1, Rtime: 12, Ttime: 40}
	// s1's latency histograms: 100 responses of 1..100 ms, 10 µs connects.
	var tm proxy.Timings
	for i := range 100 {
		tm[proxy.TimingConnect].Record(10 * time.Microsecond)
		tm[proxy.TimingResponse].Record(time.Duration(i+1) * time.Millisecond)
		tm[proxy.TimingTotal].Record(time.Duration(i+2) * time.Millisecond)
	}
	web[0].Obs.Timings = &tm
	// s2: UP, one failed check (UP 2/3).
	web[1].Check = check("L7STS", "Layer7 wrong status", 3, 2, 3)
	web[1].Check.Code = 503
	web[1].Check.Info = "Service Unavailable"
	web[1].Check.Failed = 1
	web[1].Check.Observe = true
	// s3: DOWN, connection refused.
	web[2].Op, web[2].EffectiveWeight = proxy.OpDown, 0
	web[2].Check = check("L4CON", "Layer4 connection problem", 0, 2, 3)
	web[2].Check.Info = "Connection refused"
	web[2].Check.Duration = 0
	web[2].Check.Failed, web[2].Check.Downs, web[2].Check.Downtime = 1, 1, 161
	// s4: DOWN going up (DOWN 1/2); a reason phrase that needs CSV quoting.
	web[3].Op, web[3].EffectiveWeight = proxy.OpDown, 0
	web[3].Check = check("L7STS", "Layer7 wrong status", 1, 2, 3)
	web[3].Check.Code = 503
	web[3].Check.Info = `Bad, "quoted" thing`
	web[3].Check.Running = true
	web[3].Check.Failed, web[3].Check.Downs, web[3].Check.Downtime = 3, 1, 100
	// s5: no check.
	// s6: MAINT, its checks paused.
	web[5].Admin, web[5].EffectiveWeight = proxy.AdminMaint, 0
	web[5].Check = &proxy.CheckSnapshot{Paused: true, Rise: 2, Fall: 3, Downtime: 161, Duration: -1}
	// s7: DRAIN, keeps its own weight on its row.
	web[6].Admin, web[6].EffectiveWeight = proxy.AdminDrain, 0
	// b1: backup, limited.
	web[7].Backup = true
	web[7].MaxConn, web[7].MaxQueue, web[7].Slim = 50, 10, 50

	// What the backend decided: s1, s2 and s5 usable (weights 100+50+1),
	// and the backup b1, unused while actives are usable.
	webBE := proxy.BackendSnapshot{Name: "web", ID: 2, Mode: "http", Balance: "roundrobin", Servers: web, FullConn: 50,
		Act: 3, Bck: 1, Weight: 151, UserWeight: 151,
		CounterValues: proxy.CounterValues{Scur: 2, Smax: 7, Stot: 121, Bin: 14300, Bout: 981300, Lbtot: 121,
			ReqTot: 121, Hrsp2xx: 111, Hrsp3xx: 4, Hrsp4xx: 5, Hrsp5xx: 1, Rate: 3, RateMax: 9, Econ: 1,
			Eresp: 2, Wretr: 1, Wredis: 1, CliAbrt: 1, SrvAbrt: 1, Dreq: 0, LastSess: ago(2), Ctime: 1, Rtime: 12, Ttime: 40}}
	tcp := []proxy.ServerSnapshot{srv(1, "c1", 1), srv(2, "c2", 1)}
	tcp[0].MaxConn, tcp[0].MaxQueue, tcp[0].Slim = 50, 10, 50
	tcp[1].Op, tcp[1].EffectiveWeight = proxy.OpStopping, 0 // soft-stopped: NOLB
	down := []proxy.ServerSnapshot{srv(1, "d1", 1)}
	down[0].Op, down[0].EffectiveWeight = proxy.OpDown, 0
	down[0].Check = check("L4CON", "Layer4 connection problem", 0, 2, 3)
	down[0].Check.Info = "Connection refused"
	down[0].Check.Downtime = 160

	for _, ss := range [][]proxy.ServerSnapshot{web, tcp, down} {
		for i := range ss {
			ss[i].Usable = ss[i].EffectiveWeight > 0 // set to 0 above for the others
		}
	}
	return &proxy.Snapshot{
		Taken: taken, Started: ago(3600), MaxConn: 2000, IdlePct: 97, BytesOutRate: 3264, ConnRateMax: 9, Listeners: 2,
		Frontends: []proxy.FrontendSnapshot{
			{Name: "fe_web", ID: 1, Mode: "http", MaxConn: 500, CounterValues: proxy.CounterValues{
				Scur: 3, Smax: 12, Slim: 500, Stot: 130, Bin: 15000, Bout: 990000, Dreq: 4, Ereq: 1,
				ReqTot: 131, Hrsp2xx: 111, Hrsp3xx: 4, Hrsp4xx: 15, Hrsp5xx: 1, Rate: 2, RateMax: 10,
				ReqRate: 3, ReqRateMax: 11}},
			{Name: "fe_tcp", ID: 3, Mode: "tcp", DeniedConn: 7, CounterValues: proxy.CounterValues{Stot: 5, Bin: 100, Bout: 200}},
		},
		Backends: []proxy.BackendSnapshot{
			webBE,
			{Name: "be_tcp", ID: 4, Mode: "tcp", Balance: "leastconn", Servers: tcp, FullConn: 1,
				Act: 1, Weight: 1, UserWeight: 1},
			{Name: "be_down", ID: 5, Mode: "http", Balance: "roundrobin", Servers: down, FullConn: 1,
				CounterValues: proxy.CounterValues{Obs: proxy.ObsValues{BackendChange: taken.Add(-160 * time.Second),
					BackendDowntime: 160 * time.Second, BackendDowns: 1}}},
			{Name: "be_empty", ID: 6, Mode: "http", Balance: "random(2)", FullConn: 1},
		},
	}
}

// golden compares got with testdata/stats/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("..", "testdata", "stats", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./stats -update to create it)", err)
	}
	if string(got) != string(want) {
		t.Errorf("%s differs from the golden file; got:\n%s\nwant:\n%s", name, got, want)
	}
}

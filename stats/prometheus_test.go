package stats

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fulcrum-proxy/fulcrum/proxy"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
)

func testCollector() *Collector {
	snap := testSnapshot()
	return NewCollector(func() *proxy.Snapshot { return snap }, func() ProcessFacts { return testFacts })
}

// TestPrometheusValues checks chosen series of the fixed snapshot.
func TestPrometheusValues(t *testing.T) {
	for _, tc := range []struct {
		name   string
		metric string
		want   string
	}{
		{"server sessions", "haproxy_server_current_sessions", `
# HELP haproxy_server_current_sessions Number of current sessions on the frontend, backend or server
# TYPE haproxy_server_current_sessions gauge
haproxy_server_current_sessions{proxy="be_down",server="d1"} 0
haproxy_server_current_sessions{proxy="be_tcp",server="c1"} 0
haproxy_server_current_sessions{proxy="be_tcp",server="c2"} 0
haproxy_server_current_sessions{proxy="web",server="b1"} 0
haproxy_server_current_sessions{proxy="web",server="s1"} 2
haproxy_server_current_sessions{proxy="web",server="s2"} 0
haproxy_server_current_sessions{proxy="web",server="s3"} 0
haproxy_server_current_sessions{proxy="web",server="s4"} 0
haproxy_server_current_sessions{proxy="web",server="s5"} 0
haproxy_server_current_sessions{proxy="web",server="s6"} 0
haproxy_server_current_sessions{proxy="web",server="s7"} 0
`},
		{"backend active servers", "haproxy_backend_active_servers", `
# HELP haproxy_backend_active_servers Total number of active UP servers with a non-zero weight
# TYPE haproxy_backend_active_servers gauge
haproxy_backend_active_servers{proxy="be_down"} 0
haproxy_backend_active_servers{proxy="be_empty"} 0
haproxy_backend_active_servers{proxy="be_tcp"} 1
haproxy_backend_active_servers{proxy="web"} 3
`},
		{"frontend connections", "haproxy_frontend_connections_total", `
# HELP haproxy_frontend_connections_total Total number of new connections accepted on this frontend since the worker process started
# TYPE haproxy_frontend_connections_total counter
haproxy_frontend_connections_total{proxy="fe_tcp"} 5
haproxy_frontend_connections_total{proxy="fe_web"} 130
`},
		{"response time in seconds", "haproxy_backend_response_time_average_seconds", `
# HELP haproxy_backend_response_time_average_seconds Time spent waiting for a server response, in milliseconds, averaged over the 1024 last requests (backend/server)
# TYPE haproxy_backend_response_time_average_seconds gauge
haproxy_backend_response_time_average_seconds{proxy="be_down"} 0
haproxy_backend_response_time_average_seconds{proxy="be_empty"} 0
haproxy_backend_response_time_average_seconds{proxy="be_tcp"} 0
haproxy_backend_response_time_average_seconds{proxy="web"} 0.012
`},
		{"backend status", "haproxy_backend_status", `
# HELP haproxy_backend_status Frontend/listen status: OPEN/WAITING/FULL/STOP; backend: UP/DOWN; server: last check status, per state label value.
# TYPE haproxy_backend_status gauge
haproxy_backend_status{proxy="be_down",state="DOWN"} 1
haproxy_backend_status{proxy="be_down",state="UP"} 0
haproxy_backend_status{proxy="be_empty",state="DOWN"} 0
haproxy_backend_status{proxy="be_empty",state="UP"} 1
haproxy_backend_status{proxy="be_tcp",state="DOWN"} 0
haproxy_backend_status{proxy="be_tcp",state="UP"} 1
haproxy_backend_status{proxy="web",state="DOWN"} 0
haproxy_backend_status{proxy="web",state="UP"} 1
`},
		{"process", "haproxy_process_current_connections", `
# HELP haproxy_process_current_connections Current number of connections on this worker process
# TYPE haproxy_process_current_connections gauge
haproxy_process_current_connections 3
`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := testutil.CollectAndCompare(testCollector(), strings.NewReader(tc.want), tc.metric); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestPrometheusLabels checks the state and code labels of the fixed snapshot.
func TestPrometheusLabels(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(testCollector())
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	find := func(name string, labels map[string]string) (float64, bool) {
		for _, mf := range mfs {
			if mf.GetName() != name {
				continue
			}
		next:
			for _, m := range mf.GetMetric() {
				got := map[string]string{}
				for _, lp := range m.GetLabel() {
					got[lp.GetName()] = lp.GetValue()
				}
				for k, v := range labels {
					if got[k] != v {
						continue next
					}
				}
				return metricValue(m), true
			}
		}
		return 0, false
	}
	for _, tc := range []struct {
		metric string
		labels map[string]string
		want   float64
	}{
		{"haproxy_server_status", map[string]string{"proxy": "web", "server": "s6", "state": "MAINT"}, 1},
		{"haproxy_server_status", map[string]string{"proxy": "web", "server": "s7", "state": "DRAIN"}, 1},
		{"haproxy_server_status", map[string]string{"proxy": "web", "server": "s3", "state": "DOWN"}, 1},
		{"haproxy_server_status", map[string]string{"proxy": "web", "server": "s5", "state": "UP"}, 1},
		{"haproxy_server_status", map[string]string{"proxy": "be_tcp", "server": "c2", "state": "NOLB"}, 1},
		{"haproxy_server_check_status", map[string]string{"proxy": "web", "server": "s3", "state": "L4CON"}, 1},
		{"haproxy_server_check_status", map[string]string{"proxy": "web", "server": "s3", "state": "L7OK"}, 0},
		{"haproxy_server_http_responses_total", map[string]string{"proxy": "web", "server": "s1", "code": "2xx"}, 110},
		{"haproxy_frontend_http_responses_total", map[string]string{"proxy": "fe_web", "code": "4xx"}, 15},
		{"haproxy_server_check_duration_seconds", map[string]string{"proxy": "web", "server": "s1"}, 0.001},
		{"haproxy_process_build_info", map[string]string{"version": "0.1.0"}, 1},
	} {
		got, ok := find(tc.metric, tc.labels)
		if !ok || got != tc.want {
			t.Errorf("%s%v: got %v (found %v), want %v", tc.metric, tc.labels, got, ok, tc.want)
		}
	}
	if _, ok := find("haproxy_server_check_status", map[string]string{"server": "s5"}); ok {
		t.Errorf("a server without check has a check_status series")
	}
	if _, ok := find("haproxy_server_http_responses_total", map[string]string{"proxy": "be_tcp"}); ok {
		t.Errorf("a TCP server has HTTP response series")
	}
}

func metricValue(m *dto.Metric) float64 {
	switch {
	case m.GetGauge() != nil:
		return m.GetGauge().GetValue()
	case m.GetCounter() != nil:
		return m.GetCounter().GetValue()
	}
	return 0
}

// TestPrometheusNamesAreHAProxys checks every metric's name and type against
// HAProxy 2.6's exporter (testdata/stats/haproxy-2.6-promex-types.txt), and
// lints the exposition.
func TestPrometheusNamesAreHAProxys(t *testing.T) {
	f, err := os.Open(filepath.Join("..", "testdata", "stats", "haproxy-2.6-promex-types.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	haproxy := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if name, typ, ok := strings.Cut(sc.Text(), " "); ok && !strings.HasPrefix(name, "#") {
			haproxy[name] = typ
		}
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(testCollector())
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	if len(mfs) < 100 {
		t.Errorf("got %d metric families, want at least 100", len(mfs))
	}
	for _, mf := range mfs {
		if strings.HasPrefix(mf.GetName(), "fulcrum_") {
			continue // fulcrum's additions, named apart (prometheus_tls.go)
		}
		want, ok := haproxy[mf.GetName()]
		if !ok {
			t.Errorf("%s: not a metric of HAProxy's exporter", mf.GetName())
			continue
		}
		if got := strings.ToLower(mf.GetType().String()); got != want {
			t.Errorf("%s: got type %s, want %s", mf.GetName(), got, want)
		}
	}
	problems, err := testutil.CollectAndLint(testCollector())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		// HAProxy's names and help texts are kept as they are, lint or not.
		t.Logf("lint (kept for HAProxy compatibility): %s: %s", p.Metric, p.Text)
	}
}

package stats

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/fulcrum-proxy/fulcrum/conf"
	"github.com/fulcrum-proxy/fulcrum/proxy"
	checks "github.com/fulcrum-proxy/fulcrum/proxy/check"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/rs/zerolog"
)

// promexConfig is testdata/stats/haproxy-2.6-promex.cfg in fulcrum's terms:
// the configuration HAProxy's series were captured with.
const promexConfig = `
[global]
maxconn = 100
[defaults]
mode = "http"
timeout_connect = "1s"
retries = 2

[[frontend]]
name = "www"
bind = ["127.0.0.1:0"]
default_backend = "web"
use_backend = [{ backend = "badsrv", if = "{ path_beg /bad }" }]

[[frontend]]
name = "stats"
bind = ["127.0.0.1:0"]
[frontend.stats]
enable = true
uri = "/stats"
admin = "TRUE"

[[backend]]
name = "web"
stick_table = { type = "ip", size = 100, expire = "1m" }
stick = ["on src"]
[[backend.server]]
name = "s1"
address = "127.0.0.1:19001"
check = true
maxqueue = 10
weight = 50
[[backend.server]]
name = "s2"
address = "127.0.0.1:19009"

[[backend]]
name = "badsrv"
[[backend.server]]
name = "b1"
address = "127.0.0.1:19002"

[[frontend]]
name = "tcpfe"
mode = "tcp"
bind = ["127.0.0.1:0"]
default_backend = "tcpbe"

[[backend]]
name = "tcpbe"
mode = "tcp"
[[backend.server]]
name = "t1"
address = "127.0.0.1:19001"

[[table]]
name = "st_src"
type = "ip"
size = 1024
expire = "30m"
store = ["http_req_rate(10s)", "conn_cur"]
`

// seriesShape is a series as the golden list writes it: the name, its
// labels with the values of proxy, server, name, type and version masked,
// and the type.
func seriesShape(mf *dto.MetricFamily, m *dto.Metric) string {
	var ls []string
	for _, l := range m.GetLabel() {
		v := l.GetValue()
		switch l.GetName() {
		case "proxy", "server", "name", "type", "version":
			v = "*"
		}
		ls = append(ls, l.GetName()+`="`+v+`"`)
	}
	sort.Strings(ls)
	return mf.GetName() + "{" + strings.Join(ls, ",") + "} " + strings.ToLower(mf.GetType().String())
}

// TestPrometheusSeriesAsHAProxy checks that every series of HAProxy 2.6's
// exporter, scraped with an equivalent configuration
// (testdata/stats/haproxy-2.6-promex-series.txt), is in fulcrum's /metrics
// with the same name, labels and type, or is listed in PromexOmitted with
// the reason; and that fulcrum's other series are its own (fulcrum_*).
func TestPrometheusSeriesAsHAProxy(t *testing.T) {
	cfg, err := conf.Parse("promex.toml", []byte(promexConfig))
	if err != nil {
		t.Fatal(err)
	}
	p, err := proxy.New(cfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	defer p.Shutdown(context.Background())
	// The checks' state, not started: s1 is checked, as in HAProxy's.
	if _, err := checks.New(p, zerolog.Nop()); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(NewProxyCollector(p, func() ProcessFacts { return testFacts }))
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			have[seriesShape(mf, m)] = true
		}
		if n := mf.GetName(); !strings.HasPrefix(n, "haproxy_") && !strings.HasPrefix(n, "fulcrum_") {
			t.Errorf("%s: neither HAProxy's nor fulcrum's own (fulcrum_)", n)
		}
	}
	f, err := os.Open(filepath.Join("..", "testdata", "stats", "haproxy-2.6-promex-series.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	missing := 0
	haproxy := map[string]bool{}
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") || line == "" {
			continue
		}
		haproxy[line] = true
		if have[line] {
			continue
		}
		name, _, _ := strings.Cut(line, "{")
		if _, ok := PromexOmitted[name]; ok {
			continue
		}
		missing++
		t.Errorf("HAProxy's series %s is missing and not in PromexOmitted", line)
	}
	for name := range PromexOmitted {
		for s := range have {
			if strings.HasPrefix(s, name+"{") {
				t.Errorf("%s is in PromexOmitted but fulcrum exports it", name)
			}
		}
	}
	for s := range have {
		if strings.HasPrefix(s, "haproxy_") && !haproxy[s] {
			t.Errorf("%s: not a series of HAProxy's exporter", s)
		}
	}
	t.Logf("%d HAProxy series, %d fulcrum series, %d omitted names", len(haproxy), len(have), len(PromexOmitted))
}

package stats

import (
	"net/http"
	"strings"

	"github.com/fulcrum-proxy/fulcrum/proxy"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Collector exports each scrape's snapshot with the metric names of
// HAProxy 2.6's built-in exporter (haproxy_frontend_current_sessions,
// haproxy_backend_active_servers, haproxy_server_bytes_out_total, ...), with
// the labels proxy and server. The metrics come from the column table:
// a column's prom name and row kinds, counter when its nature is Counter,
// gauge otherwise, milliseconds turned into seconds. Empty cells give no
// series (HAProxy prints NaN). status, check_status and hrsp_* become one
// metric with a state or code label, as HAProxy does.
type Collector struct {
	snapshot func() *proxy.Snapshot
	facts    func() ProcessFacts
	descs    map[string]*prometheus.Desc // by full metric name
}

// kindPrefix is the metric prefix for a row kind.
func kindPrefix(k Kind) string {
	switch k {
	case KindBackend:
		return "haproxy_backend_"
	case KindServer:
		return "haproxy_server_"
	}
	return "haproxy_frontend_"
}

// kindLabels are the variable labels of a row kind's metrics.
func kindLabels(k Kind) []string {
	if k == KindServer {
		return []string{"proxy", "server"}
	}
	return []string{"proxy"}
}

// NewCollector returns a collector that calls snapshot once per scrape;
// facts, if non-nil, adds haproxy_process_* metrics from `show info`.
func NewCollector(snapshot func() *proxy.Snapshot, facts func() ProcessFacts) *Collector {
	c := &Collector{snapshot: snapshot, facts: facts, descs: map[string]*prometheus.Desc{}}
	for i := range columns {
		col := &columns[i]
		if col.prom == "" {
			continue
		}
		for _, k := range []Kind{KindFrontend, KindBackend, KindServer} {
			if col.promKinds&k == 0 {
				continue
			}
			name := kindPrefix(k) + col.prom
			if c.descs[name] != nil {
				continue // hrsp_1xx..hrsp_other share one metric
			}
			labels := kindLabels(k)
			help := col.Desc
			switch {
			case col.Name == "status" || col.Name == "check_status":
				labels = append(labels, "state")
				help = strings.TrimSuffix(help, ".") + ", per state label value."
			case promCodes[col.Name] != "":
				labels = append(labels, "code")
				help = "Total number of HTTP responses, per status class."
			}
			c.descs[name] = prometheus.NewDesc(name, help, labels, nil)
		}
	}
	for i := range infoFields {
		fd := &infoFields[i]
		if fd.prom != "" {
			name := "haproxy_process_" + fd.prom
			c.descs[name] = prometheus.NewDesc(name, fd.desc, nil, nil)
		}
	}
	c.descs["haproxy_process_build_info"] = prometheus.NewDesc("haproxy_process_build_info",
		"Build info", []string{"version"}, nil)
	return c
}

// Describe sends every metric's description.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
	describeTLS(ch) // prometheus_tls.go
}

// Server states of haproxy_server_status and check codes of
// haproxy_server_check_status, as HAProxy 2.6's exporter lists them.
var (
	promServerStates = []string{"DOWN", "UP", "MAINT", "DRAIN", "NOLB"}
	promCheckStates  = []string{"HANA", "SOCKERR", "L4OK", "L4TOUT", "L4CON", "L6OK", "L6TOUT", "L6RSP",
		"L7TOUT", "L7RSP", "L7OK", "L7OKC", "L7STS", "PROCERR", "PROCTOUT", "PROCOK"}
	promCodes = map[string]string{"hrsp_1xx": "1xx", "hrsp_2xx": "2xx", "hrsp_3xx": "3xx",
		"hrsp_4xx": "4xx", "hrsp_5xx": "5xx", "hrsp_other": "other"}
)

// promServerState is HAProxy's promex_srv_status: MAINT wins, then NOLB
// while soft-stopping, DOWN when stopped, DRAIN, else UP.
func promServerState(s *proxy.ServerSnapshot) string {
	switch {
	case s.Admin == proxy.AdminMaint:
		return "MAINT"
	case s.Op == proxy.OpStopping:
		return "NOLB"
	case s.Op == proxy.OpDown:
		return "DOWN"
	case s.Admin == proxy.AdminDrain:
		return "DRAIN"
	}
	return "UP"
}

// Collect takes one snapshot and sends every series.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	snap := c.snapshot()
	collectTLS(ch, snap) // prometheus_tls.go
	f := AllRows()
	eachRow(snap, &f, func(r *row) error {
		labels := []string{r.pxname}
		if r.kind == KindServer {
			labels = append(labels, r.svname)
		}
		for i := range columns {
			col := &columns[i]
			if col.prom == "" || col.promKinds&r.kind == 0 {
				continue
			}
			desc := c.descs[kindPrefix(r.kind)+col.prom]
			vt := prometheus.GaugeValue
			if col.tagsFor(r.kind)[1] == 'C' {
				vt = prometheus.CounterValue
			}
			switch col.Name {
			case "status":
				c.collectStatus(ch, desc, r, labels)
				continue
			case "check_status":
				if r.sv.Check == nil || r.sv.Check.Status == "" {
					continue
				}
				for _, st := range promCheckStates {
					ch <- prometheus.MustNewConstMetric(desc, vt, boolf(st == r.sv.Check.Status), append(labels, st)...)
				}
				continue
			}
			v := col.value(r)
			if !v.set || col.typ == tStr {
				continue
			}
			x := float64(v.n)
			if col.promScale != 0 {
				x *= col.promScale
			}
			if code, ok := promCodes[col.Name]; ok {
				ch <- prometheus.MustNewConstMetric(desc, vt, x, append(labels, code)...)
				continue
			}
			ch <- prometheus.MustNewConstMetric(desc, vt, x, labels...)
		}
		return nil
	})
	if c.facts == nil {
		return
	}
	in := NewInfo(snap, c.facts())
	for i := range infoFields {
		fd := &infoFields[i]
		if fd.prom == "" {
			continue
		}
		v := fd.get(&in)
		if !v.set {
			continue
		}
		vt := prometheus.GaugeValue
		if strings.HasSuffix(fd.prom, "_total") {
			vt = prometheus.CounterValue
		}
		ch <- prometheus.MustNewConstMetric(c.descs["haproxy_process_"+fd.prom], vt, float64(v.n))
	}
	ch <- prometheus.MustNewConstMetric(c.descs["haproxy_process_build_info"], prometheus.GaugeValue, 1, in.Version)
}

// collectStatus sends the status metric: one series per state, 1 for the
// current one. Frontends are UP unless stopping; backends UP or DOWN.
func (c *Collector) collectStatus(ch chan<- prometheus.Metric, desc *prometheus.Desc, r *row, labels []string) {
	var states []string
	var cur string
	switch r.kind {
	case KindFrontend:
		states, cur = []string{"DOWN", "UP"}, "UP"
		if r.snap.Stopping {
			cur = "DOWN"
		}
	case KindBackend:
		states, cur = []string{"DOWN", "UP"}, "DOWN"
		if r.agg.weight > 0 || len(r.be.Servers) == 0 {
			cur = "UP"
		}
	default:
		states, cur = promServerStates, promServerState(r.sv)
	}
	for _, st := range states {
		ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, boolf(st == cur), append(labels, st)...)
	}
}

func boolf(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// MetricsHandler serves the collector's metrics, and extra's, in the
// Prometheus text format (and OpenMetrics when asked), from a registry of
// its own.
func MetricsHandler(c *Collector, extra ...prometheus.Collector) http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	reg.MustRegister(extra...)
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

package stats

import (
	"math"
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
	core     *proxy.Proxy                // stick tables, log drops, listeners; nil in tests of a bare snapshot
	extra    []promProcessMetric         // the promProcessExtra metrics infoFields does not have
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
			case col.Name == "status" || col.Name == "check_status" || strings.HasPrefix(col.Name, "agg_"):
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
	for _, m := range promProcessExtra {
		if c.descs["haproxy_process_"+m.name] != nil {
			continue // `show info` has it now (infoFields)
		}
		c.descs["haproxy_process_"+m.name] = prometheus.NewDesc("haproxy_process_"+m.name, m.help, nil, nil)
		c.extra = append(c.extra, m)
	}
	c.descs["haproxy_sticktable_size"] = prometheus.NewDesc("haproxy_sticktable_size", "Stick table size.", []string{"name", "type"}, nil)
	c.descs["haproxy_sticktable_used"] = prometheus.NewDesc("haproxy_sticktable_used", "Number of entries used in this stick table.", []string{"name", "type"}, nil)
	c.addOwnDescs()
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
			if promHTTPOnly[col.Name] && r.mode != "http" {
				continue // HAProxy exports HTTP metrics of HTTP proxies only
			}
			switch col.Name {
			case "status":
				c.collectStatus(ch, desc, r, labels)
				continue
			case "check_status":
				if r.sv.Check == nil {
					continue
				}
				for _, st := range promCheckStates {
					ch <- prometheus.MustNewConstMetric(desc, vt, boolf(st == r.sv.Check.Status), append(labels, st)...)
				}
				continue
			case "check_code", "check_duration":
				// Servers with an active check only, 0 before a first
				// result, as HAProxy.
				if r.sv.Check == nil || r.sv.Check.Paused {
					continue
				}
			case "agg_server_status", "agg_server_check_status", "agg_check_status":
				c.collectAgg(ch, desc, col.Name, r, labels)
				continue
			}
			v := col.value(r)
			if col.typ == tStr {
				continue
			}
			x := math.NaN() // HAProxy exports an empty field as NaN
			if v.set {
				x = float64(v.n)
				if col.promScale != 0 {
					x *= col.promScale
				}
			} else if col.Name == "check_code" || col.Name == "check_duration" {
				x = 0
			}
			if code, ok := promCodes[col.Name]; ok {
				if !v.set {
					continue
				}
				ch <- prometheus.MustNewConstMetric(desc, vt, x, append(labels, code)...)
				continue
			}
			ch <- prometheus.MustNewConstMetric(desc, vt, x, labels...)
		}
		c.collectOwn(ch, r, labels)
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
	for _, m := range c.extra {
		vt := prometheus.GaugeValue
		if m.counter {
			vt = prometheus.CounterValue
		}
		ch <- prometheus.MustNewConstMetric(c.descs["haproxy_process_"+m.name], vt, m.get(c, snap, &in))
	}
	c.collectProcessOwn(ch)
	if c.core != nil {
		for _, t := range c.core.Tables() {
			ch <- prometheus.MustNewConstMetric(c.descs["haproxy_sticktable_size"], prometheus.GaugeValue, float64(t.Size()), t.Name(), t.Type().String())
			ch <- prometheus.MustNewConstMetric(c.descs["haproxy_sticktable_used"], prometheus.GaugeValue, float64(t.Used()), t.Name(), t.Type().String())
		}
	}
}

// collectAgg sends a backend's aggregated server states, HAProxy 2.6's
// agg_server_status and agg_server_check_status (servers per state) and
// agg_check_status (servers per last check result).
func (c *Collector) collectAgg(ch chan<- prometheus.Metric, desc *prometheus.Desc, name string, r *row, labels []string) {
	states := promServerStates
	if name == "agg_check_status" {
		states = promCheckStates
	}
	for _, st := range states {
		n := 0
		for i := range r.be.Servers {
			sv := &r.be.Servers[i]
			if name == "agg_check_status" {
				if sv.Check != nil && sv.Check.Status == st {
					n++
				}
			} else if promServerState(sv) == st {
				n++
			}
		}
		ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, float64(n), append(labels, st)...)
	}
}

// promHTTPOnly are the columns whose metrics HAProxy exports for HTTP
// proxies only.
var promHTTPOnly = map[string]bool{
	"hrsp_1xx": true, "hrsp_2xx": true, "hrsp_3xx": true, "hrsp_4xx": true, "hrsp_5xx": true, "hrsp_other": true,
	"req_rate_max": true, "req_tot": true, "intercepted": true, "cache_lookups": true, "cache_hits": true,
	"comp_in": true, "comp_out": true, "comp_byp": true, "comp_rsp": true,
}

// promProcessMetric is a haproxy_process_* metric that `show info` does
// not print (yet): HAProxy's exporter has it.
type promProcessMetric struct {
	name, help string
	counter    bool
	get        func(c *Collector, snap *proxy.Snapshot, in *Info) float64
}

func zerof(*Collector, *proxy.Snapshot, *Info) float64 { return 0 }

// promProcessExtra are HAProxy's process metrics outside infoFields: the
// compression memory figures (fulcrum does not compress) and the failed
// DNS resolutions (not counted yet), 0 as an HAProxy without them
// reports; failed_resolutions is a counter in HAProxy's exporter where
// show info tags it a gauge.
var promProcessExtra = []promProcessMetric{
	{"current_zlib_memory", "Amount of memory currently used by HTTP compression on the current worker process (in bytes)", false, zerof},
	{"max_zlib_memory", "Limit on the amount of memory used by HTTP compression on the current worker process (in bytes)", false, zerof},
	{"failed_resolutions", "Total number of failed DNS resolutions in current worker process since started", true, zerof},
}

// PromexOmitted lists the metrics of HAProxy 2.6's exporter that fulcrum
// does not export, each with the reason (TestPrometheusSeriesAsHAProxy
// checks every other HAProxy series is exported).
var PromexOmitted = map[string]string{
	"haproxy_process_spliced_bytes_out_total": "spliced bytes are not counted apart from the others",
}

// NewProxyCollector returns the collector of p's /metrics: NewCollector
// of p.Snapshot, with p's stick tables, log drops and listeners.
func NewProxyCollector(p *proxy.Proxy, facts func() ProcessFacts) *Collector {
	c := NewCollector(p.Snapshot, facts)
	c.core = p
	return c
}

// collectStatus sends the status metric: one series per state, 1 for the
// current one. Frontends are UP unless stopping; backends UP or DOWN.
func (c *Collector) collectStatus(ch chan<- prometheus.Metric, desc *prometheus.Desc, r *row, labels []string) {
	var states []string
	var cur string
	switch r.kind {
	case KindFrontend:
		// HAProxy's exporter: DOWN once stopped (a paused one is UP).
		states, cur = []string{"DOWN", "UP"}, "UP"
		if r.snap.Stopping || r.fe.State == "STOP" {
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
	reg.MustRegister(c, newH2Collector(c.snapshot)) // prometheus_h2.go
	reg.MustRegister(extra...)
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

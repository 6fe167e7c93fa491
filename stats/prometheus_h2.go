package stats

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/fulcrum-proxy/fulcrum/proxy"
)

// The h2 statistics module on /metrics. HAProxy 2.6's exporter does not
// export its statistics modules; fulcrum exports the h2 module's columns
// per frontend and backend under their `show stat` names
// (haproxy_frontend_h2_headers_rcvd, ...), from the same snapshot, in a
// collector of their own beside the HAProxy-named one.

// h2Metric is one h2 column as a metric.
type h2Metric struct {
	name, help string
	gauge      bool
	get        func(v *proxy.H2Values) int64
}

var h2Metrics = []h2Metric{
	{"h2_headers_rcvd", "Total number of received HEADERS frames", false, func(v *proxy.H2Values) int64 { return v.HeadersRcvd }},
	{"h2_data_rcvd", "Total number of received DATA frames", false, func(v *proxy.H2Values) int64 { return v.DataRcvd }},
	{"h2_settings_rcvd", "Total number of received SETTINGS frames", false, func(v *proxy.H2Values) int64 { return v.SettingsRcvd }},
	{"h2_rst_stream_rcvd", "Total number of received RST_STREAM frames", false, func(v *proxy.H2Values) int64 { return v.RstStreamRcvd }},
	{"h2_goaway_rcvd", "Total number of received GOAWAY frames", false, func(v *proxy.H2Values) int64 { return v.GoawayRcvd }},
	{"h2_detected_conn_protocol_errors", "Total number of connection protocol errors", false, func(v *proxy.H2Values) int64 { return v.ConnProtoErr }},
	{"h2_detected_strm_protocol_errors", "Total number of stream protocol errors", false, func(v *proxy.H2Values) int64 { return v.StrmProtoErr }},
	{"h2_rst_stream_resp", "Total number of RST_STREAM sent on detected error", false, func(v *proxy.H2Values) int64 { return v.RstStreamResp }},
	{"h2_goaway_resp", "Total number of GOAWAY sent on detected error", false, func(v *proxy.H2Values) int64 { return v.GoawayResp }},
	{"h2_open_connections", "Count of currently open connections", true, func(v *proxy.H2Values) int64 { return v.OpenConns }},
	{"h2_backend_open_streams", "Count of currently open streams", true, func(v *proxy.H2Values) int64 { return v.OpenStreams }},
	{"h2_total_connections", "Total number of connections", false, func(v *proxy.H2Values) int64 { return v.TotalConns }},
	{"h2_backend_total_streams", "Total number of streams", false, func(v *proxy.H2Values) int64 { return v.TotalStreams }},
}

// h2Collector exports h2Metrics for every frontend and backend.
type h2Collector struct {
	snapshot func() *proxy.Snapshot
	fe, be   []*prometheus.Desc
}

// newH2Collector returns the h2 module's collector over snapshot.
func newH2Collector(snapshot func() *proxy.Snapshot) *h2Collector {
	c := &h2Collector{snapshot: snapshot}
	for _, m := range h2Metrics {
		c.fe = append(c.fe, prometheus.NewDesc("haproxy_frontend_"+m.name, m.help, []string{"proxy"}, nil))
		c.be = append(c.be, prometheus.NewDesc("haproxy_backend_"+m.name, m.help, []string{"proxy"}, nil))
	}
	return c
}

// Describe implements prometheus.Collector.
func (c *h2Collector) Describe(ch chan<- *prometheus.Desc) {
	for i := range h2Metrics {
		ch <- c.fe[i]
		ch <- c.be[i]
	}
}

// Collect implements prometheus.Collector.
func (c *h2Collector) Collect(ch chan<- prometheus.Metric) {
	snap := c.snapshot()
	emit := func(d *prometheus.Desc, m *h2Metric, v *proxy.H2Values, name string) {
		typ := prometheus.CounterValue
		if m.gauge {
			typ = prometheus.GaugeValue
		}
		ch <- prometheus.MustNewConstMetric(d, typ, float64(m.get(v)), name)
	}
	for i := range h2Metrics {
		for j := range snap.Frontends {
			emit(c.fe[i], &h2Metrics[i], &snap.Frontends[j].H2, snap.Frontends[j].Name)
		}
		for j := range snap.Backends {
			emit(c.be[i], &h2Metrics[i], &snap.Backends[j].H2, snap.Backends[j].Name)
		}
	}
}

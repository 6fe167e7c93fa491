package stats

import (
	"github.com/fulcrum-proxy/fulcrum/proxy"
	"github.com/prometheus/client_golang/prometheus"
)

// fulcrum's own metrics, beside HAProxy's: the latency histograms of
// every frontend, backend and server (proxy/histogram.go) as Prometheus
// histograms, fulcrum_<kind>_<timing>_time_seconds with HAProxy's labels,
// and the count of captured protocol errors (`show errors`).

// promHistBounds are the buckets' upper bounds, seconds. An internal
// bucket (1/8 of a power of two wide) is counted under a bound when its
// middle is at most the bound: a value within 6.25% of a bound may be
// counted on its other side.
var promHistBounds = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}

// timingHelp describes each timing kind's histogram.
var timingHelp = [proxy.NumTimings]string{
	"Time requests waited in a queue for a server slot (Tw), seconds",
	"Time to connect to the server (Tc; 0 for a kept connection), seconds",
	"Time from the request sent to the response head received (Tr), seconds",
	"Time from the request's first byte to the end of the response (Ta; tcp: the session, Tt), seconds",
}

// ownPrefix is the metric prefix of fulcrum's own metrics of a row kind.
func ownPrefix(k Kind) string {
	switch k {
	case KindBackend:
		return "fulcrum_backend_"
	case KindServer:
		return "fulcrum_server_"
	}
	return "fulcrum_frontend_"
}

// addOwnDescs declares fulcrum's own metrics.
func (c *Collector) addOwnDescs() {
	for _, k := range []Kind{KindFrontend, KindBackend, KindServer} {
		for i, name := range proxy.TimingNames {
			n := ownPrefix(k) + name + "_time_seconds"
			c.descs[n] = prometheus.NewDesc(n, timingHelp[i], kindLabels(k), nil)
		}
	}
	c.descs["fulcrum_process_errors_captured_total"] = prometheus.NewDesc("fulcrum_process_errors_captured_total",
		"Invalid requests and responses seen since started (show errors)", nil, nil)
}

// collectOwn sends r's histograms that have values.
func (c *Collector) collectOwn(ch chan<- prometheus.Metric, r *row, labels []string) {
	t := r.c.Obs.Timings
	if t == nil {
		return
	}
	var counts [proxy.HistBuckets]uint64
	for k := range t {
		h := &t[k]
		if h.Empty() {
			continue
		}
		n, sum := h.Counts(counts[:])
		buckets := make(map[float64]uint64, len(promHistBounds))
		var cum uint64
		b := 0
		for i, ci := range counts {
			lo, hi := proxy.HistBucketBounds(i)
			mid := float64(lo+hi) / 2e6 // seconds
			for b < len(promHistBounds) && mid > promHistBounds[b] {
				buckets[promHistBounds[b]] = cum
				b++
			}
			cum += ci
		}
		for ; b < len(promHistBounds); b++ {
			buckets[promHistBounds[b]] = cum
		}
		desc := c.descs[ownPrefix(r.kind)+proxy.TimingNames[k]+"_time_seconds"]
		ch <- prometheus.MustNewConstHistogram(desc, n, float64(sum)/1e6, buckets, labels...)
	}
}

// collectProcessOwn sends fulcrum's own process metrics.
func (c *Collector) collectProcessOwn(ch chan<- prometheus.Metric) {
	if c.core == nil {
		return
	}
	total, _ := c.core.Errors()
	ch <- prometheus.MustNewConstMetric(c.descs["fulcrum_process_errors_captured_total"], prometheus.CounterValue, float64(total))
}

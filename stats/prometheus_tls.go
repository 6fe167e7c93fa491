package stats

import (
	"github.com/fulcrum-proxy/fulcrum/proxy"
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics fulcrum adds to HAProxy 2.6's (which has no certificate expiry
// and no per-frontend count of refused PROXY headers or handshakes): the
// fulcrum_ prefix says they are not HAProxy's.
var (
	certNotAfterDesc = prometheus.NewDesc("fulcrum_ssl_cert_not_after_seconds",
		"Expiry (notAfter) of each certificate the binds serve, as a Unix time; with its filename (as show ssl cert names it) and serial.",
		[]string{"filename", "serial"}, nil)
	proxyErrorsDesc = prometheus.NewDesc("fulcrum_frontend_proxy_protocol_errors_total",
		"Connections of accept-proxy binds closed for a missing, malformed or late PROXY protocol header.",
		[]string{"proxy"}, nil)
	sslFailedDesc = prometheus.NewDesc("fulcrum_frontend_ssl_failed_handshakes_total",
		"Client connections of ssl binds whose TLS handshake failed or timed out.",
		[]string{"proxy"}, nil)
)

// describeTLS sends the descriptions of the TLS metrics.
func describeTLS(ch chan<- *prometheus.Desc) {
	ch <- certNotAfterDesc
	ch <- proxyErrorsDesc
	ch <- sslFailedDesc
}

// collectTLS sends the TLS metrics of snap.
func collectTLS(ch chan<- prometheus.Metric, snap *proxy.Snapshot) {
	for _, c := range snap.Certs {
		ch <- prometheus.MustNewConstMetric(certNotAfterDesc, prometheus.GaugeValue, float64(c.NotAfter.Unix()), c.Name, c.Serial)
	}
	for i := range snap.Frontends {
		fe := &snap.Frontends[i]
		ch <- prometheus.MustNewConstMetric(proxyErrorsDesc, prometheus.CounterValue, float64(fe.ProxyErrors), fe.Name)
		ch <- prometheus.MustNewConstMetric(sslFailedDesc, prometheus.CounterValue, float64(fe.SSL.FailedHandshake), fe.Name)
	}
}

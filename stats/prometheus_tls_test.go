package stats

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-proxy/fulcrum/proxy"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestPrometheusTLS: the show info TLS figures under HAProxy's names, the
// certificates' expiry and the per-frontend refusals under fulcrum's.
func TestPrometheusTLS(t *testing.T) {
	snap := testSnapshot()
	snap.SSL = proxy.SSLSnapshot{CurrConns: 3, CumConns: 40, Rate: 10, RateMax: 12, KeyRate: 4, KeyRateMax: 9, ReusePct: 60,
		BeKeyRate: 5, BeKeyRateMax: 11}
	snap.Certs = []proxy.CertSnapshot{
		{Name: "certs/a.pem", Serial: "1234", NotAfter: time.Date(2045, 1, 1, 0, 0, 0, 0, time.UTC)},
		{Name: "certs/b.pem", Serial: "05", NotAfter: time.Date(2030, 6, 1, 0, 0, 0, 0, time.UTC)},
	}
	snap.Frontends[0].ProxyErrors, snap.Frontends[0].SSL.FailedHandshake = 2, 7
	c := NewCollector(func() *proxy.Snapshot { return snap }, func() ProcessFacts { return testFacts })
	want := `
# HELP fulcrum_ssl_cert_not_after_seconds Expiry (notAfter) of each certificate the binds serve, as a Unix time; with its filename (as show ssl cert names it) and serial.
# TYPE fulcrum_ssl_cert_not_after_seconds gauge
fulcrum_ssl_cert_not_after_seconds{filename="certs/a.pem",serial="1234"} 2.3668416e+09
fulcrum_ssl_cert_not_after_seconds{filename="certs/b.pem",serial="05"} 1.9065024e+09
# HELP haproxy_process_current_ssl_connections Current number of SSL endpoints on this worker process (front+back)
# TYPE haproxy_process_current_ssl_connections gauge
haproxy_process_current_ssl_connections 3
# HELP haproxy_process_ssl_connections_total Total number of SSL endpoints on this worker process since started (front+back)
# TYPE haproxy_process_ssl_connections_total counter
haproxy_process_ssl_connections_total 40
# HELP haproxy_process_current_ssl_rate Number of SSL connections created on this worker process over the last second
# TYPE haproxy_process_current_ssl_rate gauge
haproxy_process_current_ssl_rate 10
# HELP haproxy_process_current_frontend_ssl_key_rate Number of SSL keys created on frontends in this worker process over the last second
# TYPE haproxy_process_current_frontend_ssl_key_rate gauge
haproxy_process_current_frontend_ssl_key_rate 4
# HELP haproxy_process_frontend_ssl_reuse Percent of frontend SSL connections which did not require a new key
# TYPE haproxy_process_frontend_ssl_reuse gauge
haproxy_process_frontend_ssl_reuse 60
# HELP haproxy_process_current_backend_ssl_key_rate Number of SSL keys created on backends in this worker process over the last second
# TYPE haproxy_process_current_backend_ssl_key_rate gauge
haproxy_process_current_backend_ssl_key_rate 5
# HELP haproxy_process_max_backend_ssl_key_rate Highest SslBackendKeyRate reached on this worker process since started (in SSL keys per second)
# TYPE haproxy_process_max_backend_ssl_key_rate gauge
haproxy_process_max_backend_ssl_key_rate 11
`
	names := []string{"fulcrum_ssl_cert_not_after_seconds", "haproxy_process_current_ssl_connections",
		"haproxy_process_ssl_connections_total", "haproxy_process_current_ssl_rate",
		"haproxy_process_current_frontend_ssl_key_rate", "haproxy_process_frontend_ssl_reuse",
		"haproxy_process_current_backend_ssl_key_rate", "haproxy_process_max_backend_ssl_key_rate"}
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), names...); err != nil {
		t.Fatal(err)
	}
	fe := snap.Frontends[0].Name
	want = `
# HELP fulcrum_frontend_ssl_failed_handshakes_total Client connections of ssl binds whose TLS handshake failed or timed out.
# TYPE fulcrum_frontend_ssl_failed_handshakes_total counter
`
	for i := range snap.Frontends {
		n := snap.Frontends[i].SSL.FailedHandshake
		want += `fulcrum_frontend_ssl_failed_handshakes_total{proxy="` + snap.Frontends[i].Name + `"} ` + strconv.FormatInt(n, 10) + "\n"
	}
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), "fulcrum_frontend_ssl_failed_handshakes_total"); err != nil {
		t.Fatalf("%s: %v", fe, err)
	}
}

package stats

import (
	"bytes"
	"encoding/csv"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/fulcrum-proxy/fulcrum/proxy"
)

// TestH2Columns: the h2 module's columns carry the frontends' and
// backends' HTTP/2 counters in CSV, typed output, on /metrics and on the
// page; server rows leave them empty, as HAProxy.
func TestH2Columns(t *testing.T) {
	snap := testSnapshot()
	snap.Frontends[0].H2 = proxy.H2Values{HeadersRcvd: 42, DataRcvd: 7, SettingsRcvd: 3, RstStreamRcvd: 2, GoawayRcvd: 1,
		ConnProtoErr: 4, StrmProtoErr: 5, RstStreamResp: 5, GoawayResp: 4, OpenConns: 2, OpenStreams: 9, TotalConns: 11, TotalStreams: 99}
	snap.Backends[0].H2 = proxy.H2Values{HeadersRcvd: 17, TotalConns: 3}
	var b bytes.Buffer
	if err := WriteCSV(&b, snap, AllRows()); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(strings.NewReader(strings.TrimPrefix(b.String(), "# "))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	head := map[string]int{}
	for i, name := range recs[0] {
		head[name] = i
	}
	row := func(px, sv string) []string {
		for _, r := range recs[1:] {
			if r[0] == px && r[1] == sv {
				return r
			}
		}
		t.Fatalf("no row %s/%s", px, sv)
		return nil
	}
	for _, tc := range []struct {
		px, sv, col, want string
	}{
		{"fe_web", "FRONTEND", "h2_headers_rcvd", "42"},
		{"fe_web", "FRONTEND", "h2_detected_conn_protocol_errors", "4"},
		{"fe_web", "FRONTEND", "h2_open_connections", "2"},
		{"fe_web", "FRONTEND", "h2_backend_total_streams", "99"},
		{"web", "BACKEND", "h2_headers_rcvd", "17"},
		{"web", "BACKEND", "h2_total_connections", "3"},
		{"web", "s1", "h2_headers_rcvd", ""},
	} {
		if got := row(tc.px, tc.sv)[head[tc.col]]; got != tc.want {
			t.Errorf("%s/%s %s: got %q, want %q", tc.px, tc.sv, tc.col, got, tc.want)
		}
	}
	b.Reset()
	if err := WriteTyped(&b, snap, AllRows()); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), ".h2_headers_rcvd.1:MCP:u64:42\n") {
		t.Errorf("typed output lacks h2_headers_rcvd 42")
	}
	rec := httptest.NewRecorder()
	MetricsHandler(NewCollector(func() *proxy.Snapshot { return snap }, nil)).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	for _, want := range []string{`haproxy_frontend_h2_headers_rcvd{proxy="fe_web"} 42`, `haproxy_backend_h2_total_connections{proxy="web"} 3`,
		`haproxy_frontend_h2_open_connections{proxy="fe_web"} 2`} {
		if !strings.Contains(rec.Body.String(), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	pg := newPage(func() *proxy.Snapshot { return snap }, nil, PageConfig{URI: "/stats"})
	body := get(t, pg, "/stats", nil).Body.String()
	if !strings.Contains(body, ">HTTP/2</th>") || !strings.Contains(body, "<td>99</td>") {
		t.Errorf("page lacks the HTTP/2 group or its total streams")
	}
}

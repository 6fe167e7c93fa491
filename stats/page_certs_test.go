package stats

import (
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-proxy/fulcrum/proxy"
)

// TestPageExpiringCerts: the page lists the certificates expiring within
// 30 days, soonest first, expired ones marked, and none of the others;
// without any, no table.
func TestPageExpiringCerts(t *testing.T) {
	snap := testSnapshot()
	now := snap.Taken
	snap.Certs = []proxy.CertSnapshot{
		{Name: "certs/later.pem", Serial: "01", NotAfter: now.Add(90 * 24 * time.Hour)},
		{Name: "certs/soon.pem", Serial: "0A", NotAfter: now.Add(12*24*time.Hour + time.Hour)},
		{Name: "certs/<gone>.pem", Serial: "FF", NotAfter: now.Add(-time.Hour)},
		{Name: "certs/edge.pem", Serial: "30", NotAfter: now.Add(30 * 24 * time.Hour)},
	}
	pg := newPage(func() *proxy.Snapshot { return snap }, nil, PageConfig{URI: "/stats"})
	body := get(t, pg, "/stats", nil).Body.String()
	start := strings.Index(body, `<div class="scroll" id="certs-expiring">`)
	if start < 0 {
		t.Fatalf("no table of expiring certificates in\n%s", body)
	}
	table := body[start : start+strings.Index(body[start:], "</div>")]
	rows := []string{
		`<tr class="down"><td class="name">certs/&lt;gone&gt;.pem</td><td>FF</td><td>` + snap.Certs[2].NotAfter.UTC().Format("Jan _2 15:04:05 2006 GMT") + `</td><td>expired</td></tr>`,
		`<tr class="going-down"><td class="name">certs/soon.pem</td><td>0A</td><td>` + snap.Certs[1].NotAfter.UTC().Format("Jan _2 15:04:05 2006 GMT") + `</td><td>12</td></tr>`,
		`<tr class="going-down"><td class="name">certs/edge.pem</td><td>30</td><td>` + snap.Certs[3].NotAfter.UTC().Format("Jan _2 15:04:05 2006 GMT") + `</td><td>30</td></tr>`,
	}
	last := -1
	for _, r := range rows {
		i := strings.Index(table, r)
		if i < 0 || i < last {
			t.Errorf("row %s missing or out of order in\n%s", r, table)
		}
		last = i
	}
	if strings.Contains(table, "later.pem") {
		t.Errorf("a certificate valid for 90 days is listed:\n%s", table)
	}
	snap.Certs = snap.Certs[:1]
	if body := get(t, pg, "/stats", nil).Body.String(); strings.Contains(body, "certs-expiring") {
		t.Error("a table without any expiring certificate")
	}
}

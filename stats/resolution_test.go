package stats

import (
	"regexp"
	"strings"
	"testing"

	"github.com/fulcrum-proxy/fulcrum/proxy"
)

// TestResolutionMaint: a server in MAINT (resolution) shows that status in
// the CSV, counts as maintenance for the filters, and on the HTML page
// shows "resolution" over the Chk, Dwn and Dwntme cells, as HAProxy's.
func TestResolutionMaint(t *testing.T) {
	snap := testSnapshot()
	ss := &snap.Backends[0].Servers[0]
	ss.Admin = proxy.AdminMaint
	ss.Resolution = &proxy.ResolutionSnapshot{DNSInfo: proxy.DNSInfo{SRV: "_http._tcp.svc.test"}, Maint: true}
	pg := newPage(func() *proxy.Snapshot { return snap }, nil, PageConfig{URI: "/stats"})
	csv := get(t, pg, "/stats;csv", nil).Body.String()
	if !strings.Contains(csv, ","+ss.Name+",") || !strings.Contains(csv, ",MAINT (resolution),") {
		t.Errorf("CSV lacks MAINT (resolution)")
	}
	body := get(t, pg, "/stats", nil).Body.String()
	row := regexp.MustCompile(`<tr class="maint" data-server="web/` + ss.Name + `"[^\n]*`).FindString(body)
	if row == "" {
		t.Fatalf("no maint row for %s", ss.Name)
	}
	if !strings.Contains(row, `MAINT (resolution)</td>`) || !strings.Contains(row, `<td class="ac" colspan="3">resolution</td>`) {
		t.Errorf("row: %s", row)
	}
	// The same number of cells as any other server row (3 spanned).
	// Tooltips (<div class="tips"><table>...</table></div>) hold cells of
	// their own, as many as the row's data has: they are not counted.
	other := regexp.MustCompile(`<tr class="nocheck" data-server="web/s5"[^\n]*`).FindString(body)
	tips := regexp.MustCompile(`<div class="tips">.*?</div>`)
	row, other = tips.ReplaceAllString(row, ""), tips.ReplaceAllString(other, "")
	if n, m := strings.Count(row, "<td"), strings.Count(other, "<td"); n != m-2 {
		t.Errorf("%d cells, want %d (the other rows' less two)", n, m-2)
	}
	f := AllRows()
	f.NoMaint = true
	var b strings.Builder
	if err := WriteCSV(&b, snap, f); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), ",MAINT (resolution),") {
		t.Errorf("no-maint shows a server in MAINT (resolution)")
	}
}

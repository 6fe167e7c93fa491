package stats

import (
	"strings"
	"testing"

	"github.com/fulcrum-proxy/fulcrum/conf"
	"github.com/fulcrum-proxy/fulcrum/proxy"
)

// TestAddedAndDeletedServers: a server added at runtime (`add server`)
// appears on the HTML page, in the CSV and in the Prometheus metrics with
// its id; once deleted (`del server`) it is gone from all three, and the
// next server added gets an id never given.
func TestAddedAndDeletedServers(t *testing.T) {
	p := testProxy(t)
	b := p.Backend("web")
	add := func(name, line string) *proxy.Server {
		t.Helper()
		sc, l, err := conf.ParseServerLine(name, strings.Fields(line), nil)
		if err != nil {
			t.Fatal(err)
		}
		s, err := p.AddServer(b, sc, l.ID)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	pg := newPage(p.Snapshot, p, PageConfig{URI: "/stats"})
	metrics := NewMetrics(p, PageConfig{})
	seen := func(name string) (html, csv, prom bool) {
		body := get(t, pg, "/stats", nil).Body.String()
		html = strings.Contains(body, `data-server="web/`+name+`"`)
		csv = strings.Contains(get(t, pg, "/stats;csv", nil).Body.String(), "\nweb,"+name+",")
		prom = strings.Contains(get(t, metrics, "/metrics", nil).Body.String(), `server="`+name+`"`)
		return
	}
	s4 := add("s4", "127.0.0.1:4 id 40 weight 3")
	if h, c, m := seen("s4"); !h || !c || !m {
		t.Fatalf("added s4: page %v, csv %v, metrics %v; want all", h, c, m)
	}
	// Its row says MAINT (added servers start there) and its id.
	csv := get(t, pg, "/stats;csv", nil).Body.String()
	var row []string
	for _, l := range strings.Split(csv, "\n") {
		if strings.HasPrefix(l, "web,s4,") {
			row = strings.Split(l, ",")
		}
	}
	if len(row) < 29 || row[17] != "MAINT" || row[28] != "40" {
		t.Fatalf("s4's row: status %q, sid %q; want MAINT, 40\n%s", at(row, 17), at(row, 28), strings.Join(row, ","))
	}
	if err := p.DeleteServer(s4); err != nil {
		t.Fatal(err)
	}
	if h, c, m := seen("s4"); h || c || m {
		t.Fatalf("deleted s4: page %v, csv %v, metrics %v; want none", h, c, m)
	}
	if s5 := add("s5", "127.0.0.1:5"); s5.ID != 4 {
		t.Errorf("s5's id %d, want 4 (the first never given)", s5.ID)
	}
}

// at returns row[i], "" past its end.
func at(row []string, i int) string {
	if i < len(row) {
		return row[i]
	}
	return ""
}

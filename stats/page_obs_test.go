package stats

import (
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-proxy/fulcrum/internal/testutil"
	"github.com/fulcrum-proxy/fulcrum/proxy"
	"github.com/rs/zerolog"
)

// historyPoints is 30 points, 10 s apart, ending at taken: 100 requests
// each, p99 rising from 5 ms to 34 ms, 2 errors in the last one.
func historyPoints() []proxy.HistoryPoint {
	var pts []proxy.HistoryPoint
	for i := range 30 {
		pts = append(pts, proxy.HistoryPoint{End: taken.Add(time.Duration(i-29) * 10 * time.Second).Unix(),
			Requests: 100, P50: 2000, P99: uint32(5000 + i*1000), Sessions: 3})
	}
	pts[29].Errors = 2
	pts[10].End = 0 // a missed interval
	return pts
}

// TestPageDetails checks what HAProxy 2.6's page shows beside the numbers:
// tooltips with response codes and times, cur/initial weights, backend
// last change and downtime, the Scope filter, Refresh now, the 13 admin
// actions and a result banner that can be dismissed.
func TestPageDetails(t *testing.T) {
	snap := testSnapshot()
	pg := newPage(func() *proxy.Snapshot { return snap }, nil, PageConfig{URI: "/stats"})
	body := get(t, pg, "/stats", nil).Body.String()
	for _, want := range []string{
		// Sessions Total of web/s1: its tooltip.
		`<u>120<div class="tips"><table class="det"><tr><th>Cum. sessions:</th><td>120</td></tr>`,
		`<tr><th>- HTTP 2xx responses:</th><td>110 (91%)</td></tr>`,
		`<tr><th>- Total time:</th><td>0 / 40 ms</td></tr>`,
		`<tr><th>- Response time:</th><td>51.2 / 86.0 / 102 / 102 ms</td></tr>`,
		// Errors Resp: the resets.
		`<tr><th>Connection resets during transfers:</th><td>1 client, 1 server</td></tr>`,
		// cur/initial weights, server and backend.
		`<td>100/100</td>`, `<td>151/151</td>`,
		// be_down: last change and downtime.
		"2m40s DOWN", `<td>2m40s</td>`,
		// p50 and p99 columns, ms.
		`<td><u>51.2<div class="tips">`, `<td><u>102<div class="tips">`,
		// Scope and Refresh now.
		`<form class="scope" method="GET" action="/stats">Scope : <input value="" name="scope"`,
		`<a href="/stats" id="refresh-now">Refresh now</a>`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	scoped := get(t, pg, "/stats;up?scope=TCP", nil).Body.String()
	if got := regexp.MustCompile(`<caption>([^<]*)</caption>`).FindAllStringSubmatch(scoped, -1); len(got) != 2 ||
		got[0][1] != "fe_tcp" || got[1][1] != "be_tcp" {
		t.Errorf("scope=TCP: got tables %v, want fe_tcp and be_tcp", got)
	}
	if !strings.Contains(scoped, `<a href="/stats;up?scope=TCP" id="refresh-now">`) || !strings.Contains(scoped, `value="TCP"`) {
		t.Errorf("Refresh now or the scope field lost the options")
	}

	admin := newPage(func() *proxy.Snapshot { return snap }, testProxy(t), PageConfig{URI: "/stats",
		Admin: func(*http.Request) bool { return true }})
	page := get(t, admin, "/stats;st=DONE", nil).Body.String()
	if n := strings.Count(page, "\n<option value=\"hnolb\">Health: force NOLB</option>"); n == 0 {
		t.Errorf("no NOLB action")
	}
	opts := regexp.MustCompile(`<option value="([a-z]+)">`).FindAllStringSubmatch(page, -1)
	var web []string
	for _, o := range opts[:13] {
		web = append(web, o[1])
	}
	if got := strings.Join(web, " "); got != "ready drain maint dhlth ehlth hrunn hnolb hdown dagent eagent arunn adown shutdown" {
		t.Errorf("actions: got %s, want HAProxy's 13", got)
	}
	if !strings.Contains(page, `<div class="result ok" id="result">Action processed successfully.<a class="dismiss" href="/stats" title="dismiss">[X]</a></div>`) {
		t.Errorf("no dismissable result banner")
	}
	for _, ext := range []string{`src="http`, `href="http`, `@import`, `url(http`} {
		if strings.Contains(page, ext) {
			t.Errorf("the page loads something from the network: %s", ext)
		}
	}
}

// TestPageHistory checks the sparklines of a row and a backend's chart:
// the values, the missed interval, the scale.
func TestPageHistory(t *testing.T) {
	snap := testSnapshot()
	h := proxy.NewHistory(historyPoints())
	snap.Backends[0].Servers[0].Obs.History = h // web/s1
	snap.Backends[0].Obs.History = h            // web
	pg := newPage(func() *proxy.Snapshot { return snap }, nil, PageConfig{URI: "/stats", HistoryInterval: 10 * time.Second})
	body := get(t, pg, "/stats", nil).Body.String()
	if !strings.Contains(body, `<th colspan="2">Last 15m0s</th>`) || !strings.Contains(body, `<th>Req/s</th><th>p50/p99</th>`) {
		t.Errorf("no history columns")
	}
	row := regexp.MustCompile(`<tr class="up" data-server="web/s1"[^\n]*`).FindString(body) // a row is one line
	p99 := regexp.MustCompile(`<polyline class="p99" data-values="([^"]*)"`).FindStringSubmatch(row)
	if p99 == nil {
		t.Fatalf("web/s1 has no p99 sparkline: %s", row)
	}
	vals := strings.Fields(p99[1])
	if len(vals) != 30 || vals[0] != "5" || vals[10] != "-" || vals[29] != "34" {
		t.Errorf("p99 values: got %v, want 5..34 ms with the 11th missing", vals)
	}
	if !strings.Contains(row, `<polyline class="req" data-values="10 10 10`) || !strings.Contains(row, ` 0.2" points=`) {
		t.Errorf("request and error rates (per second) wrong: %s", row)
	}
	if !strings.Contains(row, `data-max="34"`) {
		t.Errorf("the p99 sparkline's scale is not its largest value")
	}
	chart := regexp.MustCompile(`(?s)<details class="chart" id="chart-web">.*?</details>`).FindString(body)
	if chart == "" || strings.Count(chart, `<svg class="big"`) != 3 || !strings.Contains(chart, `<span class="p99">p99 ms 34</span>`) {
		t.Errorf("web's chart: got %s", chart)
	}
	// A page of more server rows than maxSparkServers: server rows have no
	// sparklines or tooltips, backends do.
	big := bigSnapshot()
	big.Backends[0].Servers[0].Obs.History = h
	big.Backends[0].Obs.History = h
	body = get(t, newPage(func() *proxy.Snapshot { return big }, nil, PageConfig{URI: "/stats", HistoryInterval: 10 * time.Second}),
		"/stats", nil).Body.String()
	if n := strings.Count(body, `<svg class="spark"`); n != 2 {
		t.Errorf("10,000 servers: got %d sparklines, want 2 (backend be001's)", n)
	}
	body = get(t, newPage(func() *proxy.Snapshot { return big }, nil, PageConfig{URI: "/stats", HistoryInterval: 10 * time.Second}),
		"/stats?scope=be001", nil).Body.String()
	if n := strings.Count(body, `<svg class="spark"`); n != 4 {
		t.Errorf("scope=be001: got %d sparklines, want 4 (srv001's, the only one with a history, and the backend's)", n)
	}
	if n := strings.Count(body, `<u>`); n < 100 {
		t.Errorf("scope=be001: %d tooltips, want the server rows' too", n)
	}
}

// TestPageHistoryAligned: a page read while the sampler is between two
// objects (s1 has the newest interval, s2 and web not yet) draws every row
// up to the same interval.
func TestPageHistoryAligned(t *testing.T) {
	snap := testSnapshot()
	pts := historyPoints()
	newer := append(append([]proxy.HistoryPoint(nil), pts...),
		proxy.HistoryPoint{End: pts[29].End + 10, Requests: 100, P50: 2000, P99: 99000})
	web := snap.Backends[0]
	web.Servers[0].Obs.History = proxy.NewHistory(newer) // web/s1
	web.Servers[1].Obs.History = proxy.NewHistory(pts)   // web/s2
	web.Obs.History = proxy.NewHistory(pts)
	pg := newPage(func() *proxy.Snapshot { return snap }, nil, PageConfig{URI: "/stats", HistoryInterval: 10 * time.Second})
	body := get(t, pg, "/stats", nil).Body.String()
	for _, sv := range []string{"web/s1", "web/s2"} {
		row := regexp.MustCompile(`<tr class="[^"]*" data-server="` + sv + `"[^\n]*`).FindString(body)
		m := regexp.MustCompile(`<polyline class="p99" data-values="([^"]*)"`).FindStringSubmatch(row)
		if m == nil {
			t.Fatalf("%s has no p99 sparkline: %s", sv, row)
		}
		if vals := strings.Fields(m[1]); len(vals) != 30 || vals[29] != "34" {
			t.Errorf("%s: got %d points ending %q, want 30 ending 34 (the newest interval waits for every row)", sv, len(vals), vals[len(vals)-1])
		}
	}
}

// TestPageAdminLogged: an admin action from the page is logged as a
// socket change is: who, from where, the server, the state and the
// previous one.
func TestPageAdminLogged(t *testing.T) {
	p := testProxy(t)
	buf := &testutil.SyncBuffer{}
	l := zerolog.New(buf)
	pg := newPage(p.Snapshot, p, PageConfig{URI: "/stats", Admin: func(*http.Request) bool { return true }, Log: &l})
	w := post(t, pg, "b=web&s=s2&action=maint", func(r *http.Request) {
		r.SetBasicAuth("ops", "x")
		r.RemoteAddr = "10.1.2.3:5555"
	})
	if w.Code != 303 {
		t.Fatalf("got %d", w.Code)
	}
	want := `{"level":"info","stats_page":"/stats","user":"ops","src":"10.1.2.3:5555","action":"maint","server":"web/s2",` +
		`"state":"MAINT","previous_state":"READY","op_state":"UP","previous_op_state":"UP","weight":1,"previous_weight":1,` +
		`"message":"stats page admin action"}` + "\n"
	if got := buf.String(); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

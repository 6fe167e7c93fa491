package stats

import (
	"bytes"
	_ "embed"
	"fmt"
	"html/template"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/fulcrum-proxy/fulcrum/proxy"
	"github.com/fulcrum-proxy/fulcrum/proxy/peers"
	"github.com/rs/zerolog"
)

// PageConfig configures the HTTP stats page ([frontend.stats]).
type PageConfig struct {
	// URI is the prefix the page answers on ("/stats"); the options
	// ";csv", ";json", ";typed", ";norefresh", ";up", ";no-maint" and
	// ";st=CODE" follow it, as HAProxy's `stats uri`.
	URI string
	// Refresh makes the HTML page reload itself (meta refresh and the
	// refresh header, as HAProxy); 0 = never.
	Refresh time.Duration
	// Auth lists "user:password" pairs for HTTP basic authentication; the
	// password may be a bcrypt hash ("$2a$...", "$2b$...", "$2y$..."). Empty
	// means no authentication. See Auth (auth.go) for what bounds its cost.
	Auth []string
	// Authenticator, if non-nil, checks the authentication in place of one
	// built from Auth: the page and /metrics of a frontend share one, and
	// with it their cache of verified credentials and their limits.
	Authenticator *Auth
	// Admin reports whether a request may act on servers (HAProxy's
	// `stats admin if COND`); nil = never.
	Admin func(r *http.Request) bool
	// HideVersion leaves the version and build out of the page.
	HideVersion bool
	// Facts gives the process facts of the page header; nil = none.
	Facts func() ProcessFacts
	// Change runs an admin action's apply on the proxy that serves at
	// that moment, and not while a reload copies the running state (the
	// daemon's reloader); nil applies it to the page's own proxy. A page
	// still served by a proxy that a reload replaced thus changes the new
	// one, and no action is lost in the swap.
	Change func(apply func(*proxy.Proxy))
	// Peers gives the state of the [[peers]] sections for the page's peers
	// tables and the per-peer metrics (peers.go); nil = none.
	Peers func() []peers.Status
	// HistoryInterval is the length of a history point (the sampler's,
	// [global] stats_history_interval): the page draws the last points
	// as sparklines and charts; 0 = no history columns.
	HistoryInterval time.Duration
	// Log receives a line per server an admin action changed, as the
	// Runtime API logs its changes; nil = not logged.
	Log *zerolog.Logger
}

// page serves the stats page. snapshot is called once per request; core,
// when non-nil, receives admin actions.
type page struct {
	cfg      PageConfig
	snapshot func() *proxy.Snapshot
	core     *proxy.Proxy
	auth     *Auth     // nil = no authentication
	bufs     sync.Pool // *bytes.Buffer
}

// NewPage returns the stats page of p: HTML, CSV, JSON and typed renderings
// of p.Snapshot(), and admin actions on p's servers. It answers GET, HEAD
// and (admin actions) POST; the frontend routes cfg.URI to it.
func NewPage(p *proxy.Proxy, cfg PageConfig) http.Handler {
	return newPage(p.Snapshot, p, cfg)
}

// newPage is NewPage with the snapshot source apart, for tests.
func newPage(snapshot func() *proxy.Snapshot, core *proxy.Proxy, cfg PageConfig) *page {
	pg := &page{cfg: cfg, snapshot: snapshot, core: core, auth: cfg.Authenticator}
	if pg.auth == nil {
		pg.auth = NewAuth(cfg.Auth)
	}
	return pg
}

// NewMetrics returns the Prometheus endpoint of p, behind the page's
// authentication when cfg.Auth is set.
func NewMetrics(p *proxy.Proxy, cfg PageConfig) http.Handler {
	h := MetricsHandler(NewProxyCollector(p, cfg.Facts), NewPeersCollector(cfg.Peers))
	pg := newPage(p.Snapshot, nil, cfg)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !pg.authorized(w, r) {
			return
		}
		h.ServeHTTP(w, r)
	})
}

// authorized checks basic authentication (Auth.Check); on failure it has
// answered and returns false.
func (pg *page) authorized(w http.ResponseWriter, r *http.Request) bool {
	return pg.auth.Check(w, r)
}

// pageOptions are the ";" options after the URI, and the scope.
type pageOptions struct {
	format    string // "", "csv", "json", "typed"
	norefresh bool
	up        bool
	noMaint   bool
	st        string
	scope     string // ?scope=: only proxies whose name contains it
}

// options parses the options that follow the URI anywhere in the rest of
// the request target (HAProxy searches them there, so "/stats?stats;csv"
// works too).
func (pg *page) options(r *http.Request) pageOptions {
	target := r.RequestURI
	if target == "" {
		target = r.URL.RequestURI()
	}
	rest := strings.TrimPrefix(target, pg.cfg.URI)
	var o pageOptions
	parts := strings.Split(rest, ";")
	for _, opt := range parts[1:] {
		opt, _, _ = strings.Cut(opt, "?")
		switch {
		case opt == "csv", opt == "json", opt == "typed":
			o.format = opt
		case opt == "norefresh":
			o.norefresh = true
		case opt == "up":
			o.up = true
		case opt == "no-maint":
			o.noMaint = true
		case strings.HasPrefix(opt, "st="):
			o.st = strings.TrimPrefix(opt, "st=")
		}
	}
	// HAProxy's Scope form: ?scope=NAME (at most 20 characters).
	if sc := r.URL.Query().Get("scope"); sc != "" {
		o.scope = sc[:min(len(sc), 20)]
	}
	return o
}

// ServeHTTP answers one request to the page.
func (pg *page) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !pg.authorized(w, r) {
		return
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead:
	case http.MethodPost:
		pg.serveAdmin(w, r)
		return
	default:
		w.Header().Set("Allow", "GET, HEAD, POST")
		http.Error(w, "405 Method Not Allowed", http.StatusMethodNotAllowed)
		return
	}
	o := pg.options(r)
	h := w.Header()
	h.Set("Cache-Control", "no-cache")
	if pg.cfg.Refresh > 0 && !o.norefresh {
		h.Set("Refresh", strconv.Itoa(refreshSeconds(pg.cfg.Refresh)))
	}
	f := Filter{ProxyID: -1, Types: -1, ServerID: -1, Up: o.up, NoMaint: o.noMaint, HideLegends: true}
	buf := pg.getBuf()
	defer pg.bufs.Put(buf)
	snap := pg.snapshot()
	var err error
	switch o.format {
	case "csv":
		h.Set("Content-Type", "text/plain")
		err = WriteCSV(buf, snap, f)
	case "typed":
		h.Set("Content-Type", "text/plain")
		err = WriteTyped(buf, snap, f)
	case "json":
		h.Set("Content-Type", "application/json")
		err = WriteJSON(buf, snap, f)
	default:
		h.Set("Content-Type", "text/html; charset=utf-8")
		err = pg.renderHTML(buf, snap, f, o, pg.adminAllowed(r))
	}
	if err != nil {
		http.Error(w, "500 Internal Server Error", http.StatusInternalServerError)
		return
	}
	w.Write(buf.Bytes())
}

func (pg *page) getBuf() *bytes.Buffer {
	if b, ok := pg.bufs.Get().(*bytes.Buffer); ok {
		b.Reset()
		return b
	}
	return new(bytes.Buffer)
}

// refreshSeconds rounds d up to whole seconds, at least 1.
func refreshSeconds(d time.Duration) int {
	return max(1, int((d+time.Second-1)/time.Second))
}

// adminAllowed reports whether r may act on servers.
func (pg *page) adminAllowed(r *http.Request) bool {
	return pg.core != nil && pg.cfg.Admin != nil && pg.cfg.Admin(r)
}

//go:embed page.html
var pageHTML string

var pageTmpl = template.Must(template.New("page").Parse(pageHTML))

// pageData is what page.html renders.
type pageData struct {
	URI     string
	Refresh int
	Version string
	Build   string
	Info    Info
	Uptime  string
	MaxConn string
	Admin   bool
	Result  *pageResult
	Groups  []pageGroup
	Proxies []pageProxy
	// PeersHTML is the [[peers]] tables (peers.go), escaped.
	PeersHTML template.HTML
	// CertsHTML is the table of certificates expiring within 30 days
	// (page_certs.go), escaped; empty when there is none.
	CertsHTML template.HTML
	// Scope is the Scope filter's value; Options the page's ";" options
	// and scope, for the Refresh now and display links.
	Scope   string
	Options string
	// History is the span the sparklines cover ("15m0s"), "" without.
	History string
	Actions []pageAction
}

// pageAction is one choice of the admin form.
type pageAction struct{ Value, Text string }

// pageActions are HAProxy 2.6's 13 admin actions, in its order and words.
var pageActions = []pageAction{
	{"ready", "Set state to READY"}, {"drain", "Set state to DRAIN"}, {"maint", "Set state to MAINT"},
	{"dhlth", "Health: disable checks"}, {"ehlth", "Health: enable checks"}, {"hrunn", "Health: force UP"},
	{"hnolb", "Health: force NOLB"}, {"hdown", "Health: force DOWN"}, {"dagent", "Agent: disable checks"},
	{"eagent", "Agent: enable checks"}, {"arunn", "Agent: force UP"}, {"adown", "Agent: force DOWN"},
	{"shutdown", "Kill Sessions"},
}

type pageResult struct{ Class, Text string }

// pageProxy is one table: a frontend, or a backend with its servers.
type pageProxy struct {
	Kind string // "frontend" or "backend"
	Name string
	ID   int
	Form bool // a backend with servers, when admin is allowed
	// RowsHTML is the table's rows, written by appendRow with every text
	// escaped: ten thousand rows through the template's own actions would
	// take five times the page's budget.
	RowsHTML template.HTML
	rows     []byte
	// ChartHTML is a backend's history chart (sparkline.go).
	ChartHTML template.HTML
}

// pageCell is one cell: its text, a plain title, HAProxy's tooltip table
// (hover) of label/value lines, and its colspan.
type pageCell struct {
	Text, Title string
	Tips        []tip
	// Span is the cell's colspan when above 1; a cell under another's
	// span has -1 and is not written.
	Span int
}

// tip is one line of a cell's tooltip; a line with an empty Value is a
// heading.
type tip struct{ Label, Value string }

// pageGroup is a group of columns of the HTML tables, by column name.
type pageGroup struct {
	Title string
	Cols  []pageCol
}

type pageCol struct {
	Title string
	col   int // index in columns
}

// pageGroups are HAProxy's HTML columns, read from the column table.
var pageGroups = func() []pageGroup {
	g := func(title string, cols ...string) pageGroup {
		pg := pageGroup{Title: title}
		for i := 0; i < len(cols); i += 2 {
			idx := columnIndex(cols[i+1])
			if idx < 0 {
				panic("stats: page column " + cols[i+1])
			}
			pg.Cols = append(pg.Cols, pageCol{Title: cols[i], col: idx})
		}
		return pg
	}
	return []pageGroup{
		g("Queue", "Cur", "qcur", "Max", "qmax", "Limit", "qlimit"),
		g("Session rate", "Cur", "rate", "Max", "rate_max", "Limit", "rate_lim"),
		g("Sessions", "Cur", "scur", "Max", "smax", "Limit", "slim", "Total", "stot", "LbTot", "lbtot", "Last", "lastsess"),
		g("Bytes", "In", "bin", "Out", "bout"),
		g("Denied", "Req", "dreq", "Resp", "dresp"),
		g("Errors", "Req", "ereq", "Conn", "econ", "Resp", "eresp"),
		g("Warnings", "Retr", "wretr", "Redis", "wredis"),
		g("Server", "Status", "status", "LastChk", "check_status", "Wght", "weight", "Act", "act", "Bck", "bck",
			"Chk", "chkfail", "Dwn", "chkdown", "Dwntme", "downtime", "Thrtle", "throttle"),
		g("Response time", "p50", "rtime_p50_us", "p99", "rtime_p99_us"),
		// HTTP/2 (the h2 statistics module), on frontends and backends.
		g("HTTP/2", "Conn", "h2_open_connections", "Streams", "h2_backend_open_streams", "Total", "h2_backend_total_streams",
			"ConnErr", "h2_detected_conn_protocol_errors", "StrmErr", "h2_detected_strm_protocol_errors"),
	}
}()

// Result boxes of admin actions (HAProxy's texts).
var pageResults = map[string]pageResult{
	"DONE": {"ok", "Action processed successfully."},
	"NONE": {"ok", "Nothing has changed."},
	"PART": {"err", "Action partially processed. Some server names are probably unknown or ambiguous (duplicated names in the backend)."},
	"ERRP": {"err", "Action not processed because of invalid parameters. The action is maybe unknown. The backend name is probably unknown or ambiguous (duplicated names). Some server names are probably unknown or ambiguous (duplicated names in the backend)."},
	"EXCD": {"err", "Action not processed : the buffer couldn't store all the data. You should retry with less servers at a time."},
	"DENY": {"err", "Action denied."},
	"UNKN": {"err", "Unexpected result."},
}

// renderHTML writes the HTML page of snap.
func (pg *page) renderHTML(buf *bytes.Buffer, snap *proxy.Snapshot, f Filter, o pageOptions, admin bool) error {
	d := pageData{URI: pg.cfg.URI, Admin: admin, Groups: pageGroups, Scope: o.scope, Actions: pageActions}
	d.Options = pageLinkOptions(o)
	if iv := pg.cfg.HistoryInterval; iv > 0 {
		d.History = (time.Duration(proxy.HistorySlots) * iv).String()
	}
	// Sparklines and tooltips on server rows cost a few KiB each: beyond
	// maxSparkServers server rows on the page (narrow it with Scope) only
	// frontends and backends get them.
	detailServers := countServerRows(snap, &f, o.scope) <= maxSparkServers
	sparkServers := pg.cfg.HistoryInterval > 0 && detailServers
	if pg.cfg.Refresh > 0 && !o.norefresh {
		d.Refresh = refreshSeconds(pg.cfg.Refresh)
	}
	var facts ProcessFacts
	if pg.cfg.Facts != nil {
		facts = pg.cfg.Facts()
	}
	d.Info = NewInfo(snap, facts)
	if !pg.cfg.HideVersion {
		d.Version, d.Build = facts.Version, facts.BuildInfo
	}
	d.Uptime = uptime(d.Info.Uptime)
	d.MaxConn = "unlimited"
	if snap.MaxConn > 0 {
		d.MaxConn = strconv.Itoa(snap.MaxConn)
	}
	if res, ok := pageResults[o.st]; ok {
		d.Result = &res
	}
	points := pagePoints(snap, &f, o.scope, d.History != "", sparkServers)
	var cur *pageProxy
	var cells []pageCell
	eachRow(snap, &f, func(r *row) error {
		if o.scope != "" && !containsFold(r.pxname, o.scope) {
			return nil
		}
		if r.kind == KindFrontend {
			d.Proxies = append(d.Proxies, pageProxy{Kind: "frontend", Name: r.pxname, ID: r.iid})
		} else if cur == nil || cur.Kind != "backend" || cur.ID != r.iid {
			d.Proxies = append(d.Proxies, pageProxy{Kind: "backend", Name: r.pxname, ID: r.iid,
				Form: admin && len(r.be.Servers) > 0})
		}
		cur = &d.Proxies[len(d.Proxies)-1]
		cells = cells[:0]
		for _, g := range pageGroups {
			for _, c := range g.Cols {
				cells = append(cells, htmlCell(r, c.col, r.kind != KindServer || detailServers))
			}
		}
		if r.kind == KindServer && r.sv.Resolution != nil && r.sv.Resolution.Maint {
			// HAProxy's page shows "resolution" over Chk, Dwn and Dwntme
			// of a server in MAINT (resolution) (stats.c).
			cells[chkfailCell] = pageCell{Text: "resolution", Span: 3}
			cells[chkfailCell+1].Span, cells[chkfailCell+2].Span = -1, -1
		}
		cur.rows = appendRow(cur.rows, r, cells, admin, cur.Form)
		if d.History != "" {
			var pts []proxy.HistoryPoint
			if r.kind != KindServer || sparkServers {
				pts = points[r.c.Obs.History]
			}
			cur.rows = appendSparklines(cur.rows[:len(cur.rows)-len("</tr>\n")], pts, pg.cfg.HistoryInterval)
			cur.rows = append(cur.rows, "</tr>\n"...)
			if r.kind == KindBackend {
				cur.ChartHTML = template.HTML(appendBackendChart(nil, r.pxname, pts, pg.cfg.HistoryInterval))
			}
		}
		return nil
	})
	for i := range d.Proxies {
		d.Proxies[i].RowsHTML = template.HTML(d.Proxies[i].rows)
	}
	d.PeersHTML = peersHTML(pg.cfg.Peers)
	d.CertsHTML = certsHTML(snap)
	return pageTmpl.Execute(buf, &d)
}

// pagePoints reads the history of every row the page draws, all up to the
// same interval: the sampler writes its points one object after another,
// so a page read during its pass would otherwise show some rows with the
// newest interval and others without (rows that do not line up). Points
// after the oldest "newest point" among the rows are left for the next
// page.
func pagePoints(snap *proxy.Snapshot, f *Filter, scope string, history, servers bool) map[*proxy.History][]proxy.HistoryPoint {
	out := map[*proxy.History][]proxy.HistoryPoint{}
	if !history {
		return out
	}
	var cut int64 = math.MaxInt64
	eachRow(snap, f, func(r *row) error {
		h := r.c.Obs.History
		if h == nil || (scope != "" && !containsFold(r.pxname, scope)) || (r.kind == KindServer && !servers) {
			return nil
		}
		if _, ok := out[h]; ok {
			return nil
		}
		pts := h.Points()
		out[h] = pts
		if n := len(pts); n > 0 {
			cut = min(cut, pts[n-1].End)
		}
		return nil
	})
	longest := 0
	for h, pts := range out {
		n := len(pts)
		for n > 0 && pts[n-1].End > cut {
			n--
		}
		out[h] = pts[:n]
		longest = max(longest, n)
	}
	// A row whose history began later (its object saw its first traffic
	// an interval after the others) gets gap points in front, as missed
	// intervals are, so that every row's points stand for the same
	// intervals.
	for h, pts := range out {
		if n := len(pts); n > 0 && n < longest {
			out[h] = append(make([]proxy.HistoryPoint, longest-n, longest), pts...)
		}
	}
	return out
}

// appendRow appends one <tr> of r to b. Every text goes through
// appendEscaped, which is safe in element content and in quoted attribute
// values. A server row carries its state class (plus
// "backup"), data-server="backend/server" and data-state; with admin
// rights, a checkbox in tables that have a form.
func appendRow(b []byte, r *row, cells []pageCell, admin, form bool) []byte {
	class := "frontend"
	switch r.kind {
	case KindBackend:
		class = "backend"
	case KindServer:
		class = stateClass(r.sv)
	}
	b = append(b, `<tr class="`...)
	b = append(b, class...)
	if r.kind == KindServer {
		if r.sv.Backup {
			b = append(b, " backup"...)
		}
		b = append(b, `" data-server="`...)
		b = appendEscaped(b, r.pxname)
		b = append(b, '/')
		b = appendEscaped(b, r.svname)
		b = append(b, `" data-state="`...)
		b = append(b, class...)
	}
	b = append(b, `">`...)
	if admin && form {
		if r.kind == KindServer {
			b = append(b, `<td><input type="checkbox" name="s" value="`...)
			b = appendEscaped(b, r.svname)
			b = append(b, `"></td>`...)
		} else {
			b = append(b, "<td></td>"...)
		}
	}
	b = append(b, `<td class="name">`...)
	b = appendEscaped(b, r.svname)
	b = append(b, "</td>"...)
	for _, c := range cells {
		if c.Span < 0 {
			continue
		}
		if c.Span > 1 {
			b = append(b, `<td class="ac" colspan="`...)
			b = strconv.AppendInt(b, int64(c.Span), 10)
			b = append(b, `">`...)
			b = appendEscaped(b, c.Text)
			b = append(b, "</td>"...)
			continue
		}
		if c.Title != "" {
			b = append(b, `<td title="`...)
			b = appendEscaped(b, c.Title)
			b = append(b, `">`...)
		} else {
			b = append(b, "<td>"...)
		}
		if len(c.Tips) > 0 {
			b = appendTips(b, c.Text, c.Tips)
		} else {
			b = appendEscaped(b, c.Text)
		}
		b = append(b, "</td>"...)
	}
	return append(b, "</tr>\n"...)
}

// appendEscaped appends s with the characters of template.HTMLEscapeString
// escaped the same way (NUL, ", ', &, <, >), without allocating.
func appendEscaped(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case 0:
			b = append(b, "\uFFFD"...)
		case '"':
			b = append(b, "&#34;"...)
		case '\'':
			b = append(b, "&#39;"...)
		case '&':
			b = append(b, "&amp;"...)
		case '<':
			b = append(b, "&lt;"...)
		case '>':
			b = append(b, "&gt;"...)
		default:
			b = append(b, c)
		}
	}
	return b
}

// chkfailCell is the position of the Chk cell (chkfail) in a page row,
// followed by Dwn and Dwntme.
var chkfailCell = func() int {
	n := 0
	for _, g := range pageGroups {
		for _, c := range g.Cols {
			if columns[c.col].Name == "chkfail" {
				return n
			}
			n++
		}
	}
	panic("stats: no chkfail cell")
}()

// lastchgCol is the index of lastchg, shown with the status.
var lastchgCol = columnIndex("lastchg")

// htmlCell formats column col of r for the HTML page: ages as durations,
// flags as Y or -, the check with its duration and detail.
func htmlCell(r *row, col int, tips bool) pageCell {
	c := &columns[col]
	v := c.value(r)
	var cell pageCell
	if v.set {
		cell = htmlValue(r, c, v)
	}
	if tips {
		cell.Tips = cellTips(r, c.Name)
	}
	return cell
}

// htmlValue is htmlCell's text (and title) of a set value.
func htmlValue(r *row, c *Column, v value) pageCell {
	switch c.Name {
	case "weight":
		// HAProxy's page shows the current weight and the initial one.
		return pageCell{Text: strconv.FormatInt(v.n, 10) + "/" + strconv.Itoa(initialWeight(r))}
	case "rtime_p50_us", "rtime_p99_us":
		return pageCell{Text: fmtMs(v.n)}
	case "lastsess":
		if v.n < 0 {
			return pageCell{Text: "never"}
		}
		return pageCell{Text: shortDuration(v.n)}
	case "downtime":
		return pageCell{Text: shortDuration(v.n)}
	case "act", "bck":
		if r.kind == KindServer {
			if v.n == 1 {
				return pageCell{Text: "Y"}
			}
			return pageCell{Text: "-"}
		}
	case "status":
		if lc := columns[lastchgCol].value(r); lc.set {
			return pageCell{Text: shortDuration(lc.n) + " " + v.s, Title: "last change " + shortDuration(lc.n) + " ago"}
		}
		return pageCell{Text: v.s}
	case "check_status":
		ck := r.sv.Check
		text := v.s
		if ck.Code > 0 {
			text += "/" + strconv.Itoa(ck.Code)
		}
		if ck.Duration >= 0 {
			text += " in " + strconv.FormatInt(ck.Duration, 10) + "ms"
		}
		title := ck.Desc
		if ck.Info != "" {
			title += ": " + ck.Info
		}
		return pageCell{Text: text, Title: title}
	}
	if c.typ == tStr {
		return pageCell{Text: v.s}
	}
	return pageCell{Text: strconv.FormatInt(v.n, 10)}
}

// shortDuration formats seconds as HAProxy's page: 45s, 2m41s, 3h05m, 2d4h.
func shortDuration(s int64) string {
	switch {
	case s < 60:
		return fmt.Sprintf("%ds", s)
	case s < 3600:
		return fmt.Sprintf("%dm%02ds", s/60, s%60)
	case s < 86400:
		return fmt.Sprintf("%dh%02dm", s/3600, s%3600/60)
	}
	return fmt.Sprintf("%dd%dh", s/86400, s%86400/3600)
}

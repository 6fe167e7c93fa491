package stats

import (
	"net/url"
	"strconv"
	"strings"

	"github.com/fulcrum-proxy/fulcrum/proxy"
)

// The stats page's cell details, as HAProxy 2.6's page shows them on
// hover: response codes, connection reuse, times, current connections.

// maxSparkServers is the most server rows that get sparklines on one page
// (each costs about 4 KiB of HTML); frontends and backends always do.
const maxSparkServers = 500

// appendTips writes text with its tooltip: HAProxy's <u>text<div
// class="tips"> table </div></u>, shown on hover (and on tap on phones).
func appendTips(b []byte, text string, tips []tip) []byte {
	b = append(b, "<u>"...)
	b = appendEscaped(b, text)
	b = append(b, `<div class="tips"><table class="det">`...)
	for _, t := range tips {
		if t.Value == "" {
			b = append(b, `<tr><th colspan="2">`...)
			b = appendEscaped(b, t.Label)
			b = append(b, "</th></tr>"...)
			continue
		}
		b = append(b, "<tr><th>"...)
		b = appendEscaped(b, t.Label)
		b = append(b, "</th><td>"...)
		b = appendEscaped(b, t.Value)
		b = append(b, "</td></tr>"...)
	}
	return append(b, "</table></div></u>"...)
}

func itoa64(v int64) string { return strconv.FormatInt(v, 10) }

// pct writes n and its share of total, HAProxy's "12 (5%)".
func pct(n, total int64) string {
	if total <= 0 {
		return itoa64(n) + " (0%)"
	}
	return itoa64(n) + " (" + itoa64(n*100/total) + "%)"
}

// fmtMs formats µs as milliseconds for a cell: 0.42, 12.3, 250.
func fmtMs(us int64) string {
	switch {
	case us < 10000:
		return strconv.FormatFloat(float64(us)/1000, 'f', 2, 64)
	case us < 100000:
		return strconv.FormatFloat(float64(us)/1000, 'f', 1, 64)
	}
	return strconv.FormatInt(us/1000, 10)
}

// cellTips returns the tooltip of column name on row r, nil for none.
func cellTips(r *row, name string) []tip {
	c := r.c
	switch name {
	case "rate":
		if r.kind == KindFrontend {
			return []tip{{"Current connection rate:", itoa64(c.Rate) + "/s"}, {"Current session rate:", itoa64(c.Rate) + "/s"},
				{"Current request rate:", itoa64(c.ReqRate) + "/s"}}
		}
	case "rate_max":
		if r.kind == KindFrontend {
			return []tip{{"Max connection rate:", itoa64(c.RateMax) + "/s"}, {"Max session rate:", itoa64(c.RateMax) + "/s"},
				{"Max request rate:", itoa64(c.ReqRateMax) + "/s"}}
		}
	case "scur":
		if r.kind == KindServer {
			limit := "-"
			if r.sv.MaxConn > 0 {
				limit = strconv.Itoa(r.sv.MaxConn)
			}
			return []tip{{"Current active connections:", itoa64(c.Scur)}, {"Current used connections:", itoa64(c.Scur)},
				{"Current idle connections:", strconv.Itoa(c.Obs.Idle)}, {"- unsafe:", strconv.Itoa(c.Obs.Idle - c.Obs.SafeIdle)},
				{"- safe:", strconv.Itoa(c.Obs.SafeIdle)}, {"Estimated need of connections:", itoa64(c.Scur)},
				{"Active connections limit:", limit}, {"Idle connections limit:", idleLimit(c.Obs.PoolMax)}}
		}
	case "stot":
		return totalTips(r)
	case "eresp":
		if r.kind != KindFrontend {
			return []tip{{"Connection resets during transfers:", itoa64(c.CliAbrt) + " client, " + itoa64(c.SrvAbrt) + " server"}}
		}
	case "chkfail":
		if r.kind == KindServer && r.sv.Check != nil {
			return []tip{{"Failed Health Checks", ""}}
		}
	case "rtime_p50_us", "rtime_p99_us":
		return percentileTips(r)
	}
	return nil
}

// totalTips is the Sessions Total tooltip: sessions, connections and
// reuse, HTTP requests and responses by class, and the times (HAProxy's
// max/avg over the last 1024 requests, and fulcrum's percentiles).
func totalTips(r *row) []tip {
	c := r.c
	var t []tip
	http := r.mode == "http"
	if r.kind == KindFrontend {
		t = append(t, tip{"Cum. connections:", itoa64(c.Stot)}, tip{"Cum. sessions:", itoa64(c.Stot)})
	} else {
		newConns := c.Obs.Connect - c.Wretr - c.Econ
		t = append(t, tip{"Cum. sessions:", itoa64(c.Stot)}, tip{"New connections:", itoa64(max(newConns, 0))},
			tip{"Reused connections:", pct(c.Obs.Reuse, c.Obs.Reuse+max(newConns, 0))})
	}
	if http {
		t = append(t, tip{"Cum. HTTP requests:", itoa64(c.ReqTot)})
		resp := c.Hrsp1xx + c.Hrsp2xx + c.Hrsp3xx + c.Hrsp4xx + c.Hrsp5xx + c.HrspOther
		for _, h := range []struct {
			l string
			n int64
		}{{"- HTTP 1xx responses:", c.Hrsp1xx}, {"- HTTP 2xx responses:", c.Hrsp2xx}, {"- HTTP 3xx responses:", c.Hrsp3xx},
			{"- HTTP 4xx responses:", c.Hrsp4xx}, {"- HTTP 5xx responses:", c.Hrsp5xx}, {"- other responses:", c.HrspOther}} {
			v := itoa64(h.n)
			if r.kind != KindFrontend {
				v = pct(h.n, resp)
			}
			t = append(t, tip{h.l, v})
		}
		if r.kind == KindFrontend {
			t = append(t, tip{"Intercepted requests:", itoa64(c.Obs.Intercepted)})
		}
	}
	if r.kind != KindFrontend {
		t = append(t, tip{"Max / Avg over last 1024 success. conn.", ""},
			tip{"- Queue time:", itoa64(c.QtimeMax) + " / " + itoa64(c.Qtime) + " ms"},
			tip{"- Connect time:", itoa64(c.Obs.CtimeMax) + " / " + itoa64(c.Ctime) + " ms"},
			tip{"- Responses time:", itoa64(c.Obs.RtimeMax) + " / " + itoa64(c.Rtime) + " ms"},
			tip{"- Total time:", itoa64(c.Obs.TtimeMax) + " / " + itoa64(c.Ttime) + " ms"})
	}
	return append(t, percentileTips(r)...)
}

// percentileTips lists the p50/p90/p99/p99.9 of each timing kind that has
// values, in ms, since start.
func percentileTips(r *row) []tip {
	var t []tip
	for k, name := range []string{"Queue", "Connect", "Response", "Total"} {
		s := r.timing(k)
		if s.Count == 0 {
			continue
		}
		if t == nil {
			t = append(t, tip{"p50 / p90 / p99 / p99.9 since start", ""})
		}
		t = append(t, tip{"- " + name + " time:", fmtMs(s.P50) + " / " + fmtMs(s.P90) + " / " + fmtMs(s.P99) + " / " + fmtMs(s.P999) + " ms"})
	}
	return t
}

// initialWeight is the `cur/initial` weight's second part: a server's
// configured weight; a backend's sum over the servers its weight sums.
func initialWeight(r *row) int {
	if r.kind == KindServer {
		return r.sv.InitialWeight
	}
	n, act := 0, r.agg.act > 0
	for i := range r.be.Servers {
		s := &r.be.Servers[i]
		usable := s.Op == proxy.OpUp && s.Admin == proxy.AdminReady && s.EffectiveWeight > 0
		if usable && s.Backup != act {
			n += s.InitialWeight
		}
	}
	return n
}

// containsFold reports whether s contains sub, ignoring case (the Scope
// filter, as HAProxy's).
func containsFold(s, sub string) bool {
	return strings.Contains(strings.ToLower(s), strings.ToLower(sub))
}

// countServerRows counts the server rows the page shows.
func countServerRows(snap *proxy.Snapshot, f *Filter, scope string) int {
	n := 0
	for i := range snap.Backends {
		b := &snap.Backends[i]
		if scope != "" && !containsFold(b.Name, scope) {
			continue
		}
		for j := range b.Servers {
			if !f.hidden(&b.Servers[j]) {
				n++
			}
		}
	}
	return n
}

// pageLinkOptions returns the ";" options and the scope the page was asked
// with, to keep them in its links (Refresh now).
func pageLinkOptions(o pageOptions) string {
	var b strings.Builder
	if o.norefresh {
		b.WriteString(";norefresh")
	}
	if o.up {
		b.WriteString(";up")
	}
	if o.noMaint {
		b.WriteString(";no-maint")
	}
	if o.scope != "" {
		b.WriteString("?scope=" + url.QueryEscape(o.scope))
	}
	return b.String()
}

// idleLimit is pool_max_conn as the tooltip shows it: "-" for no limit.
func idleLimit(n int) string {
	if n < 0 {
		return "-"
	}
	return strconv.Itoa(n)
}

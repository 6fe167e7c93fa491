package stats

// The stats page's history: inline SVG drawn from each object's ring of
// points (proxy/history.go), no script and no external resource. A row
// gets two sparklines (request rate with the errors, and p50/p99
// response time); a backend gets a larger chart in a <details> element
// that opens on click. Each polyline carries its values in data-values,
// for tools and tests.

import (
	"strconv"
	"time"

	"github.com/fulcrum-proxy/fulcrum/proxy"
)

// series is one line of a chart: its values (NaN-free; gaps are
// missing points), a CSS class and a legend name.
type series struct {
	vals  []float64 // one per history point, oldest first
	ok    []bool    // false where the sampler missed the interval
	class string
	name  string
}

// historySeries turns points into the page's series: requests and errors
// per second, p50 and p99 response time in ms, queue and sessions.
func historySeries(pts []proxy.HistoryPoint, interval time.Duration) (req, errs, p50, p99, queue, sess series) {
	secs := interval.Seconds()
	if secs <= 0 {
		secs = 1
	}
	req = series{class: "req", name: "req/s"}
	errs = series{class: "err", name: "errors/s"}
	p50 = series{class: "p50", name: "p50 ms"}
	p99 = series{class: "p99", name: "p99 ms"}
	queue = series{class: "queue", name: "queue"}
	sess = series{class: "sess", name: "sessions"}
	for _, p := range pts {
		ok := p.End != 0
		for _, s := range []*series{&req, &errs, &p50, &p99, &queue, &sess} {
			s.ok = append(s.ok, ok)
		}
		req.vals = append(req.vals, float64(p.Requests)/secs)
		errs.vals = append(errs.vals, float64(p.Errors)/secs)
		p50.vals = append(p50.vals, float64(p.P50)/1000)
		p99.vals = append(p99.vals, float64(p.P99)/1000)
		queue.vals = append(queue.vals, float64(p.Queue))
		sess.vals = append(sess.vals, float64(p.Sessions))
	}
	return
}

// appendChart appends an SVG of w x h pixels drawing the series on one
// scale (from 0 to their largest value), the newest point at the right
// edge and the oldest HistorySlots-1 intervals before it at the left. The
// svg element has class cls and data-max (the scale's top); each polyline
// has the series' class and data-values.
func appendChart(b []byte, w, h int, cls, title string, ss ...series) []byte {
	top := 0.0
	for _, s := range ss {
		for i, v := range s.vals {
			if s.ok[i] && v > top {
				top = v
			}
		}
	}
	b = append(b, `<svg class="`...)
	b = append(b, cls...)
	b = append(b, `" width="`...)
	b = strconv.AppendInt(b, int64(w), 10)
	b = append(b, `" height="`...)
	b = strconv.AppendInt(b, int64(h), 10)
	b = append(b, `" viewBox="0 0 `...)
	b = strconv.AppendInt(b, int64(w), 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(h), 10)
	b = append(b, `" data-max="`...)
	b = appendFloat(b, top)
	b = append(b, `" role="img"><title>`...)
	b = appendEscaped(b, title)
	b = append(b, "</title>"...)
	step := float64(w-1) / float64(proxy.HistorySlots-1)
	for _, s := range ss {
		n := len(s.vals)
		b = append(b, `<polyline class="`...)
		b = append(b, s.class...)
		b = append(b, `" data-values="`...)
		for i, v := range s.vals {
			if i > 0 {
				b = append(b, ' ')
			}
			if !s.ok[i] {
				b = append(b, '-')
				continue
			}
			b = appendFloat(b, v)
		}
		b = append(b, `" points="`...)
		first := true
		for i, v := range s.vals {
			if !s.ok[i] {
				continue // a missed interval: the line jumps over it
			}
			x := float64(w-1) - float64(n-1-i)*step
			y := float64(h - 1)
			if top > 0 {
				y = float64(h-1) - v/top*float64(h-2)
			}
			if !first {
				b = append(b, ' ')
			}
			first = false
			b = strconv.AppendFloat(b, x, 'f', 1, 64)
			b = append(b, ',')
			b = strconv.AppendFloat(b, y, 'f', 1, 64)
		}
		b = append(b, `"/>`...)
	}
	return append(b, "</svg>"...)
}

// appendFloat writes v with at most 3 decimals, without trailing zeros.
func appendFloat(b []byte, v float64) []byte {
	return strconv.AppendFloat(b, float64(int64(v*1000+0.5))/1000, 'f', -1, 64)
}

// appendSparklines appends a row's two history cells: requests (and
// errors) per second, and p50/p99 response time.
func appendSparklines(b []byte, pts []proxy.HistoryPoint, interval time.Duration) []byte {
	if len(pts) == 0 {
		return append(b, `<td class="spark"></td><td class="spark"></td>`...)
	}
	req, errs, p50, p99, _, _ := historySeries(pts, interval)
	last := len(pts) - 1
	b = append(b, `<td class="spark">`...)
	b = appendChart(b, 92, 18, "spark", "requests/s, errors/s: last "+appendRate(req.vals[last])+", "+appendRate(errs.vals[last]), req, errs)
	b = append(b, `</td><td class="spark">`...)
	b = appendChart(b, 92, 18, "spark", "response time p50/p99: last "+appendRate(p50.vals[last])+" ms, "+appendRate(p99.vals[last])+" ms", p50, p99)
	return append(b, "</td>"...)
}

func appendRate(v float64) string { return string(appendFloat(nil, v)) }

// appendBackendChart appends a backend's larger chart: three panels
// (request and error rates, p50/p99 response time, queue and sessions)
// in a <details> element that opens on click.
func appendBackendChart(b []byte, name string, pts []proxy.HistoryPoint, interval time.Duration) []byte {
	if len(pts) == 0 {
		return b
	}
	req, errs, p50, p99, queue, sess := historySeries(pts, interval)
	span := time.Duration(proxy.HistorySlots) * interval
	b = append(b, `<details class="chart" id="chart-`...)
	b = appendEscaped(b, name)
	b = append(b, `"><summary>Last `...)
	b = append(b, span.String()...)
	b = append(b, ` of `...)
	b = appendEscaped(b, name)
	b = append(b, ` (one point per `...)
	b = append(b, interval.String()...)
	b = append(b, ")</summary>\n"...)
	for _, panel := range []struct {
		title string
		ss    []series
	}{
		{"requests/s and errors/s", []series{req, errs}},
		{"response time p50 and p99, ms", []series{p50, p99}},
		{"queue and sessions", []series{queue, sess}},
	} {
		b = append(b, `<div class="panel"><div class="legend">`...)
		b = appendEscaped(b, panel.title)
		for _, s := range panel.ss {
			b = append(b, ` <span class="`...)
			b = append(b, s.class...)
			b = append(b, `">`...)
			b = appendEscaped(b, s.name)
			b = append(b, ` `...)
			b = appendFloat(b, s.vals[len(s.vals)-1])
			b = append(b, `</span>`...)
		}
		b = append(b, "</div>"...)
		b = appendChart(b, 540, 90, "big", name+": "+panel.title, panel.ss...)
		b = append(b, "</div>\n"...)
	}
	return append(b, "</details>\n"...)
}

package cli

import (
	"fmt"
	"strconv"
	"strings"
)

// Histogram is the reply of `show histogram`, parsed for drawing: the
// object's name, one summary per timing kind and the non-empty buckets.
type Histogram struct {
	Name    string
	Summary []HistogramSummary
	Buckets []HistogramBucket
}

// HistogramSummary is one timing kind's line: count, sum and percentiles
// in µs.
type HistogramSummary struct {
	Timing              string
	Count, SumUs        int64
	P50, P90, P99, P999 int64
}

// HistogramBucket is one bucket: [Lo, Hi) µs holding Count values.
type HistogramBucket struct {
	Timing        string
	Lo, Hi, Count int64
}

// ParseHistogram reads a `show histogram` reply; ok is false for any
// other reply.
func ParseHistogram(reply string) (*Histogram, bool) {
	lines := strings.Split(strings.TrimRight(reply, "\n"), "\n")
	if len(lines) < 3 || !strings.HasPrefix(lines[0], "# histogram ") ||
		lines[1] != "# timing,count,sum_us,p50_us,p90_us,p99_us,p999_us" {
		return nil, false
	}
	h := &Histogram{Name: strings.TrimPrefix(lines[0], "# histogram ")}
	if i := strings.Index(h.Name, ":"); i >= 0 {
		h.Name = h.Name[:i]
	}
	buckets := false
	for _, l := range lines[2:] {
		if l == "# timing,lo_us,hi_us,count" {
			buckets = true
			continue
		}
		f := strings.Split(l, ",")
		n := make([]int64, len(f))
		for i := 1; i < len(f); i++ {
			v, err := strconv.ParseInt(f[i], 10, 64)
			if err != nil {
				return nil, false
			}
			n[i] = v
		}
		switch {
		case buckets && len(f) == 4:
			h.Buckets = append(h.Buckets, HistogramBucket{Timing: f[0], Lo: n[1], Hi: n[2], Count: n[3]})
		case !buckets && len(f) == 7:
			h.Summary = append(h.Summary, HistogramSummary{Timing: f[0], Count: n[1], SumUs: n[2],
				P50: n[3], P90: n[4], P99: n[5], P999: n[6]})
		default:
			return nil, false
		}
	}
	return h, true
}

// maxBars is the most bars drawn per timing kind: beyond it, buckets of
// the same power of two are merged.
const maxBars = 24

// Render draws each timing kind that has values: a line with its count
// and percentiles, then one bar per bucket, scaled to the largest, within
// width columns (at least 60).
func (h *Histogram) Render(width int) string {
	width = max(width, 60)
	var b strings.Builder
	for _, s := range h.Summary {
		if s.Count == 0 {
			continue
		}
		fmt.Fprintf(&b, "%s %s: %d, p50 %s, p90 %s, p99 %s, p99.9 %s\n", h.Name, s.Timing, s.Count,
			fmtUs(s.P50), fmtUs(s.P90), fmtUs(s.P99), fmtUs(s.P999))
		var bs []HistogramBucket
		for _, bk := range h.Buckets {
			if bk.Timing == s.Timing {
				bs = append(bs, bk)
			}
		}
		if len(bs) > maxBars {
			bs = mergeOctaves(bs)
		}
		var top int64
		for _, bk := range bs {
			top = max(top, bk.Count)
		}
		label := 19 // "  12.3ms -  45.6ms "
		count := len(strconv.FormatInt(top, 10)) + 1
		bar := max(width-label-count-2, 10)
		for _, bk := range bs {
			n := int((bk.Count*int64(bar) + top - 1) / top)
			fmt.Fprintf(&b, "  %7s-%-7s │%s %d\n", fmtUs(bk.Lo), fmtUs(bk.Hi), strings.Repeat("█", n), bk.Count)
		}
	}
	if b.Len() == 0 {
		return h.Name + ": no values yet\n"
	}
	return b.String()
}

// mergeOctaves merges the buckets of each power of two into one.
func mergeOctaves(bs []HistogramBucket) []HistogramBucket {
	var out []HistogramBucket
	for _, bk := range bs {
		lo := int64(1)
		for lo*2 <= bk.Lo {
			lo *= 2
		}
		if bk.Lo == 0 {
			lo = 0
		}
		if n := len(out); n > 0 && out[n-1].Lo == lo {
			out[n-1].Hi = bk.Hi
			out[n-1].Count += bk.Count
			continue
		}
		out = append(out, HistogramBucket{Timing: bk.Timing, Lo: lo, Hi: bk.Hi, Count: bk.Count})
	}
	return out
}

// fmtUs formats µs for people: 850us, 12.3ms, 1.25s.
func fmtUs(us int64) string {
	switch {
	case us < 1000:
		return strconv.FormatInt(us, 10) + "us"
	case us < 10000:
		return strconv.FormatFloat(float64(us)/1000, 'f', 2, 64) + "ms"
	case us < 1000000:
		return strconv.FormatFloat(float64(us)/1000, 'f', 1, 64) + "ms"
	}
	return strconv.FormatFloat(float64(us)/1e6, 'f', 2, 64) + "s"
}

package cli

import (
	"fmt"
	"strings"
	"testing"
)

const histReply = `# histogram web/s1: latency since start, us
# timing,count,sum_us,p50_us,p90_us,p99_us,p999_us
queue,0,0,0,0,0,0
response,30,2606000,51200,212992,212992,212992
# timing,lo_us,hi_us,count
response,9216,10240,10
response,49152,53248,10
response,196608,212992,10
`

// TestHistogramRender checks the bars of a `show histogram` reply: the
// percentiles line, one bar per bucket scaled to the largest, nothing
// for a timing without values.
func TestHistogramRender(t *testing.T) {
	h, ok := ParseHistogram(histReply)
	if !ok {
		t.Fatal("not parsed")
	}
	got := h.Render(60)
	bar := strings.Repeat("█", 36)
	want := "web/s1 response: 30, p50 51.2ms, p90 213.0ms, p99 213.0ms, p99.9 213.0ms\n" +
		"   9.22ms-10.2ms  │" + bar + " 10\n" +
		"   49.2ms-53.2ms  │" + bar + " 10\n" +
		"  196.6ms-213.0ms │" + bar + " 10\n"
	if got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
	for _, l := range strings.Split(strings.TrimSpace(got), "\n")[1:] {
		if n := len([]rune(l)); n > 60 {
			t.Errorf("line of %d columns, want at most 60: %q", n, l)
		}
	}
	if _, ok := ParseHistogram("# pxname,svname\nweb,s1\n"); ok {
		t.Error("a show stat reply parsed as a histogram")
	}
}

// TestHistogramMergeOctaves: more buckets than bars are merged by power
// of two, counts summed.
func TestHistogramMergeOctaves(t *testing.T) {
	var b strings.Builder
	b.WriteString("# histogram fe: latency since start, us\n# timing,count,sum_us,p50_us,p90_us,p99_us,p999_us\ntotal,60,0,1,1,1,1\n# timing,lo_us,hi_us,count\n")
	// 30 buckets of 2 values: 16..47 µs, two per power of two in width 2..4
	for lo := int64(16); lo < 76; lo += 2 {
		fmt.Fprintf(&b, "total,%d,%d,2\n", lo, lo+2)
	}
	h, ok := ParseHistogram(b.String())
	if !ok {
		t.Fatal("not parsed")
	}
	out := h.Render(80)
	if n := strings.Count(out, "│"); n != 3 { // 16-32, 32-64, 64-76
		t.Errorf("got %d bars, want 3:\n%s", n, out)
	}
	if !strings.Contains(out, " 16\n") || !strings.Contains(out, " 32\n") || !strings.Contains(out, " 12\n") {
		t.Errorf("merged counts: got\n%s", out)
	}
}

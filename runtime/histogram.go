package runtime

import (
	"fmt"
	"strings"

	"github.com/fulcrum-proxy/fulcrum/proxy"
)

// Histogram commands: the latency distributions (proxy/histogram.go).
var histogramCommands = []Command{
	{Words: []string{"show", "histogram"}, Level: LevelUser, Usage: "show histogram <px>[/<srv>] [<timing>]",
		Help: "show latency histograms of a proxy or server", Run: showHistogram},
}

// showHistogram prints an object's latency histograms since start, in µs,
// as two CSV tables: one line per timing kind (count, sum and the
// percentiles, 0 without values), then one line per non-empty bucket
// (timing, bounds [lo, hi), count). A bucket is at most 1/8 of its lower
// bound wide; percentiles are read at bucket middles (within 6.25%).
// fulcrumctl draws the buckets as bars (cli/histogram.go).
func showHistogram(c *Context, args []string) error {
	spec := arg(args, 0)
	if spec == "" {
		return reply("Require 'backend/server' or a frontend or backend name.")
	}
	var name string
	var t *proxy.Timings
	switch {
	case strings.Contains(spec, "/"):
		b, s, err := findServer(c.Proxy, spec)
		if err != nil {
			return err
		}
		name, t = b.Name+"/"+s.Name, &s.Counters.Timings
	case c.Proxy.Backend(spec) != nil:
		name, t = spec, &c.Proxy.Backend(spec).Counters.Timings
	case c.Proxy.Frontend(spec) != nil:
		name, t = spec, &c.Proxy.Frontend(spec).Counters.Timings
	default:
		return reply("No such backend.")
	}
	kinds := []int{proxy.TimingQueue, proxy.TimingConnect, proxy.TimingResponse, proxy.TimingTotal}
	if k := arg(args, 1); k != "" {
		kinds = nil
		for i, n := range proxy.TimingNames {
			if n == k {
				kinds = []int{i}
			}
		}
		if kinds == nil {
			return reply("Invalid timing '" + k + "': queue, connect, response or total.")
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# histogram %s: latency since start, us\n", name)
	b.WriteString("# timing,count,sum_us,p50_us,p90_us,p99_us,p999_us\n")
	for _, k := range kinds {
		s := t[k].Summary()
		fmt.Fprintf(&b, "%s,%d,%d,%d,%d,%d,%d\n", proxy.TimingNames[k], s.Count, s.SumUs, s.P50, s.P90, s.P99, s.P999)
	}
	b.WriteString("# timing,lo_us,hi_us,count\n")
	var counts [proxy.HistBuckets]uint64
	for _, k := range kinds {
		t[k].Counts(counts[:])
		for i, n := range counts {
			if n == 0 {
				continue
			}
			lo, hi := proxy.HistBucketBounds(i)
			fmt.Fprintf(&b, "%s,%d,%d,%d\n", proxy.TimingNames[k], lo, hi, n)
		}
	}
	c.Printf("%s", b.String())
	return nil
}

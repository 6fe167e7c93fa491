package runtime

import "runtime/metrics"

// schedTrackingPeriod is how many of a goroutine's runs the Go runtime lets
// pass for each one it records in /sched/latencies:seconds (gTrackingPeriod
// in runtime/runtime2.go, 8 since Go 1.17).
const schedTrackingPeriod = 8

// schedFigures returns the Go scheduler's cumulative figures for show
// activity, from runtime/metrics. runs estimates how many times a
// goroutine was put on a P after being runnable (every wake-up, new
// goroutine and preemption): the count of /sched/latencies:seconds times
// schedTrackingPeriod, since the runtime records one run in that many, so
// it moves in steps of schedTrackingPeriod. created is how many goroutines
// were started, threads how many OS threads the runtime has. Benchmarks
// divide the difference of two readings by the requests served between
// them (bench/syscalls.sh).
func schedFigures() (runs, created, threads uint64) {
	s := []metrics.Sample{
		{Name: "/sched/latencies:seconds"},
		{Name: "/sched/goroutines-created:goroutines"},
		{Name: "/sched/threads/total:threads"},
	}
	metrics.Read(s)
	if s[0].Value.Kind() == metrics.KindFloat64Histogram {
		for _, n := range s[0].Value.Float64Histogram().Counts {
			runs += n
		}
	}
	if s[1].Value.Kind() == metrics.KindUint64 {
		created = s[1].Value.Uint64()
	}
	if s[2].Value.Kind() == metrics.KindUint64 {
		threads = s[2].Value.Uint64()
	}
	return runs * schedTrackingPeriod, created, threads
}

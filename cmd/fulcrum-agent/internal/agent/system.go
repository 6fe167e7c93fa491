package agent

import (
	"context"
	"math"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"github.com/shirou/gopsutil/v4/cpu"
	"github.com/shirou/gopsutil/v4/load"
	"github.com/shirou/gopsutil/v4/mem"
)

// SystemSource reads the machine's load through gopsutil in the background,
// every sample_interval, so that Reading costs one lock. The CPU busy
// percentage is averaged over cpu_window from the cumulative CPU times at
// both ends of the window, so short spikes between samples count exactly.
type SystemSource struct {
	cfg   *Config
	log   zerolog.Logger
	procs procFinder

	mu  sync.RWMutex
	cur Reading

	// CPU times samples, oldest first, covering at most cpu_window. Owned by
	// the sampling goroutine.
	times []cpuSample

	// done is closed when the background sampling has ended (Done).
	done chan struct{}
}

// cpuSample is the cumulative CPU time of all CPUs at one moment.
type cpuSample struct{ total, busy float64 }

// NewSystemSource returns a source for the signals cfg enables. Call Start
// before the first Reading; until then it reads Unknown.
func NewSystemSource(cfg *Config, log zerolog.Logger) *SystemSource {
	return &SystemSource{
		cfg:   cfg,
		log:   log,
		procs: procFinder{name: cfg.Process.Name, service: cfg.Process.Service},
		cur:   Unknown,
		done:  make(chan struct{}),
	}
}

// Done is closed once the sampling Start began has ended after its
// context was done (at once if Start returned an error or never ran
// to the background part: then nothing samples). A sample under way when
// the context ends finishes first.
func (s *SystemSource) Done() <-chan struct{} { return s.done }

// Start takes a first sample, waits one sample_interval so the CPU
// percentage has a window, takes the second, then keeps sampling in the
// background until ctx is done. It returns once the first complete Reading
// is available, or ctx's error.
func (s *SystemSource) Start(ctx context.Context) error {
	iv := s.cfg.SampleInterval.D()
	s.sample(ctx)
	t := time.NewTimer(iv)
	select {
	case <-ctx.Done():
		t.Stop()
		close(s.done)
		return ctx.Err()
	case <-t.C:
	}
	s.sample(ctx)
	go func() {
		defer close(s.done)
		tk := time.NewTicker(iv)
		defer tk.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tk.C:
				s.sample(ctx)
			}
		}
	}()
	return nil
}

// Reading returns the last sample.
func (s *SystemSource) Reading() Reading {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.cur
}

// sample reads every enabled signal once and publishes the result. A signal
// that fails to read is NaN (logged at warn) until it reads again.
func (s *SystemSource) sample(ctx context.Context) {
	r := Unknown
	if s.cfg.CPU.Enabled {
		r.CPU = s.sampleCPU(ctx)
	}
	if s.cfg.Memory.Enabled {
		if vm, err := mem.VirtualMemoryWithContext(ctx); err != nil {
			s.log.Warn().Err(err).Msg("reading memory")
		} else {
			r.Memory = vm.UsedPercent
		}
	}
	if s.cfg.Load.Enabled {
		r.Load = s.sampleLoad(ctx)
	}
	if s.cfg.Process.Enabled {
		ok, err := s.procs.running(ctx)
		if err != nil {
			s.log.Warn().Err(err).Msg("looking for the required process")
		}
		r.ProcessRunning = ok
	}
	s.mu.Lock()
	s.cur = r
	s.mu.Unlock()
}

// sampleCPU reads the cumulative CPU times and returns addCPU's result.
func (s *SystemSource) sampleCPU(ctx context.Context) float64 {
	ts, err := cpu.TimesWithContext(ctx, false)
	if err != nil || len(ts) == 0 {
		s.log.Warn().Err(err).Msg("reading cpu times")
		return math.NaN()
	}
	t := ts[0]
	// Guest time is already counted in user time on Linux.
	total := t.User + t.System + t.Idle + t.Nice + t.Iowait + t.Irq + t.Softirq + t.Steal
	return s.addCPU(cpuSample{total: total, busy: total - t.Idle - t.Iowait})
}

// addCPU appends one sample to the window, drops those older than
// cpu_window, and returns the busy percentage between the oldest and the
// newest sample, or NaN with fewer than two samples.
func (s *SystemSource) addCPU(c cpuSample) float64 {
	s.times = append(s.times, c)
	// Keep window/interval+1 samples: the window spans the oldest to the newest.
	keep := int(s.cfg.CPUWindow.D()/s.cfg.SampleInterval.D()) + 1
	if len(s.times) > keep {
		s.times = append(s.times[:0], s.times[len(s.times)-keep:]...)
	}
	if len(s.times) < 2 {
		return math.NaN()
	}
	first, last := s.times[0], s.times[len(s.times)-1]
	dt := last.total - first.total
	if dt <= 0 {
		return 0
	}
	return math.Min(100, math.Max(0, (last.busy-first.busy)/dt*100))
}

// sampleLoad returns the 1-minute load average per logical CPU, in percent.
func (s *SystemSource) sampleLoad(ctx context.Context) float64 {
	avg, err := load.AvgWithContext(ctx)
	if err != nil {
		s.log.Warn().Err(err).Msg("reading load average")
		return math.NaN()
	}
	n, err := cpu.CountsWithContext(ctx, true)
	if err != nil || n < 1 {
		n = 1
	}
	return avg.Load1 / float64(n) * 100
}

var _ Source = (*SystemSource)(nil)

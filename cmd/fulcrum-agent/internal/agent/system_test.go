package agent

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/shirou/gopsutil/v4/process"
)

// TestSystemSource reads this machine through gopsutil: every enabled
// signal has a plausible value after Start, and the required process is
// found when it is this test binary and missing when it does not exist.
func TestSystemSource(t *testing.T) {
	self, err := process.NewProcess(int32(os.Getpid()))
	if err != nil {
		t.Fatal(err)
	}
	selfName, err := self.Name()
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name    string
		process string
		running bool
	}{
		{"own process", selfName, true},
		{"missing process", "no-such-process-" + filepath.Base(t.TempDir()), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := Default()
			cfg.SampleInterval = Duration(20 * time.Millisecond)
			cfg.CPUWindow = Duration(100 * time.Millisecond)
			cfg.Load.Enabled = true
			cfg.Process = Process{Enabled: true, Name: tt.process, Action: "down"}
			ctx, cancel := context.WithCancel(context.Background())
			s := NewSystemSource(&cfg, zerolog.New(zerolog.NewTestWriter(t)))
			defer func() { cancel(); <-s.Done() }() // a /proc scan may still run
			if r := s.Reading(); !math.IsNaN(r.CPU) {
				t.Errorf("before Start: cpu %v, want NaN", r.CPU)
			}
			if err := s.Start(ctx); err != nil {
				t.Fatal(err)
			}
			r := s.Reading()
			if !(r.CPU >= 0 && r.CPU <= 100) {
				t.Errorf("cpu: got %v, want 0..100", r.CPU)
			}
			if !(r.Memory > 0 && r.Memory <= 100) {
				t.Errorf("memory: got %v, want (0, 100]", r.Memory)
			}
			if runtime.GOOS != "windows" && !(r.Load >= 0) {
				t.Errorf("load: got %v, want >= 0", r.Load)
			}
			if r.ProcessRunning != tt.running {
				t.Errorf("process %q running: got %v, want %v", tt.process, r.ProcessRunning, tt.running)
			}
			// The second lookup goes through the remembered PID.
			if ok, err := s.procs.running(ctx); ok != tt.running || err != nil {
				t.Errorf("second lookup: got %v, %v, want %v", ok, err, tt.running)
			}
		})
	}
}

func TestSystemSourceStartCancelled(t *testing.T) {
	cfg := Default()
	cfg.SampleInterval = Duration(time.Hour)
	cfg.CPUWindow = Duration(time.Hour)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := NewSystemSource(&cfg, zerolog.Nop()).Start(ctx); err == nil {
		t.Error("Start with a cancelled context: got nil, want an error")
	}
}

// TestCPUWindow feeds cumulative CPU times (total, busy) one interval apart:
// the percentage is over the last cpu_window/sample_interval intervals only.
func TestCPUWindow(t *testing.T) {
	cfg := Default()
	cfg.SampleInterval = Duration(time.Second)
	cfg.CPUWindow = Duration(2 * time.Second)
	s := NewSystemSource(&cfg, zerolog.Nop())
	steps := []struct {
		c    cpuSample
		want float64
	}{
		{cpuSample{0, 0}, math.NaN()},
		{cpuSample{100, 100}, 100}, // 100 busy of 100
		{cpuSample{200, 150}, 75},  // 150 of 200
		{cpuSample{300, 160}, 30},  // the first sample left: 60 of 200
		{cpuSample{400, 160}, 5},   // 10 of 200
		{cpuSample{400, 160}, 0},   // idle since: 0 of 100
		{cpuSample{400, 160}, 0},   // clock did not move at all
	}
	for i, st := range steps {
		got := s.addCPU(st.c)
		if !(got == st.want || math.IsNaN(got) && math.IsNaN(st.want)) {
			t.Errorf("sample %d: got %v, want %v", i, got, st.want)
		}
	}
}

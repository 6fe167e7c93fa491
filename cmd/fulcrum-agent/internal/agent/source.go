package agent

import (
	"math"
	"sync"
)

// Reading is the machine's load at one moment. Percentages are 0..100 (Load
// may exceed 100: it is the load average per logical CPU). NaN means the
// signal could not be read; it then costs nothing and crosses no threshold.
type Reading struct {
	CPU    float64 // busy percentage of all CPUs over the CPU window
	Memory float64 // used percentage of physical memory
	Load   float64 // 1-minute load average per logical CPU, in percent
	// ProcessRunning reports whether the required process or service runs;
	// meaningful only when [process] is enabled.
	ProcessRunning bool
}

// Unknown is a Reading where nothing could be read yet.
var Unknown = Reading{CPU: math.NaN(), Memory: math.NaN(), Load: math.NaN()}

// Source gives the current Reading. Reading is called once per agent
// connection and must not block: sources that need time to measure do it in
// the background and return their last result.
type Source interface {
	Reading() Reading
}

// ManualSource is a Source whose Reading is set by hand: tests drive the
// agent through ready, drain and ready with it. It is safe for concurrent
// use; the zero value reads as all zero with the process missing.
type ManualSource struct {
	mu sync.Mutex
	r  Reading
}

// NewManualSource returns a ManualSource reading r.
func NewManualSource(r Reading) *ManualSource { return &ManualSource{r: r} }

// Set replaces the reading returned from now on.
func (m *ManualSource) Set(r Reading) {
	m.mu.Lock()
	m.r = r
	m.mu.Unlock()
}

// Reading returns the last value given to Set.
func (m *ManualSource) Reading() Reading {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.r
}

var _ Source = (*ManualSource)(nil)

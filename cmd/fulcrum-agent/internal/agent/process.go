package agent

import (
	"context"
	"errors"
	"runtime"
	"strings"

	"github.com/shirou/gopsutil/v4/process"
)

// procFinder answers "is the required process (and service) running?" for
// the sampler. It remembers the PID it found last, so a steady state costs
// one lookup of that PID per sample instead of a scan of every process.
// Owned by the sampling goroutine.
type procFinder struct {
	name    string // executable name, "" if only a service is required
	service string // Windows service name, "" if none
	pid     int32  // last PID seen running name, 0 if none
	svc     serviceHandle
}

// running reports whether the process and the service (those configured)
// are both running.
func (f *procFinder) running(ctx context.Context) (bool, error) {
	if f.service != "" {
		ok, err := f.svc.running(f.service)
		if err != nil || !ok {
			return false, err
		}
	}
	if f.name == "" {
		return true, nil
	}
	if f.pid != 0 {
		if p, err := process.NewProcessWithContext(ctx, f.pid); err == nil {
			if n, err := p.NameWithContext(ctx); err == nil && sameProcessName(n, f.name) {
				return true, nil
			}
		}
		f.pid = 0
	}
	procs, err := process.ProcessesWithContext(ctx)
	if err != nil {
		return false, err
	}
	for _, p := range procs {
		// Processes may exit during the scan; their errors are not ours.
		if n, err := p.NameWithContext(ctx); err == nil && sameProcessName(n, f.name) {
			f.pid = p.Pid
			return true, nil
		}
	}
	return false, nil
}

// sameProcessName compares executable names the way the platform does:
// exactly on Linux, ignoring case and a ".exe" suffix on Windows and macOS.
func sameProcessName(got, want string) bool {
	if runtime.GOOS == "linux" {
		return got == want
	}
	trim := func(s string) string {
		s = strings.ToLower(s)
		return strings.TrimSuffix(s, ".exe")
	}
	return trim(got) == trim(want)
}

// errNoServices is returned when a service check is asked for on a system
// without Windows services; config validation prevents it.
var errNoServices = errors.New("service checks need Windows")

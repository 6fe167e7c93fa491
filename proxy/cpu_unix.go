//go:build unix

package proxy

import (
	"syscall"
	"time"
)

// processCPU returns the CPU time the process has used (user + system),
// -1 when unknown.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return -1
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

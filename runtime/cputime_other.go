//go:build !linux

package runtime

import "time"

// threadCPU is not available here: commands are charged their wall time
// (budget.go).
func threadCPU() (d time.Duration, ok bool) { return 0, false }

//go:build !unix

package proxy

import "time"

// processCPU is unknown outside Unix.
func processCPU() time.Duration { return -1 }

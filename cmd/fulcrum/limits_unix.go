//go:build unix

package main

import "syscall"

// raiseNoFile raises the soft RLIMIT_NOFILE to the hard one and returns
// the soft limit now, and the one found when it was raised (else 0). Go's
// runtime already raises it at start on Linux (Go 1.19); this does it
// wherever it did not, and reads the result. A hard limit too large for
// an int counts as the largest int.
func raiseNoFile() (cur, raisedFrom int) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, 0
	}
	if lim.Cur < lim.Max {
		from := lim.Cur
		lim.Cur = lim.Max
		if syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim) == nil {
			raisedFrom = clampInt(uint64(from))
		} else if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim) != nil {
			return 0, 0
		}
	}
	return clampInt(uint64(lim.Cur)), raisedFrom
}

// noFile returns the soft RLIMIT_NOFILE, 0 if unknown (show info's Ulimit-n).
func noFile() int {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0
	}
	return clampInt(uint64(lim.Cur))
}

func clampInt(v uint64) int {
	const maxInt = int(^uint(0) >> 1)
	if v > uint64(maxInt) {
		return maxInt
	}
	return int(v)
}

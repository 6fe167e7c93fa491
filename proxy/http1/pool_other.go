//go:build !unix

package http1

import "syscall"

// socketIdle cannot peek here: a stale connection is found by its failure.
func socketIdle(syscall.RawConn) bool { return true }

// peekIdle cannot peek here.
func peekIdle(uintptr) bool { return true }

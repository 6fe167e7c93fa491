//go:build !unix

package main

// raiseNoFile: no RLIMIT_NOFILE here; nothing is sized.
func raiseNoFile() (cur, raisedFrom int) { return 0, 0 }

// noFile: unknown.
func noFile() int { return 0 }

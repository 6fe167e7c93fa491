//go:build !unix

package proxy

// derivedMaxConn is unknown outside Unix.
func derivedMaxConn() int { return 0 }

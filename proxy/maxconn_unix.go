//go:build unix

package proxy

import "syscall"

// derivedMaxConn is the process's connection limit when no maxconn is
// configured, as HAProxy derives it from the file descriptor limit: half
// of RLIMIT_NOFILE (a connection takes a client and a server socket) less
// a few descriptors for listeners, logs and checks. 0 when unknown.
func derivedMaxConn() int {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil || rl.Cur < 64 {
		return 0
	}
	return int((min(rl.Cur, 1<<31) - 28) / 2)
}

// Package testutil holds small helpers shared by the tests of several
// packages. It is internal: nothing outside the module's tests uses it.
package testutil

import (
	"strings"
	"sync"
)

// SyncBuffer collects text written from several goroutines (a logger, a
// child process's stdout and stderr) and is read while they write.
type SyncBuffer struct {
	mu  sync.Mutex
	buf strings.Builder
}

// Write appends p. It never fails.
func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns everything written so far.
func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

//go:build race

package netio

// raceEnabled: the race detector is on (sync.Pool then drops some of
// what is put back, so pooled paths allocate).
const raceEnabled = true

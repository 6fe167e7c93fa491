// Package cli is fulcrumctl's side of the Runtime API: a thin client of the
// socket protocol (send a line, read the reply up to the closing empty line
// or the end of the connection). The interactive shell and table rendering
// build on it.
package cli

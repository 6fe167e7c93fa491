// Package cli is fulcrumctl's side of the Runtime API: a thin client of the
// socket protocol (send a line, read the reply up to the closing empty line
// or the end of the connection). The interactive shell and table rendering
// build on it.
//
// A Session is one prompt-mode connection. A Client runs command lines on
// its Members, one Session each: one unnamed member for a single socket,
// or a fleet of named instances (-s repeated, a fleet file: ParseFleet),
// which get every command at once. The one code path prints both: a
// fleet's replies are merged (one table with an instance column) or
// prefixed with each instance's name, and exit codes keep their meaning,
// the highest of the members' winning. Drain, Ready, Watch and Shell work
// on a Client, so on a fleet as on one socket.
package cli

package haproxycfg

import "fmt"

// Kind says why a line of the HAProxy file was not converted as written.
type Kind int

// The kinds of notes, from the most to the least serious.
const (
	// NotYet: fulcrum does not run it yet; the feature is being built
	// (tcp-request content rules).
	NotYet Kind = iota + 1
	// Unsupported: fulcrum does not run it.
	Unsupported
	// Differs: converted, but fulcrum behaves differently in a detail.
	Differs
	// Builtin: fulcrum does it without a setting (access log, splicing).
	Builtin
	// Ignored: no effect in fulcrum, or HAProxy itself ignores the line
	// where it is (daemon, user, a frontend keyword in a backend).
	Ignored
)

// String returns the kind as notes print it.
func (k Kind) String() string {
	switch k {
	case NotYet:
		return "not supported yet"
	case Unsupported:
		return "not supported"
	case Differs:
		return "converted, differs"
	case Builtin:
		return "built in"
	case Ignored:
		return "ignored"
	}
	return "note"
}

// Blocking reports whether a note of this kind is something the HAProxy
// file asks for and fulcrum would not do: `fulcrum check` of an
// haproxy.cfg fails on these.
func (k Kind) Blocking() bool { return k == NotYet || k == Unsupported }

// Note is one line of the HAProxy file that was not converted as written.
type Note struct {
	Line    int    // 1-based line in the HAProxy file
	Keyword string // the keyword of the line: "bind", "option httpchk", "server"
	Kind    Kind
	Why     string // what was not converted and why
}

// String returns the note as `LINE: KEYWORD: KIND: WHY`; a caller
// prefixes the file name, as fulcrum check's FILE:LINE: message.
func (n Note) String() string {
	return fmt.Sprintf("%d: %s: %s: %s", n.Line, n.Keyword, n.Kind, n.Why)
}

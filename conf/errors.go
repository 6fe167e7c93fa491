package conf

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Error is one problem found in a configuration file: where it is and what is
// wrong. Msg names the key path, the problem and the value, in the form
// `backend "web": server "s2": weight: must be 0..256, got 300`.
type Error struct {
	File string // the file name as given to Load or Parse
	Line int    // 1-based; 0 when the problem has no line (the file cannot be read)
	Msg  string
}

// Error returns the problem as `FILE:LINE: msg`, or `FILE: msg` without a line.
func (e Error) Error() string {
	file := e.File
	if file == "" {
		file = "config"
	}
	if e.Line <= 0 {
		return file + ": " + e.Msg
	}
	return fmt.Sprintf("%s:%d: %s", file, e.Line, e.Msg)
}

// Warning returns e as a warning line: `FILE:LINE: warning: msg`.
func (e Error) Warning() string {
	w := e
	w.Msg = "warning: " + e.Msg
	return w.Error()
}

// Errors is every problem found in one configuration, in file order. Load and
// Parse return it (as *Errors) whenever they fail, so a caller can print each
// problem on its own line or look at them one by one.
type Errors struct {
	List []Error
}

// Error returns one `FILE:LINE: msg` line per problem, joined by newlines.
func (e *Errors) Error() string {
	lines := make([]string, len(e.List))
	for i, err := range e.List {
		lines[i] = err.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap returns the problems one by one, for errors.As and errors.Is.
func (e *Errors) Unwrap() []error {
	errs := make([]error, len(e.List))
	for i, err := range e.List {
		errs[i] = err
	}
	return errs
}

// sort puts the problems in file order. The sort is stable so that problems
// on one line keep the order in which they were found.
func (e *Errors) sort() {
	slices.SortStableFunc(e.List, func(a, b Error) int {
		return cmp.Or(cmp.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line))
	})
}

package lb

import (
	"fmt"
	"sort"
	"strings"
)

// Entry describes one balance algorithm. New is nil for an HAProxy algorithm
// that fulcrum accepts in the schema but does not implement yet.
type Entry struct {
	Name    string           // the keyword after `balance`
	New     func() Algorithm // constructor; nil = not supported yet
	Dynamic bool             // runtime weight changes apply (HAProxy's "dynamic")
	Doc     string           // one line for `fulcrum check` and the docs
}

// registry lists every algorithm name fulcrum knows, one line each.
var registry = []Entry{
	{Name: "roundrobin", New: NewRoundRobin, Dynamic: true, Doc: "smooth weighted round-robin"},
	{Name: "static-rr", Doc: "weighted round-robin, weights fixed at start"},
	{Name: "leastconn", Doc: "fewest current sessions relative to weight"},
	{Name: "first", Doc: "lowest id with a free slot"},
	{Name: "source", Doc: "hash of the client address"},
	{Name: "uri", Doc: "hash of the URI"},
	{Name: "url_param", Doc: "hash of a URL parameter"},
	{Name: "hdr", Doc: "hash of a request header"},
	{Name: "hash", Doc: "hash of a sample expression"},
	{Name: "random", Doc: "power of N random choices"},
}

// Lookup returns the registry entry for the algorithm named by a balance
// expression ("uri len 8", "hdr(Host)", "random(2)": the name is the first
// word, before any parenthesis). ok is false when the name is unknown; the
// error then lists the valid names.
func Lookup(expr string) (e Entry, err error) {
	name := strings.TrimSpace(expr)
	if i := strings.IndexAny(name, " \t("); i >= 0 {
		name = name[:i]
	}
	for _, e := range registry {
		if e.Name == name {
			return e, nil
		}
	}
	return Entry{}, fmt.Errorf("unknown balance algorithm %q, expected one of: %s", name, strings.Join(Names(), ", "))
}

// Names returns every known algorithm name, sorted.
func Names() []string {
	names := make([]string, 0, len(registry))
	for _, e := range registry {
		names = append(names, e.Name)
	}
	sort.Strings(names)
	return names
}

package lb

// The registry: every balance algorithm fulcrum knows, one line each, and
// the parser of HAProxy's "balance <algorithm> [<arguments>]" that reads it.
// Configuration validation (conf), `fulcrum check`, the backend and the
// docs all go through Parse and Names; no other list of names exists.

import (
	"errors"
	"fmt"
	"github.com/fulcrum-proxy/fulcrum/internal/suggest"
	"slices"
	"strconv"
	"strings"
)

// Dynamism says whether an algorithm applies runtime weight changes
// (HAProxy's "dynamic" and "static" algorithms).
type Dynamism uint8

// The kinds of Dynamism.
const (
	// Static algorithms ignore weight changes while a server is up: the
	// Runtime API may only set 0% or 100% of the initial weight, and
	// slowstart does not ramp the weight.
	Static Dynamism = iota
	// Dynamic algorithms apply a weight change to the next pick.
	Dynamic
	// ByHashType is static with hash_type "map-based" (the default) and
	// dynamic with "consistent".
	ByHashType
)

// Paren says whether an algorithm takes a "(ARG)" after its name.
type Paren uint8

// The kinds of Paren.
const (
	NoParen       Paren = iota // "roundrobin"
	OptionalParen              // "random" or "random(3)"
	RequiredParen              // "hdr(Host)"
)

// Entry describes one balance algorithm: one line of the registry.
type Entry struct {
	Name    string   // the keyword after `balance`
	Syntax  string   // the full form, for messages and docs
	Paren   Paren    // whether "(ARG)" follows the name
	Dynamic Dynamism // whether runtime weight changes apply
	Doc     string   // one line for `fulcrum check` and the docs
	// NotYet marks an algorithm HAProxy has and fulcrum does not run yet:
	// its Parse checks the arguments, then reports ErrNotSupported.
	NotYet bool
	// Parse checks the arguments (the "(ARG)" and the words after the
	// name) and returns the algorithm's builder. The generic checks of the
	// parenthesis are done before. nil means HAProxy has the algorithm but
	// fulcrum does not run it yet: Parse then reports ErrNotSupported.
	Parse func(a Args) (Balance, error)
}

// Args are the arguments of a balance expression: "hdr(Host)
// use_domain_only" has Paren "Host" and Words ["use_domain_only"].
type Args struct {
	Paren    string
	HasParen bool
	Words    []string
}

// registry lists every algorithm, HAProxy 2.6's and fulcrum's, one line
// each; its order is the docs' order. Adding an algorithm is one file and
// one line here.
var registry = []Entry{
	{Name: "roundrobin", Syntax: "roundrobin", Dynamic: Dynamic, Parse: parseRoundRobin,
		Doc: "smooth weighted round-robin; exact per cycle of sum(weights) picks"},
	{Name: "static-rr", Syntax: "static-rr", Dynamic: Static, Parse: parseStaticRR,
		Doc: "the same order as roundrobin from a precomputed map; weights fixed at start"},
	{Name: "leastconn", Syntax: "leastconn", Dynamic: Dynamic, Parse: parseLeastConn,
		Doc: "fewest sessions relative to weight, round-robin among equals"},
	{Name: "first", Syntax: "first", Dynamic: Dynamic, Parse: parseFirst,
		Doc: "lowest id with a free slot below maxconn; ignores weights"},
	{Name: "source", Syntax: "source", Dynamic: ByHashType, Parse: parseSource,
		Doc: "hash of the client address"},
	{Name: "uri", Syntax: "uri [len N] [depth N] [whole] [path-only]", Dynamic: ByHashType, Parse: parseURI,
		Doc: "hash of the URI path (or the whole URI)"},
	{Name: "url_param", Syntax: "url_param NAME", Dynamic: ByHashType, Parse: parseURLParam,
		Doc: "hash of a query-string parameter"},
	{Name: "hdr", Syntax: "hdr(NAME) [use_domain_only]", Paren: RequiredParen, Dynamic: ByHashType, Parse: parseHdr,
		Doc: "hash of a request header"},
	{Name: "random", Syntax: "random[(N)]", Paren: OptionalParen, Dynamic: Dynamic, Parse: parseRandom,
		Doc: "N random draws on the consistent ring, the least loaded wins (default N = 2)"},
	{Name: "rdp-cookie", Syntax: "rdp-cookie[(NAME)]", Paren: OptionalParen, Dynamic: ByHashType, Parse: parseRDPCookie, NotYet: true,
		Doc: "hash of an RDP cookie"},
	{Name: "hash", Syntax: "hash EXPR", Dynamic: ByHashType, Parse: parseHashExpr,
		Doc: "hash of a sample expression"},
}

// ErrNotSupported marks a balance expression that is valid in HAProxy but
// that fulcrum does not run yet. Configuration checks report it as "not
// supported yet" rather than as a mistake.
var ErrNotSupported = errors.New("not supported yet")

// Balance is a checked balance expression: what a backend builds its
// algorithm from.
type Balance struct {
	Entry *Entry // the algorithm
	Expr  string // the expression as written
	// HTTP reports that the algorithm reads the HTTP request, so that it
	// cannot run in a tcp backend.
	HTTP bool
	// build makes the algorithm for one backend.
	build func(c Config) Algorithm
}

// New builds the algorithm for one backend.
func (b Balance) New(c Config) Algorithm { return b.build(c) }

// IsDynamic reports whether runtime weight changes apply with hash type h.
func (b Balance) IsDynamic(h HashType) bool {
	switch b.Entry.Dynamic {
	case Dynamic:
		return true
	case ByHashType:
		return h.Consistent
	}
	return false
}

// Parse checks a balance expression ("roundrobin", "uri len 8",
// "hdr(Host) use_domain_only", "random(3)", "hash req.cook(SRV)"). An
// unknown name fails with the sorted list of valid names; an argument
// problem quotes the expression. An expression HAProxy accepts but fulcrum
// does not run yet fails with an error wrapping ErrNotSupported.
func Parse(expr string) (Balance, error) {
	fields := strings.Fields(expr)
	if len(fields) == 0 {
		return Balance{}, fmt.Errorf("needs an algorithm, one of %s", choices())
	}
	name, a := fields[0], Args{Words: fields[1:]}
	closed := true
	if open := strings.IndexByte(name, '('); open >= 0 {
		closed = strings.HasSuffix(name, ")")
		a.HasParen = true
		if closed {
			a.Paren = name[open+1 : len(name)-1]
		}
		name = name[:open]
	}
	e := lookup(name)
	if e == nil {
		hint := ""
		if near := suggest.Nearest(name, Names()); near != "" {
			hint = fmt.Sprintf(" (did you mean %q?)", near)
		}
		return Balance{}, fmt.Errorf("unknown algorithm %q%s, must be one of %s", name, hint, choices())
	}
	problem := ""
	switch {
	case !closed:
		problem = "unclosed parenthesis"
	case a.HasParen && e.Paren == NoParen:
		problem = name + " takes no (argument)"
	case !a.HasParen && e.Paren == RequiredParen:
		problem = name + " needs an argument: " + e.Syntax
	case a.HasParen && a.Paren == "":
		problem = "empty (argument)"
	case e.Parse == nil:
		return Balance{}, fmt.Errorf("%w, got %q", ErrNotSupported, expr)
	}
	if problem != "" {
		return Balance{}, fmt.Errorf("%s, got %q", problem, expr)
	}
	b, err := e.Parse(a)
	if err != nil {
		return Balance{}, fmt.Errorf("%w, got %q", err, expr)
	}
	b.Entry, b.Expr = e, expr
	return b, nil
}

// lookup returns the entry called name, or nil.
func lookup(name string) *Entry {
	for i := range registry {
		if registry[i].Name == name {
			return &registry[i]
		}
	}
	return nil
}

// Names returns every known algorithm name, sorted.
func Names() []string {
	names := make([]string, 0, len(registry))
	for _, e := range registry {
		names = append(names, e.Name)
	}
	slices.Sort(names)
	return names
}

// choices lists the algorithms for an error message: those fulcrum runs,
// sorted, then those it does not run yet ("first, hash, ..., url_param
// (rdp-cookie: not supported yet)").
func choices() string {
	var run, notYet []string
	for _, e := range registry {
		if e.NotYet {
			notYet = append(notYet, e.Name)
		} else {
			run = append(run, e.Name)
		}
	}
	slices.Sort(run)
	out := strings.Join(run, ", ")
	if len(notYet) > 0 {
		slices.Sort(notYet)
		out += " (" + strings.Join(notYet, ", ") + ": not supported yet)"
	}
	return out
}

// Entries returns a copy of the registry, in the docs' order.
func Entries() []Entry { return slices.Clone(registry) }

// noArgs is the argument check of algorithms that take none.
func noArgs(name string, a Args) error {
	if len(a.Words) > 0 {
		return errors.New(name + " takes no arguments")
	}
	return nil
}

// positiveInt parses an integer of at least 1.
func positiveInt(s string) (int, bool) {
	n, err := strconv.Atoi(s)
	return n, err == nil && n >= 1
}

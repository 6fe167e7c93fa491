package acl

// Pattern sets: HAProxy's pattern references (pat_ref), the lists that the
// Runtime API shows and changes with show/get/add/del/clear acl.
//
// Every ACL expression owns one Set for the patterns written inline (even
// when it has none), and reads one more Set per -f file. A file loaded by
// several ACLs is one Set, shared. A Set keeps its entries as written, in
// order, and feeds one index per (method, -i) that reads it: a change to
// the Set rebuilds (IP: patches) each index and publishes it with an
// atomic store, so the next request sees it and no request ever locks.

import (
	"bufio"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"
)

// Entry is one pattern of a Set. ID is unique in the Registry and stable
// for the entry's life: the Runtime API prints it as HAProxy prints the
// entry's address ("0x%x") and `del acl SET #ID` names it.
type Entry struct {
	ID      uint64
	Pattern string
}

// index is the compiled form of one Set for one expression's method.
type index struct {
	m     method
	icase bool
	op    []string // integer operator of each inline entry, by position
	cur   atomic.Pointer[patterns]
}

// Set is a pattern reference: an ACL expression's inline patterns, or a
// file's. Its methods are safe for concurrent use.
type Set struct {
	id   int
	file string // as written after -f, "" for inline patterns
	desc string

	reg     *Registry
	mu      sync.Mutex // serialises writers; readers use index.cur
	entries []Entry
	users   []*index
}

// ID returns the set's number in `show acl` (used as "#ID").
func (s *Set) ID() int { return s.id }

// File returns the file the patterns came from as written after -f, or ""
// for an expression's inline patterns.
func (s *Set) File() string { return s.file }

// Description returns HAProxy's description of the set in `show acl`:
// "pattern loaded from file './blocked.acl' used by acl at file
// 'fulcrum.toml' line 22." or "acl 'src' file 'fulcrum.toml' line 22.".
func (s *Set) Description() string { return s.desc }

// Len returns the number of entries.
func (s *Set) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.entries)
}

// Entries returns a copy of the entries, in the order they were added.
func (s *Set) Entries() []Entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.entries)
}

// Add appends pattern. It is checked against every expression reading the
// set first: an invalid pattern changes nothing and the error is HAProxy's
// message ("'x' is not a valid IPv4 or IPv6 address."). The next request
// evaluated sees the new pattern.
func (s *Set) Add(pattern string) (Entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ix := range s.users {
		if _, err := compilePattern(ix.m, ix.icase, pattern, ""); err != nil {
			return Entry{}, err
		}
	}
	e := Entry{ID: s.reg.nextID.Add(1), Pattern: pattern}
	s.entries = append(s.entries, e)
	for _, ix := range s.users {
		ix.op = append(ix.op, "")
		old := ix.cur.Load()
		if ix.m == mIP {
			c, _ := compilePattern(mIP, false, pattern, "")
			next := *old
			next.ips = old.ips.with(c.ip)
			ix.cur.Store(&next)
			continue
		}
		ix.cur.Store(buildPatterns(ix.m, ix.icase, s.texts(ix)))
	}
	return e, nil
}

// Del removes every entry whose pattern is pattern, as HAProxy's
// `del acl SET PATTERN`; it returns false (HAProxy: "Key not found.")
// when there was none.
func (s *Set) Del(pattern string) bool {
	return s.delete(func(e Entry) bool { return e.Pattern == pattern })
}

// DelID removes the entry with the given ID (`del acl SET #ID`).
func (s *Set) DelID(id uint64) bool {
	return s.delete(func(e Entry) bool { return e.ID == id })
}

func (s *Set) delete(drop func(Entry) bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	var gone []string
	keep := s.entries[:0:0]
	for i, e := range s.entries {
		if drop(e) {
			gone = append(gone, e.Pattern)
			for _, ix := range s.users {
				ix.op[i] = "\x00" // marked, compacted below
			}
			continue
		}
		keep = append(keep, e)
	}
	if len(gone) == 0 {
		return false
	}
	s.entries = keep
	for _, ix := range s.users {
		ix.op = slices.DeleteFunc(ix.op, func(o string) bool { return o == "\x00" })
		if ix.m != mIP {
			ix.cur.Store(buildPatterns(ix.m, ix.icase, s.texts(ix)))
			continue
		}
		// Remove the networks that no remaining entry still holds.
		next := *ix.cur.Load()
		for _, g := range gone {
			c, err := compilePattern(mIP, false, g, "")
			if err != nil || s.holds(c.ip) {
				continue
			}
			next.ips = next.ips.without(c.ip)
		}
		ix.cur.Store(&next)
	}
	return true
}

// holds reports whether an entry of s parses to the network p.
func (s *Set) holds(p netip.Prefix) bool {
	for _, e := range s.entries {
		if c, err := compilePattern(mIP, false, e.Pattern, ""); err == nil && c.ip == p {
			return true
		}
	}
	return false
}

// Clear removes every entry (`clear acl`).
func (s *Set) Clear() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.entries = nil
	for _, ix := range s.users {
		ix.op = nil
		ix.cur.Store(buildPatterns(ix.m, ix.icase, nil))
	}
}

// Lookup matches value against the set as the first expression reading it
// does (`get acl`): it returns the matching entry's pattern and true, or
// false. It is the slow path, for operators, not requests.
func (s *Set) Lookup(value string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.users) == 0 {
		return "", false
	}
	ix := s.users[0]
	smp := sample{t: typeStr, s: []byte(value)}
	for i, e := range s.entries {
		p := buildPatterns(ix.m, ix.icase, []patternText{{e.Pattern, ix.op[i]}})
		if p.match(smp) {
			return e.Pattern, true
		}
	}
	return "", false
}

// MatchKind returns the type HAProxy prints in `get acl` ("ip", "str",
// "beg", ...) and whether matching ignores case.
func (s *Set) MatchKind() (kind string, icase bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.users) == 0 {
		return "str", false
	}
	return s.users[0].m.String(), s.users[0].icase
}

// texts returns the entries with their operators for ix; s.mu is held.
func (s *Set) texts(ix *index) []patternText {
	out := make([]patternText, len(s.entries))
	for i, e := range s.entries {
		out[i] = patternText{e.Pattern, ix.op[i]}
	}
	return out
}

// attach makes ix read s, compiling the current entries. ops gives the
// operator of each entry (nil: none). Called at load only.
func (s *Set) attach(ix *index, ops []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ix.op = make([]string, len(s.entries))
	copy(ix.op, ops)
	ix.cur.Store(buildPatterns(ix.m, ix.icase, s.texts(ix)))
	s.users = append(s.users, ix)
}

// Registry numbers the Sets of one configuration as HAProxy's `show acl`
// does, in the order they are created, from 0. It is safe for concurrent
// use once loading is over.
type Registry struct {
	file    string // the configuration file, for descriptions
	baseDir string // relative -f paths are read from here
	nextID  atomic.Uint64

	mu     sync.Mutex
	sets   []*Set
	byFile map[string]*Set

	userlists map[string]*Userlist // by name (SetUserlists)
	tables    map[string]bool      // stick table names (SetTables); nil: any
}

// NewRegistry returns an empty registry for the configuration in file;
// relative -f paths are read from file's directory.
func NewRegistry(file string) *Registry {
	return &Registry{file: file, baseDir: filepath.Dir(file), byFile: map[string]*Set{}}
}

// Sets returns every set in id order.
func (r *Registry) Sets() []*Set {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.sets)
}

// Lookup finds a set by "#ID" or by its file name as written in the
// configuration, as the Runtime API names ACLs; nil if there is none
// (HAProxy: "Unknown ACL identifier. Please use #<id> or <file>.").
func (r *Registry) Lookup(name string) *Set {
	r.mu.Lock()
	defer r.mu.Unlock()
	if rest, ok := strings.CutPrefix(name, "#"); ok {
		id, err := strconv.Atoi(rest)
		if err != nil || id < 0 || id >= len(r.sets) {
			return nil
		}
		return r.sets[id]
	}
	return r.byFile[name]
}

// newSet registers a set; called at load only.
func (r *Registry) newSet(file, desc string) *Set {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := &Set{id: len(r.sets), file: file, desc: desc, reg: r}
	r.sets = append(r.sets, s)
	if file != "" {
		r.byFile[file] = s
	}
	return s
}

// fileSet returns the set of a -f file, loading it the first time. Lines
// are trimmed; empty lines and lines starting with '#' are skipped. Every
// line is checked with validate, and the first bad one is reported with
// its line number.
func (r *Registry) fileSet(file string, line int, validate func(string) error) (*Set, error) {
	r.mu.Lock()
	s := r.byFile[file]
	r.mu.Unlock()
	if s != nil {
		for _, e := range s.Entries() {
			if err := validate(e.Pattern); err != nil {
				return nil, fmt.Errorf("file '%s': %v", file, err)
			}
		}
		return s, nil
	}
	path := file
	if !filepath.IsAbs(path) {
		path = filepath.Join(r.baseDir, path)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("failed to open pattern file '%s': %v", file, unwrapPathErr(err))
	}
	defer f.Close()
	var entries []Entry
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		t := strings.TrimSpace(sc.Text())
		if t == "" || t[0] == '#' {
			continue
		}
		if err := validate(t); err != nil {
			return nil, fmt.Errorf("file '%s' line %d: %v", file, n, err)
		}
		entries = append(entries, Entry{ID: r.nextID.Add(1), Pattern: t})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("failed to read pattern file '%s': %v", file, err)
	}
	s = r.newSet(file, fmt.Sprintf("pattern loaded from file '%s' used by acl at file '%s' line %d.", file, r.file, line))
	s.entries = entries
	return s, nil
}

func unwrapPathErr(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}

// bstr views b as a string without copying, for lookups that do not keep
// the string.
func bstr(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

package tlsx

// The certificate store: every certificate and crt-list the binds of one
// configuration use, by name, and the Runtime API's changes to them
// (HAProxy's ckch store and crt-lists, src/ssl_ckch.c and
// src/ssl_crtlist.c).
//
// Invariants: mu guards every map and the transaction; a Cert and an
// Entry are never changed once stored (a change stores a new one); after
// each change the binds using what changed get a new SNI table before the
// lock is released, so the next handshake sees the change and handshakes
// already past their lookup keep what they had. There is at most one
// transaction (`set ssl cert` not yet committed or aborted), as in
// HAProxy.

import (
	"bytes"
	"crypto/rand"
	"crypto/tls"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
)

// Store holds the certificates and crt-lists of a configuration's binds.
type Store struct {
	mu    sync.Mutex
	certs map[string]*Cert
	lists map[string]*CrtList
	binds []*Bind

	// Runtime changes, which a reload keeps while the file on disk is
	// the one they replaced (diskAt: its digest then, nil when there was
	// no file: a `new ssl cert`).
	changed     map[string][]byte // certificates
	listChanged map[string][]byte // crt-lists
	created     map[string]bool   // certificates made by `new ssl cert`

	txn    *Cert // the certificate being prepared by `set ssl cert`, nil if none
	txnErr error // why txn cannot be committed (no key, key mismatch), nil if it can

	tickets [][32]byte // session ticket keys, shared by every bind (and kept by reloads)
	loader  *Loader    // for the ca-files of crt-list lines added at runtime
}

// NewStore returns the store of what l loaded. prev, if non-nil, is the
// store of the configuration a reload replaces: its runtime changes are
// kept where the files they replaced did not change on disk (a changed
// file wins), certificates created at runtime are kept, and so are the
// session ticket keys and the ongoing transaction.
func NewStore(l *Loader, prev *Store) *Store {
	s := &Store{certs: maps.Clone(l.Certs()), lists: map[string]*CrtList{}, loader: l,
		changed: map[string][]byte{}, listChanged: map[string][]byte{}, created: map[string]bool{}}
	for n, cl := range l.Lists() {
		s.lists[n] = cl
	}
	if prev == nil {
		var k [32]byte
		rand.Read(k[:])
		s.tickets = [][32]byte{k}
		return s
	}
	prev.mu.Lock()
	defer prev.mu.Unlock()
	s.tickets = prev.tickets
	for name, disk := range prev.changed {
		cur, inConf := s.certs[name]
		switch {
		case inConf && !bytes.Equal(cur.Disk, disk):
			continue // the file changed: it wins
		case !inConf && !prev.created[name]:
			continue // no longer configured
		}
		s.certs[name] = prev.certs[name]
		s.changed[name] = disk
		s.created[name] = prev.created[name]
	}
	for name := range prev.created {
		if _, ok := s.certs[name]; !ok {
			s.certs[name], s.created[name] = prev.certs[name], true
		}
	}
	for name, disk := range prev.listChanged {
		cur, ok := s.lists[name]
		if !ok || !bytes.Equal(cur.Disk, disk) {
			continue
		}
		s.lists[name] = prev.lists[name]
		s.listChanged[name] = disk
		for _, e := range prev.lists[name].Entries {
			if _, ok := s.certs[e.Cert]; !ok {
				s.certs[e.Cert] = prev.certs[e.Cert]
			}
		}
	}
	if prev.txn != nil {
		if _, ok := s.certs[prev.txn.Name]; ok {
			s.txn, s.txnErr = prev.txn, prev.txnErr
		}
	}
	return s
}

// NewBind returns the runtime side of a bind whose certificates the
// store holds.
func (s *Store) NewBind(bc *BindConfig) *Bind {
	b := &Bind{store: s, cfg: bc}
	b.base = &tls.Config{GetConfigForClient: b.configFor}
	b.noCert = &tls.Config{}
	bc.Settings.apply(b.base)
	b.http1(b.base)
	b.base.SetSessionTicketKeys(s.tickets)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.binds = append(s.binds, b)
	b.build()
	return b
}

// uses rebuilds the binds whose sources include a list or certificate
// for which affected returns true, and returns how many crt-list lines
// (over all binds) name cert. The lock is held.
func (s *Store) rebuild(affected func(src Source) bool, cert string) int {
	n := 0
	for _, b := range s.binds {
		hit := false
		for _, src := range b.cfg.Sources {
			if affected(src) {
				hit = true
				break
			}
		}
		if hit {
			n += b.build()[cert]
		}
	}
	return n
}

// usesCert returns whether src names cert, directly or through a list.
func (s *Store) usesCert(src Source, cert string) bool {
	if src.Cert == cert {
		return true
	}
	if l := s.lists[src.List]; l != nil {
		for _, e := range l.Entries {
			if e.Cert == cert {
				return true
			}
		}
	}
	return false
}

// used reports whether a bind serves cert. The lock is held.
func (s *Store) used(cert string) bool {
	for _, b := range s.binds {
		for _, src := range b.cfg.Sources {
			if s.usesCert(src, cert) {
				return true
			}
		}
	}
	return false
}

// CertInfo is a certificate as `show ssl cert NAME` shows it.
type CertInfo struct {
	Cert   *Cert
	Txn    bool   // the transaction's uncommitted certificate (name shown with '*')
	Status string // "Empty", "Unused" or "Used"
}

// CertNames returns the names of the certificates, sorted, and the name
// of the transaction's certificate ("" when none): `show ssl cert`.
func (s *Store) CertNames() (names []string, txn string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	names = slices.Sorted(maps.Keys(s.certs))
	if s.txn != nil {
		txn = s.txn.Name
	}
	return names, txn
}

// Certs returns every certificate that is not empty, sorted by name:
// the expiry gauges.
func (s *Store) Certs() []*Cert {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*Cert
	for _, n := range slices.Sorted(maps.Keys(s.certs)) {
		if c := s.certs[n]; !c.Empty() {
			out = append(out, c)
		}
	}
	return out
}

// CertInfo returns the certificate named name; "*NAME" is the
// transaction's. ok is false when there is none.
func (s *Store) CertInfo(name string) (CertInfo, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ci CertInfo
	if t, ok := strings.CutPrefix(name, "*"); ok {
		if s.txn == nil || s.txn.Name != t {
			return ci, false
		}
		ci = CertInfo{Cert: s.txn, Txn: true}
	} else {
		c, ok := s.certs[name]
		if !ok {
			return ci, false
		}
		ci.Cert = c
	}
	switch {
	case ci.Cert.Empty():
		ci.Status = "Empty"
	case !ci.Txn && s.used(ci.Cert.Name):
		ci.Status = "Used"
	default:
		ci.Status = "Unused"
	}
	return ci, true
}

// TxnError is a refused certificate operation, with HAProxy's text.
type TxnError struct{ Msg string }

func (e *TxnError) Error() string { return e.Msg }

func txnErrorf(format string, args ...any) error { return &TxnError{Msg: fmt.Sprintf(format, args...)} }

// SetCert parses payload as the new content of the certificate named
// name and keeps it in the transaction, which it creates (created true)
// or updates. Nothing is served from it before Commit.
func (s *Store) SetCert(name string, payload []byte) (created bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.txn != nil && s.txn.Name != name {
		// HAProxy 2.6 updates the other file's transaction here (a bug,
		// fixed upstream with this message).
		return false, txnErrorf("The ongoing transaction is about '%s' but you are trying to set '%s'\n", s.txn.Name, name)
	}
	if _, ok := s.certs[name]; !ok {
		return false, txnErrorf("Can't replace a certificate which is not referenced by the configuration!\n")
	}
	// A payload without a certificate is refused now; one without a key,
	// or whose key does not match, at the commit (HAProxy's order).
	c, keyErr, perr := parseBundle(name, payload)
	if perr != nil {
		return false, txnErrorf("unable to load certificate from file '%s'.\nCan't load the payload\n", name)
	}
	created = s.txn == nil
	s.txn, s.txnErr = c, keyErr
	return created, nil
}

// Commit makes the transaction's certificate the one served under its
// name: the binds using it get it for their next handshakes, connections
// already established keep theirs. It returns how many crt-list lines
// (instances) now serve it.
func (s *Store) Commit(name string) (instances int, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.txn == nil:
		return 0, txnErrorf("No ongoing transaction! !\n")
	case s.txn.Name != name:
		return 0, txnErrorf("The ongoing transaction is about '%s' but you are trying to set '%s'\n", s.txn.Name, name)
	}
	switch s.txnErr {
	case ErrNoKey:
		return 0, txnErrorf("The transaction must contain at least a certificate and a private key!\n")
	case ErrKeyMismatch:
		return 0, txnErrorf("inconsistencies between private key and certificate loaded '%s'.\n", name)
	}
	c := s.txn
	s.txn = nil
	if _, ok := s.changed[name]; !ok {
		s.changed[name] = s.certs[name].Disk
	}
	s.certs[name] = c
	return s.rebuild(func(src Source) bool { return s.usesCert(src, name) }, name), nil
}

// Abort drops the transaction.
func (s *Store) Abort(name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.txn == nil:
		return txnErrorf("No ongoing transaction!\n")
	case s.txn.Name != name:
		return txnErrorf("The ongoing transaction is about '%s' but you are trying to abort a transaction for '%s'\n", s.txn.Name, name)
	}
	s.txn = nil
	return nil
}

// NewCert creates an empty certificate named name, for `set ssl cert`
// then `add ssl crt-list`.
func (s *Store) NewCert(name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.certs[name]; ok {
		return txnErrorf("Certificate '%s' already exists!\n", name)
	}
	s.certs[name] = &Cert{Name: name}
	s.created[name] = true
	s.changed[name] = nil
	return nil
}

// DelCert deletes a certificate no bind uses.
func (s *Store) DelCert(name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.certs[name]; !ok {
		return txnErrorf("certificate '%s' doesn't exist!\n", name)
	}
	if s.used(name) || s.inList(name) || (s.txn != nil && s.txn.Name == name) {
		return txnErrorf("certificate '%s' in use, can't be deleted!\n", name)
	}
	delete(s.certs, name)
	delete(s.changed, name)
	delete(s.created, name)
	return nil
}

// inList reports whether a crt-list names cert. The lock is held.
func (s *Store) inList(cert string) bool {
	for _, l := range s.lists {
		for _, e := range l.Entries {
			if e.Cert == cert {
				return true
			}
		}
	}
	return false
}

// ListNames returns the names of the crt-lists and `crt` directories,
// sorted: `show ssl crt-list`.
func (s *Store) ListNames() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Sorted(maps.Keys(s.lists))
}

// List returns the crt-list named name (a directory's name may end with
// '/'); ok is false when there is none. The entries must not be changed.
func (s *Store) List(name string) (*CrtList, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	l, ok := s.lists[s.listName(name)]
	return l, ok
}

// listName maps a directory written with its trailing '/' to its name.
func (s *Store) listName(name string) string {
	if _, ok := s.lists[name]; !ok && len(name) > 1 {
		return strings.TrimRight(name, "/")
	}
	return name
}

// ParseLine parses a crt-list line given at runtime (`add ssl
// crt-list`); a ca-file is read relative to the configuration's directory.
func (s *Store) ParseLine(line string) (*Entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, _, err := ParseCrtLine(line, s.loader.LoadCA)
	return e, err
}

// AddEntry appends a line to a crt-list (`add ssl crt-list`): the binds
// using the list serve its certificate from their next handshake. It
// returns how many binds got it. Errors carry HAProxy's text, without a
// final line feed.
func (s *Store) AddEntry(list string, e *Entry) (binds int, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	l, ok := s.lists[s.listName(list)]
	if !ok {
		return 0, txnErrorf("crt-list '%s' does not exist!", strings.TrimRight(list, "/"))
	}
	if l.Dir && !strings.HasPrefix(e.Cert, l.Name+"/") {
		return 0, txnErrorf("'%s' is a directory, certificate path '%s' must contain the directory path", l.Name, e.Cert)
	}
	c, ok := s.certs[e.Cert]
	switch {
	case !ok:
		return 0, txnErrorf("certificate '%s' does not exist!", e.Cert)
	case c.Empty():
		return 0, txnErrorf("certificate '%s' is empty!", e.Cert)
	case l.Dir && (e.Opts != nil || len(e.Filters) > 0):
		return 0, txnErrorf("this is a directory, SSL configuration and filters are not allowed")
	}
	if l.Dir {
		for _, x := range l.Entries {
			if x.Cert == e.Cert {
				return 0, txnErrorf("file already exists in this directory!")
			}
		}
	}
	for _, b := range s.binds {
		if err := b.checkEntry(l.Name, e); err != nil {
			return 0, txnErrorf("%s", err)
		}
	}
	ne := *e
	ne.Line = l.Lines + 1
	nl := s.setEntries(l, append(slices.Clip(l.Entries), &ne))
	nl.Lines++
	for _, b := range s.binds {
		if b.sourcesList(l.Name) {
			binds++
		}
	}
	return binds, nil
}

// DelEntry deletes the line of list naming cert (at line, when line > 0).
// A bind's default certificate cannot be deleted (unless the bind has
// strict-sni). Errors carry HAProxy's text, without a final line feed.
func (s *Store) DelEntry(list, cert string, line int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	name := strings.TrimRight(list, "/")
	l, ok := s.lists[s.listName(list)]
	if !ok {
		return txnErrorf("crt-list '%s' does not exist!", name)
	}
	c, ok := s.certs[cert]
	switch {
	case !ok:
		return txnErrorf("certificate '%s' does not exist!", cert)
	case c.Empty():
		return txnErrorf("certificate '%s' is empty!", cert)
	}
	var idx []int
	var lines []string
	for i, e := range l.Entries {
		if e.Cert == cert {
			idx = append(idx, i)
			lines = append(lines, fmt.Sprint(e.Line))
		}
	}
	at := -1
	switch {
	case len(idx) == 0:
		return txnErrorf("certificate '%s' can't be found in crt-list '%s'!", cert, name)
	case line > 0:
		for _, i := range idx {
			if l.Entries[i].Line == line {
				at = i
			}
		}
		if at < 0 {
			return txnErrorf("found a certificate '%s' but the line number is incorrect, please specify a correct line number preceded by colons (%s)!", cert, strings.Join(lines, ", "))
		}
	case len(idx) > 1:
		return txnErrorf("found the certificate '%s' in several entries, please specify a line number preceded by colons (%s)!", cert, strings.Join(lines, ", "))
	default:
		at = idx[0]
	}
	var users []string
	for _, b := range s.binds {
		if d := b.table.Load().def; d != nil && d.entry == l.Entries[at] && !b.cfg.StrictSNI {
			users = append(users, "\t- "+b.cfg.Where+"\n")
		}
	}
	if len(users) > 0 {
		return txnErrorf("certificate '%s' cannot be deleted, it is used as default certificate by the following frontends:\n%s", cert, strings.Join(users, ""))
	}
	s.setEntries(l, slices.Delete(slices.Clone(l.Entries), at, at+1))
	return nil
}

// setEntries replaces l by a copy with entries, records the change and
// rebuilds the binds using l. It returns the copy. The lock is held.
func (s *Store) setEntries(l *CrtList, entries []*Entry) *CrtList {
	nl := *l
	nl.Entries = entries
	s.lists[l.Name] = &nl
	if _, ok := s.listChanged[l.Name]; !ok {
		s.listChanged[l.Name] = l.Disk
	}
	s.rebuild(func(src Source) bool { return src.List == l.Name }, "")
	return &nl
}

// sourcesList reports whether b loads list.
func (b *Bind) sourcesList(list string) bool {
	for _, src := range b.cfg.Sources {
		if src.List == list {
			return true
		}
	}
	return false
}

// checkEntry checks that a line added to list works with b's settings
// (when b loads list): verify needs a ca-file.
func (b *Bind) checkEntry(list string, e *Entry) error {
	if e.Opts == nil || !b.sourcesList(list) {
		return nil
	}
	st := b.cfg.Settings.Over(e.Opts)
	return st.Check()
}

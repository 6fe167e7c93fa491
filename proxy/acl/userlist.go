package acl

// User lists: HAProxy's `userlist` sections (configuration.txt 3.4), read
// by the http_auth and http_auth_group fetches and answered by the
// http_request auth action.

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/GehirnInc/crypt"
	_ "github.com/GehirnInc/crypt/md5_crypt"    // $1$
	_ "github.com/GehirnInc/crypt/sha256_crypt" // $5$
	_ "github.com/GehirnInc/crypt/sha512_crypt" // $6$
	"golang.org/x/crypto/bcrypt"
)

// Userlist is one user list: users with their password (in clear, or a
// crypt(3) hash) and the groups they belong to. It is built at load and
// never changes after; Check may be called from any goroutine.
type Userlist struct {
	Name  string
	users map[string]*listUser

	// verified remembers the credentials a hash accepted, so that a client
	// sending the same Authorization on every request costs one hash, not
	// one per request (HAProxy pays crypt(3) each time). Keyed by a
	// SHA-256 of user and password; bounded (cleared when full).
	mu       sync.Mutex
	verified map[[32]byte]struct{}
}

// listUser is one user of a Userlist.
type listUser struct {
	pass   string
	hashed bool
	groups [][]byte
}

// verifiedMax bounds a Userlist's cache of accepted credentials.
const verifiedMax = 1024

// NewUserlist returns an empty user list named name.
func NewUserlist(name string) *Userlist {
	return &Userlist{Name: name, users: map[string]*listUser{}, verified: map[[32]byte]struct{}{}}
}

// AddUser adds a user with its password: hashed is HAProxy's `password`
// (a crypt(3) hash: $1$ MD5, $5$ SHA-256, $6$ SHA-512 or $2a$/$2b$/$2y$
// bcrypt), otherwise `insecure-password` (the password itself). It fails
// on a hash of another kind (DES, yescrypt: crypt(3) formats this build
// cannot check) and on a second user of the same name.
func (u *Userlist) AddUser(name, pass string, hashed bool) error {
	if _, dup := u.users[name]; dup {
		return fmt.Errorf("duplicate user %q", name)
	}
	if hashed {
		if err := checkHashFormat(pass); err != nil {
			return err
		}
	}
	u.users[name] = &listUser{pass: pass, hashed: hashed}
	return nil
}

// AddToGroup puts user into group (a user may be in several groups, and
// be named by a `group ... users` line and by its own `groups`). It fails
// when the user does not exist.
func (u *Userlist) AddToGroup(user, group string) error {
	lu := u.users[user]
	if lu == nil {
		return fmt.Errorf("no such user %q", user)
	}
	if !slices.ContainsFunc(lu.groups, func(g []byte) bool { return string(g) == group }) {
		lu.groups = append(lu.groups, []byte(group))
	}
	return nil
}

// checkHashFormat accepts the crypt(3) hash formats Check can verify.
func checkHashFormat(h string) error {
	switch {
	case strings.HasPrefix(h, "$2a$"), strings.HasPrefix(h, "$2b$"), strings.HasPrefix(h, "$2y$"):
		if _, err := bcrypt.Cost([]byte(h)); err != nil {
			return fmt.Errorf("invalid bcrypt password hash: %v", err)
		}
		return nil
	case strings.HasPrefix(h, "$1$"), strings.HasPrefix(h, "$5$"), strings.HasPrefix(h, "$6$"):
		if strings.Count(h, "$") < 3 || strings.HasSuffix(h, "$") {
			return fmt.Errorf("invalid password hash %q: expected $ID$SALT$HASH", h)
		}
		return nil
	}
	kind := "DES or unknown"
	if strings.HasPrefix(h, "$y$") || strings.HasPrefix(h, "$7$") {
		kind = "yescrypt/scrypt"
	}
	return fmt.Errorf("unsupported password hash (%s): use $6$ (SHA-512, mkpasswd -m sha-512), $5$, $1$ or bcrypt $2y$, or insecure-password", kind)
}

// Check reports whether user and pass are those of a user of the list.
func (u *Userlist) Check(user, pass []byte) bool {
	lu := u.users[string(user)]
	if lu == nil {
		return false
	}
	if !lu.hashed {
		return subtle.ConstantTimeCompare([]byte(lu.pass), pass) == 1
	}
	h := sha256.New()
	h.Write(user)
	h.Write([]byte{0})
	h.Write(pass)
	var key [32]byte
	h.Sum(key[:0])
	u.mu.Lock()
	_, ok := u.verified[key]
	u.mu.Unlock()
	if ok {
		return true
	}
	if !verifyHash(lu.pass, pass) {
		return false
	}
	u.mu.Lock()
	if len(u.verified) >= verifiedMax {
		clear(u.verified)
	}
	u.verified[key] = struct{}{}
	u.mu.Unlock()
	return true
}

// verifyHash checks pass against a crypt(3) hash accepted by
// checkHashFormat.
func verifyHash(hash string, pass []byte) bool {
	if strings.HasPrefix(hash, "$2") {
		return bcrypt.CompareHashAndPassword([]byte(hash), pass) == nil
	}
	if !crypt.IsHashSupported(hash) {
		return false
	}
	return crypt.NewFromHash(hash).Verify(hash, pass) == nil
}

// groups returns the groups of user.
func (u *Userlist) groups(user []byte) [][]byte {
	if lu := u.users[string(user)]; lu != nil {
		return lu.groups
	}
	return nil
}

// authorization returns the scheme and the credentials of the request's
// field name ("authorization" for Authorization), as HAProxy's
// get_http_auth reads them: the first line of that name, the scheme up to
// its first space (none, or one that starts the value: no sample), then
// the credentials after the spaces that follow.
func authorization(r *Request, name []byte) (scheme, cred []byte, ok bool) {
	v := r.headers(false)
	n := v.count()
	for i := 0; i < n; i++ {
		hn, value, live := v.at(i)
		if !live || !bytes.EqualFold(hn, name) {
			continue
		}
		value = trimSpace(value)
		scheme, cred, ok = bytes.Cut(value, []byte(" "))
		if !ok || len(scheme) == 0 {
			return nil, nil, false
		}
		return scheme, trimSpace(cred), true
	}
	return nil, nil, false
}

var (
	authField    = []byte("authorization")
	schemeBasic  = []byte("Basic")
	schemeBearer = []byte("Bearer")
)

// basicAuth returns the user and password of the request's Authorization
// field when it uses the Basic scheme (RFC 7617): the base64 credentials,
// the user up to the first ':'.
func basicAuth(r *Request) (user, pass []byte, ok bool) {
	scheme, cred, ok := authorization(r, authField)
	if !ok || !bytes.EqualFold(scheme, schemeBasic) {
		return nil, nil, false
	}
	dec := make([]byte, base64.StdEncoding.DecodedLen(len(cred)))
	m, err := base64.StdEncoding.Decode(dec, cred)
	if err != nil {
		return nil, nil, false
	}
	return bytes.Cut(dec[:m], []byte(":"))
}

// fetchAuthInfo is http_auth_type ("Basic" or "Bearer"), http_auth_user
// and http_auth_pass (Basic only): what the client sent, unchecked.
func fetchAuthInfo(r *Request, f *fetch, it *iter) (sample, bool) {
	if scheme, _, ok := authorization(r, authField); ok && bytes.EqualFold(scheme, schemeBearer) {
		if f.def.id == fAuthType {
			return once(it, sample{t: typeStr, s: schemeBearer})
		}
		return sample{}, false
	}
	user, pass, ok := basicAuth(r)
	if !ok {
		return sample{}, false
	}
	switch f.def.id {
	case fAuthUser:
		return once(it, sample{t: typeStr, s: user})
	case fAuthPass:
		return once(it, sample{t: typeStr, s: pass})
	}
	return once(it, sample{t: typeStr, s: schemeBasic})
}

// fetchAuthBearer is http_auth_bearer([<header>]): the token of a Bearer
// Authorization field (or of the field named by the argument), unchecked.
func fetchAuthBearer(r *Request, f *fetch, it *iter) (sample, bool) {
	name := authField
	if len(f.name) > 0 {
		name = f.name
	}
	scheme, cred, ok := authorization(r, name)
	if !ok || !bytes.EqualFold(scheme, schemeBearer) || len(cred) == 0 {
		return sample{}, false
	}
	return once(it, sample{t: typeStr, s: cred})
}

// fetchHTTPAuth is http_auth(<userlist>): true when the request's Basic
// credentials are those of a user of the list.
func fetchHTTPAuth(r *Request, f *fetch, it *iter) (sample, bool) {
	user, pass, ok := basicAuth(r)
	return once(it, sample{t: typeBool, n: b2i(ok && f.ul.Check(user, pass))})
}

// fetchHTTPAuthGroup is http_auth_group(<userlist>): the user name when
// the credentials are valid. In an ACL (f.groups) it returns the user's
// groups one by one instead, so that the patterns (group names) match
// when the user is in at least one of them, as HAProxy's ACL form.
func fetchHTTPAuthGroup(r *Request, f *fetch, it *iter) (sample, bool) {
	if it.n == 0 {
		user, pass, ok := basicAuth(r)
		if !ok || !f.ul.Check(user, pass) {
			return sample{}, false
		}
		if !f.groups {
			return once(it, sample{t: typeStr, s: user})
		}
		it.groups = f.ul.groups(user)
	}
	if !f.groups || it.n >= len(it.groups) {
		return sample{}, false
	}
	it.n++
	return sample{t: typeStr, s: it.groups[it.n-1]}, true
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// parseFetch is the package's parseFetch, with the user list of
// http_auth and http_auth_group looked up in the registry.
func (sc *Scope) parseFetch(def *fetchDef, text, args string, hasArgs bool) (*fetch, error) {
	f, err := parseFetch(def, text, args, hasArgs)
	if err == nil && def.id == fSrcTable {
		// src_*([table]): the section's own table by default, as
		// HAProxy's; a name the configuration has no table of is refused.
		if len(f.name) == 0 {
			f.name = []byte(sc.proxy)
		}
		if sc.reg.tables != nil && !sc.reg.tables[string(f.name)] {
			return nil, fmt.Errorf("fetch '%s': no stick table named '%s'", def.name, f.name)
		}
	}
	if err != nil || (def.id != fHTTPAuth && def.id != fAuthGroup) {
		return f, err
	}
	if f.ul = sc.reg.userlists[string(f.name)]; f.ul == nil {
		return nil, fmt.Errorf("fetch '%s': no such userlist '%s'", def.name, f.name)
	}
	return f, nil
}

// SetUserlists gives the registry the configuration's user lists, by
// name, before rules that use them are compiled.
func (reg *Registry) SetUserlists(lists map[string]*Userlist) { reg.userlists = lists }

// SetTables gives the registry the names of the configuration's stick
// tables, before rules whose src_* fetches name one are compiled; nil
// (the default) accepts any name.
func (reg *Registry) SetTables(names map[string]bool) { reg.tables = names }

package lb

// Sample expression hashing ("balance hash EXPR"), HAProxy's "hash".
//
// Algorithm: the hash function of hash_type over the sample that EXPR
// fetches from the request; a request without the sample falls back to
// round-robin. The hash selects a server as hashing.go describes: static
// with map-based, dynamic with consistent. Cost per pick: the fetch,
// O(length of the sample), and the lookup.
//
// Until the sample-fetch engine of proxy/acl exists, EXPR is one fetch of
// the table below, optionally followed by the converter ",lower"; anything
// else is rejected by `fulcrum check` with the list of what is supported.
// Only "src" works in a tcp backend.

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// fetch is one sample fetch that "hash" can hash.
type fetch struct {
	names []string // the keyword and its aliases
	arg   bool     // takes "(NAME)"
	http  bool     // reads the HTTP request
	// get returns the sample of r, in up to three pieces that are hashed
	// one after the other (so that "url" needs no concatenation); ok is
	// false when it is absent. nil for "src", hashed as a binary address.
	get func(r *Request, arg string) (sample [3]string, ok bool)
}

// fetches are the supported sample fetches, HAProxy's names.
var fetches = []fetch{
	{names: []string{"src"}},
	{names: []string{"method"}, http: true, get: func(r *Request, _ string) ([3]string, bool) {
		return [3]string{r.Method}, r.Method != ""
	}},
	{names: []string{"path"}, http: true, get: func(r *Request, _ string) ([3]string, bool) {
		return [3]string{r.Path}, r.Path != ""
	}},
	{names: []string{"query"}, http: true, get: func(r *Request, _ string) ([3]string, bool) {
		return [3]string{r.Query}, r.Query != ""
	}},
	{names: []string{"url"}, http: true, get: func(r *Request, _ string) ([3]string, bool) {
		if r.Query == "" {
			return [3]string{r.Path}, r.Path != ""
		}
		return [3]string{r.Path, "?", r.Query}, true
	}},
	{names: []string{"base"}, http: true, get: func(r *Request, _ string) ([3]string, bool) {
		return [3]string{r.Host, r.Path}, r.Host != "" || r.Path != ""
	}},
	{names: []string{"req.hdr", "hdr", "req.fhdr"}, arg: true, http: true, get: func(r *Request, name string) ([3]string, bool) {
		if r.Headers == nil {
			return [3]string{}, false
		}
		v, ok := r.Headers.Header(name)
		return [3]string{v}, ok && v != ""
	}},
	{names: []string{"url_param", "urlp"}, arg: true, http: true, get: func(r *Request, name string) ([3]string, bool) {
		v, ok := queryParam(r.Query, name)
		return [3]string{v}, ok && v != ""
	}},
	{names: []string{"req.cook", "cook"}, arg: true, http: true, get: func(r *Request, name string) ([3]string, bool) {
		if r.Headers == nil {
			return [3]string{}, false
		}
		c, ok := r.Headers.Header("cookie")
		if !ok {
			return [3]string{}, false
		}
		v, ok := cookieValue(c, name)
		return [3]string{v}, ok && v != ""
	}},
}

// fetchNames lists the supported fetches for messages.
func fetchNames() string {
	var names []string
	for _, f := range fetches {
		n := f.names[0]
		if f.arg {
			n += "(NAME)"
		}
		names = append(names, n)
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

// parseHashExpr checks "hash EXPR".
func parseHashExpr(a Args) (Balance, error) {
	switch len(a.Words) {
	case 0:
		return Balance{}, errors.New(`hash needs a sample expression, e.g. "hash req.cook(SRV)"`)
	case 1:
	default:
		return Balance{}, errors.New("hash takes one sample expression, without spaces")
	}
	parts := strings.Split(a.Words[0], ",")
	name, arg, hasArg := parts[0], "", false
	if open := strings.IndexByte(name, '('); open >= 0 {
		if !strings.HasSuffix(name, ")") {
			return Balance{}, errors.New("hash: unclosed parenthesis")
		}
		name, arg, hasArg = name[:open], name[open+1:len(name)-1], true
	}
	var f *fetch
	for i := range fetches {
		if slices.Contains(fetches[i].names, name) {
			f = &fetches[i]
		}
	}
	switch {
	case f == nil:
		return Balance{}, fmt.Errorf("hash: unknown or unsupported sample fetch %q, supported: %s", name, fetchNames())
	case f.arg && (!hasArg || arg == ""):
		return Balance{}, fmt.Errorf("hash: %s needs an argument: %s(NAME)", name, name)
	case !f.arg && hasArg:
		return Balance{}, fmt.Errorf("hash: %s takes no argument", name)
	}
	lower := false
	for _, conv := range parts[1:] {
		if conv != "lower" {
			return Balance{}, fmt.Errorf(`hash: unknown or unsupported converter %q, supported: lower`, conv)
		}
		lower = true
	}
	isSrc := name == "src"
	key := func(r *Request, t HashType) (uint32, bool) {
		if r == nil {
			return 0, false
		}
		h := newHasher(t)
		if isSrc {
			if !r.Src.IsValid() {
				return 0, false
			}
			writeAddr(&h, r.Src.Addr().Unmap())
			return h.sum(), true
		}
		sample, ok := f.get(r, arg)
		if !ok {
			return 0, false
		}
		for _, piece := range sample {
			if lower {
				h.writeLower(piece)
			} else {
				h.writeString(piece)
			}
		}
		return h.sum(), true
	}
	return Balance{HTTP: f.http, build: func(c Config) Algorithm { return newHashing(c, key) }}, nil
}

// cookieValue returns the value of cookie name in a Cookie header
// ("a=1; b=2").
func cookieValue(header, name string) (string, bool) {
	for header != "" {
		var c string
		c, header, _ = strings.Cut(header, ";")
		c = strings.TrimSpace(c)
		if k, v, ok := strings.Cut(c, "="); ok && k == name {
			return v, true
		}
	}
	return "", false
}

package lb

// URI hashing ("balance uri [len N] [depth N] [whole] [path-only]"),
// HAProxy's get_server_uh. HTTP mode only.
//
// Algorithm: the hash function of hash_type over the URI's path (the part
// before '?'), or the whole URI with "whole"; "len N" hashes at most the
// first N characters, "depth N" stops before the (N+1)th '/', whichever
// comes first; "path-only" starts at the first '/' of the path, skipping
// the scheme and authority of an absolute URI. The key is always present.
// The hash selects a server as hashing.go describes: static with
// map-based, dynamic with consistent. Cost per pick: O(length of the URI)
// plus the lookup.

import (
	"errors"
	"strconv"
	"strings"
)

// uriKey is the key of one "balance uri".
type uriKey struct {
	len, depth      int // 0 = no limit
	whole, pathOnly bool
}

// parseURI checks "uri [len N] [depth N] [whole] [path-only]".
func parseURI(a Args) (Balance, error) {
	k, err := parseURIKey(a.Words)
	if err != nil {
		return Balance{}, err
	}
	return Balance{HTTP: true, build: func(c Config) Algorithm { return newHashing(c, k.hash) }}, nil
}

// parseURIKey parses the words after "uri".
func parseURIKey(w []string) (uriKey, error) {
	var k uriKey
	for i := 0; i < len(w); i++ {
		switch w[i] {
		case "whole":
			k.whole = true
		case "path-only":
			k.pathOnly = true
		case "len", "depth":
			n, ok := 0, false
			if i+1 < len(w) {
				n, ok = positiveInt(w[i+1])
			}
			if !ok {
				return k, errors.New("uri " + w[i] + " needs a number of at least 1")
			}
			if w[i] == "len" {
				k.len = n
			} else {
				k.depth = n
			}
			i++
		default:
			return k, errors.New("uri takes len N, depth N, whole and path-only, not " + strconv.Quote(w[i]))
		}
	}
	return k, nil
}

// hash hashes the URI of r. The URI is the path, then '?' and the query
// when the request had one and "whole" is set.
func (k uriKey) hash(r *Request, t HashType) (uint32, bool) {
	if r == nil {
		return 0, false
	}
	path := r.Path
	if k.pathOnly && !strings.HasPrefix(path, "/") {
		// An absolute URI: skip "scheme://authority".
		if i := strings.Index(path, "://"); i >= 0 {
			rest := path[i+3:]
			if j := strings.IndexByte(rest, '/'); j >= 0 {
				path = rest[j:]
			} else {
				path = ""
			}
		}
	}
	h := newHasher(t)
	if k.len == 0 && k.depth == 0 { // nothing to count: the pieces whole
		h.writeString(path)
		if k.whole && r.Query != "" {
			h.writeByte('?')
			h.writeString(r.Query)
		}
		return h.sum(), true
	}
	left := k.len
	if left == 0 {
		left = -1
	}
	slashes := 0
	feed := func(s string) bool { // false once len or depth stops the key
		for i := 0; i < len(s); i++ {
			if left == 0 {
				return false
			}
			if s[i] == '/' {
				if slashes++; k.depth > 0 && slashes == k.depth+1 {
					return false
				}
			}
			h.writeByte(s[i])
			left--
		}
		return true
	}
	if feed(path) && k.whole && r.Query != "" && feed("?") {
		feed(r.Query)
	}
	return h.sum(), true
}

package lb

// URL parameter hashing ("balance url_param NAME"), HAProxy's
// get_server_ph. HTTP mode only.
//
// Algorithm: the hash function of hash_type over the value of the first
// NAME=value pair of the query string. A request without the parameter, or
// with an empty value, falls back to round-robin. The hash selects a server
// as hashing.go describes: static with map-based, dynamic with consistent.
// Cost per pick: O(length of the query) plus the lookup.
//
// HAProxy's "check_post" (look in a POST body too) is not supported: the
// request view carries no body, as bodies stream.

import (
	"errors"
	"fmt"
	"strings"
)

// parseURLParam checks "url_param NAME [check_post]".
func parseURLParam(a Args) (Balance, error) {
	switch {
	case len(a.Words) == 0:
		return Balance{}, errors.New("url_param needs a parameter name")
	case len(a.Words) == 2 && a.Words[1] == "check_post":
		return Balance{}, fmt.Errorf("url_param check_post: %w", ErrNotSupported)
	case len(a.Words) > 1:
		return Balance{}, errors.New("url_param takes a name and optionally check_post")
	}
	name := a.Words[0]
	key := func(r *Request, t HashType) (uint32, bool) {
		if r == nil {
			return 0, false
		}
		v, ok := queryParam(r.Query, name)
		if !ok || v == "" {
			return 0, false
		}
		h := newHasher(t)
		h.writeString(v)
		return h.sum(), true
	}
	return Balance{HTTP: true, build: func(c Config) Algorithm { return newHashing(c, key) }}, nil
}

// queryParam returns the value of the first name=value pair of query, as
// it is written (not unescaped).
func queryParam(query, name string) (string, bool) {
	for query != "" {
		var pair string
		pair, query, _ = strings.Cut(query, "&")
		if k, v, ok := strings.Cut(pair, "="); ok && k == name {
			return v, true
		}
	}
	return "", false
}

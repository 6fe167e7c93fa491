package lb

// Header hashing ("balance hdr(NAME) [use_domain_only]"), HAProxy's
// get_server_hh. HTTP mode only.
//
// Algorithm: the hash function of hash_type over the value of the first
// header NAME (case-insensitive). A request without the header, or with an
// empty one, falls back to round-robin. With "use_domain_only" only the
// main domain part is hashed: the label before the last dot, "1wt" of
// "haproxy.1wt.eu" (meant for Host). The hash selects a server as
// hashing.go describes: static with map-based, dynamic with consistent.
// Cost per pick: the header lookup, O(length of the value), and the lookup.

import (
	"errors"
	"strings"
)

// parseHdr checks "hdr(NAME) [use_domain_only]".
func parseHdr(a Args) (Balance, error) {
	domainOnly := false
	switch {
	case len(a.Words) == 1 && a.Words[0] == "use_domain_only":
		domainOnly = true
	case len(a.Words) > 0:
		return Balance{}, errors.New(`only "use_domain_only" may follow`)
	}
	name := a.Paren
	isHost := strings.EqualFold(name, "host")
	key := func(r *Request, t HashType) (uint32, bool) {
		if r == nil {
			return 0, false
		}
		v, ok := r.Host, r.Host != ""
		if !isHost || !ok {
			if r.Headers == nil {
				return 0, false
			}
			v, ok = r.Headers.Header(name)
		}
		if !ok || v == "" {
			return 0, false
		}
		if domainOnly {
			v = mainDomain(v)
		}
		h := newHasher(t)
		h.writeString(v)
		return h.sum(), true
	}
	return Balance{HTTP: true, build: func(c Config) Algorithm { return newHashing(c, key) }}, nil
}

// mainDomain returns the label before the last dot of host ("1wt" of
// "haproxy.1wt.eu", "example" of "example.com"), or host when it has no
// dot, as HAProxy's use_domain_only.
func mainDomain(host string) string {
	last := strings.LastIndexByte(host, '.')
	if last < 0 {
		return host
	}
	return host[strings.LastIndexByte(host[:last], '.')+1 : last]
}

package lb

// RDP cookie hashing ("balance rdp-cookie" and "rdp-cookie(NAME)"),
// HAProxy's get_server_rch: not supported yet. It hashes the "mstshash"
// cookie of an RDP connection request, which needs the TCP payload that
// `tcp-request content` rules make the proxy wait for; the request view
// has no payload until those rules exist. The syntax is checked so that
// `fulcrum check` tells a typo from an algorithm that is only waiting.

import "fmt"

// parseRDPCookie checks "rdp-cookie[(NAME)]" and reports it unsupported.
func parseRDPCookie(a Args) (Balance, error) {
	if err := noArgs("rdp-cookie", a); err != nil {
		return Balance{}, err
	}
	return Balance{}, fmt.Errorf("rdp-cookie: %w", ErrNotSupported)
}

package haproxycfg

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// haproxyTime converts an HAProxy time ("5000", "100ms", "5s", "1m",
// "2h", "1d"; a bare number is milliseconds) into a fulcrum duration.
// A time with a unit keeps it; milliseconds without one are written in
// the largest unit that divides them ("30000" is "30s").
func haproxyTime(s string) (dur, error) {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i == 0 || i > 15 {
		return "", fmt.Errorf("%q is not a time", s)
	}
	n, _ := strconv.ParseInt(s[:i], 10, 64)
	switch unit := s[i:]; unit {
	case "", "ms":
		switch {
		case n == 0:
			return "0s", nil
		case n%3600000 == 0:
			return dur(strconv.FormatInt(n/3600000, 10) + "h"), nil
		case n%60000 == 0:
			return dur(strconv.FormatInt(n/60000, 10) + "m"), nil
		case n%1000 == 0:
			return dur(strconv.FormatInt(n/1000, 10) + "s"), nil
		}
		return dur(strconv.FormatInt(n, 10) + "ms"), nil
	case "us", "s", "m", "h", "d":
		return dur(s), nil
	}
	return "", fmt.Errorf("%q is not a time (units: us, ms, s, m, h, d)", s)
}

// haproxySize reads a size with HAProxy's optional suffix: k, m or g
// (powers of 1024), as stick-table's size.
func haproxySize(s string) (int, error) {
	mult := 1
	switch {
	case strings.HasSuffix(s, "k"), strings.HasSuffix(s, "K"):
		mult, s = 1<<10, s[:len(s)-1]
	case strings.HasSuffix(s, "m"), strings.HasSuffix(s, "M"):
		mult, s = 1<<20, s[:len(s)-1]
	case strings.HasSuffix(s, "g"), strings.HasSuffix(s, "G"):
		mult, s = 1<<30, s[:len(s)-1]
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || n > (1<<40)/mult {
		return 0, fmt.Errorf("%q is not a size", s)
	}
	return n * mult, nil
}

// atoi reads a non-negative decimal integer.
func atoi(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%q is not a number", s)
	}
	return n, nil
}

// errUnixSocket is an address that is not TCP.
var errUnixSocket = errors.New("only TCP addresses (not unix@, abns@, fd@, udp@, quic@ or a path)")

// addrFamily strips HAProxy's address prefixes that mean TCP and refuses
// the others.
func addrFamily(s string) (string, error) {
	if i := strings.Index(s, "@"); i >= 0 {
		switch s[:i] {
		case "ipv4", "ipv6", "tcp", "tcp4", "tcp6":
			return s[i+1:], nil
		}
		return "", errUnixSocket
	}
	if strings.HasPrefix(s, "/") {
		return "", errUnixSocket
	}
	return s, nil
}

// splitHostPort splits HAProxy's "host:port", where an IPv6 host may be
// written with or without brackets ("[::1]:80", ":::80").
func splitHostPort(s string) (host, port string, ok bool) {
	if strings.HasPrefix(s, "[") {
		end := strings.Index(s, "]")
		if end < 0 || end+1 >= len(s) || s[end+1] != ':' {
			return "", "", false
		}
		return s[1:end], s[end+2:], true
	}
	i := strings.LastIndex(s, ":")
	if i < 0 {
		return "", "", false
	}
	return s[:i], s[i+1:], true
}

// joinHostPort writes host:port, with brackets around an IPv6 host.
func joinHostPort(host, port string) string {
	if strings.Contains(host, ":") {
		return "[" + host + "]:" + port
	}
	return host + ":" + port
}

// bindAddrs converts a bind's address list ("127.0.0.1:80,:8080",
// ":8000-8002", "ipv6@:::443") into fulcrum's binds, one per port.
func bindAddrs(spec string) ([]string, error) {
	var out []string
	for _, part := range strings.Split(spec, ",") {
		a, err := addrFamily(part)
		if err != nil {
			return nil, err
		}
		host, ports, ok := splitHostPort(a)
		if !ok {
			return nil, fmt.Errorf("%q has no port", part)
		}
		lo, hi, isRange := strings.Cut(ports, "-")
		if !isRange {
			hi = lo
		}
		p1, err1 := strconv.Atoi(lo)
		p2, err2 := strconv.Atoi(hi)
		if err1 != nil || err2 != nil || !digits(lo) || !digits(hi) || p1 > p2 || p2 > 65535 {
			return nil, fmt.Errorf("%q: bad port", part)
		}
		if p2-p1 >= 64 {
			return nil, fmt.Errorf("%q: a range of more than 64 ports", part)
		}
		for p := p1; p <= p2; p++ {
			out = append(out, joinHostPort(host, strconv.Itoa(p)))
		}
	}
	return out, nil
}

// serverAddr converts a server's address ("10.0.0.1:80", "[::1]:80",
// "ipv4@web1:8080") into fulcrum's "host:port".
func serverAddr(spec string) (string, error) {
	a, err := addrFamily(spec)
	if err != nil {
		return "", err
	}
	host, port, ok := splitHostPort(a)
	if !ok || port == "" {
		return "", errors.New("no port (HAProxy then uses the port the client connected to)")
	}
	if strings.HasPrefix(port, "+") || strings.HasPrefix(port, "-") {
		return "", errors.New("a port offset (+N, -N)")
	}
	if !digits(port) {
		return "", fmt.Errorf("bad port %q", port)
	}
	if host == "" {
		return "", errors.New("no host")
	}
	return joinHostPort(host, port), nil
}

// digits reports whether s is one or more ASCII digits.
func digits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

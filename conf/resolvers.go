package conf

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"time"
)

// resolversSection is one [[resolvers]]: name servers that resolve the
// host names of servers at runtime, as HAProxy's `resolvers` section
// (configuration.txt section 5.3). A server names it with
// resolvers = "NAME".
type resolversSection struct {
	// Name of the section in servers' resolvers key and in `show
	// resolvers`: letters, digits, "-", "_", "." and ":". Required, unique
	// among resolvers sections.
	Name string `toml:"name"`

	// Nameserver lists the name servers queried, all at once, as
	// "ADDRESS:PORT" (the port defaults to 53): the first valid answer is
	// used. Each is named by its address as written in `show resolvers`.
	// UDP, with a TCP retry of an answer that comes back truncated.
	// Required unless parse_resolv_conf is true.
	Nameserver []string `toml:"nameserver"`

	// ParseResolvConf adds the name servers of /etc/resolv.conf after those
	// of nameserver, named by their address, as HAProxy's
	// parse-resolv-conf. Default false.
	ParseResolvConf bool `toml:"parse_resolv_conf"`

	// AcceptedPayloadSize is the largest DNS answer accepted over UDP, in
	// bytes, announced to the name servers with EDNS0 (RFC 6891); a larger
	// answer is dropped (too_big). 512..65535. Default 512.
	AcceptedPayloadSize *int `toml:"accepted_payload_size"`

	// ResolveRetries is how many times a query is sent before the
	// resolution fails (a timeout, or errors from every name server after
	// the A/AAAA fallback). At least 1. Default 3.
	ResolveRetries *int `toml:"resolve_retries"`

	// TimeoutResolve is the time between two resolutions of a name.
	// Default "1s".
	TimeoutResolve *Duration `toml:"timeout_resolve"`

	// TimeoutRetry is how long a query waits for an answer before it is
	// sent again. Default "1s".
	TimeoutRetry *Duration `toml:"timeout_retry"`

	// HoldValid is how long a valid answer is reused before a resolution
	// triggered early (`set server ... fqdn`) queries again. It does not
	// change the period of resolutions (timeout_resolve), as in HAProxy.
	// Default "10s".
	HoldValid *Duration `toml:"hold_valid"`

	// HoldObsolete is how long a record missing from the answers is kept:
	// a server keeps an address, and a template slot its SRV record, until
	// the record has been absent this long. "0s" drops it at the first
	// answer without it. Default "0s".
	HoldObsolete *Duration `toml:"hold_obsolete"`

	// HoldNX is how long after the last valid answer an NXDOMAIN answer is
	// ignored; past it, the servers of the name go to maintenance
	// (MAINT (resolution)) without an address. Default "30s".
	HoldNX *Duration `toml:"hold_nx"`

	// HoldTimeout is the same as hold_nx for name servers that do not
	// answer: until it expires, servers keep their last address and take
	// traffic. Default "30s".
	HoldTimeout *Duration `toml:"hold_timeout"`

	// HoldRefused is the same as hold_nx for REFUSED answers.
	// Default "30s".
	HoldRefused *Duration `toml:"hold_refused"`

	// HoldOther is the same as hold_nx for other errors (empty answers,
	// SERVFAIL, unparsable answers). Default "30s".
	HoldOther *Duration `toml:"hold_other"`
}

// setDefaults gives every unset key of a [[resolvers]] HAProxy 2.6's
// default (resolvers.c, cfg_parse_resolvers).
func (r *resolversSection) setDefaults() {
	orDefault(&r.AcceptedPayloadSize, 512)
	orDefault(&r.ResolveRetries, 3)
	orDefault(&r.TimeoutResolve, Duration(time.Second))
	orDefault(&r.TimeoutRetry, Duration(time.Second))
	orDefault(&r.HoldValid, Duration(10*time.Second))
	orDefault(&r.HoldObsolete, 0)
	orDefault(&r.HoldNX, Duration(30*time.Second))
	orDefault(&r.HoldTimeout, Duration(30*time.Second))
	orDefault(&r.HoldRefused, Duration(30*time.Second))
	orDefault(&r.HoldOther, Duration(30*time.Second))
}

// validate checks the values set in one [[resolvers]].
func (r *resolversSection) validate(s scope) {
	checkName(s.at("name"), r.Name)
	if len(r.Nameserver) == 0 && !r.ParseResolvConf {
		s.at("nameserver").errorf("required (or parse_resolv_conf = true)")
	}
	seen := map[string]bool{}
	for i, ns := range r.Nameserver {
		item := s.at("nameserver").item(i)
		if _, err := nameserverAddr(ns); err != nil {
			item.errorf("%v", err)
		} else if seen[ns] {
			item.errorf("duplicate name server %q", ns)
		}
		seen[ns] = true
	}
	inRange(s.at("accepted_payload_size"), r.AcceptedPayloadSize, 512, 65535)
	atLeast(s.at("resolve_retries"), r.ResolveRetries, 1)
	positive(s.at("timeout_resolve"), r.TimeoutResolve)
	positive(s.at("timeout_retry"), r.TimeoutRetry)
}

// nameserverAddr checks a name server "ADDRESS[:PORT]" and returns it as
// an address and port, the port 53 when absent.
func nameserverAddr(v string) (netip.AddrPort, error) {
	if ap, err := netip.ParseAddrPort(v); err == nil {
		if ap.Port() == 0 {
			return ap, fmt.Errorf("port must be 1..65535, got %q", v)
		}
		return ap, nil
	}
	if ip, err := netip.ParseAddr(strings.Trim(v, "[]")); err == nil && ip.Zone() == "" {
		return netip.AddrPortFrom(ip, 53), nil
	}
	return netip.AddrPort{}, fmt.Errorf("must be an IP address with an optional port, such as \"127.0.0.1:53\", got %q", v)
}

// resolvConf is the file parse_resolv_conf reads.
const resolvConf = "/etc/resolv.conf"

// readResolvConf returns the name server addresses of a resolv.conf, in
// order: the `nameserver ADDRESS` lines (resolv.conf(5)).
func readResolvConf(r io.Reader) []string {
	var out []string
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 && f[0] == "nameserver" {
			if ip, err := netip.ParseAddr(f[1]); err == nil {
				out = append(out, ip.String())
			}
		}
	}
	return out
}

// model returns the section as the proxy uses it. The name servers of
// /etc/resolv.conf are read here, with parse_resolv_conf; a file that
// cannot be read adds none (as HAProxy, which only warns).
func (r *resolversSection) model(line int) *Resolvers {
	m := &Resolvers{
		Name: r.Name, Line: line,
		AcceptedPayloadSize: *r.AcceptedPayloadSize, ResolveRetries: *r.ResolveRetries,
		TimeoutResolve: r.TimeoutResolve.Std(), TimeoutRetry: r.TimeoutRetry.Std(),
		HoldValid: r.HoldValid.Std(), HoldObsolete: r.HoldObsolete.Std(),
		HoldNX: r.HoldNX.Std(), HoldTimeout: r.HoldTimeout.Std(),
		HoldRefused: r.HoldRefused.Std(), HoldOther: r.HoldOther.Std(),
	}
	names := append([]string(nil), r.Nameserver...)
	if r.ParseResolvConf {
		if f, err := os.Open(resolvConf); err == nil {
			names = append(names, readResolvConf(f)...)
			f.Close()
		}
	}
	seen := map[string]bool{}
	for _, n := range names {
		ap, err := nameserverAddr(n)
		if err != nil || seen[n] {
			continue
		}
		seen[n] = true
		m.Nameservers = append(m.Nameservers, Nameserver{Name: n, Addr: ap.String()})
	}
	return m
}

// serverTemplateSection is one [[backend.server_template]]: count servers
// named PREFIX1..PREFIXcount whose addresses come from DNS, as HAProxy's
// `server-template PREFIX NUM FQDN[:PORT]`. With an SRV name
// ("_http._tcp.web.service.consul") each SRV record fills one server with
// its target's address, its port and its weight; with a host name each
// address of the answer fills one server. Servers without a record wait in
// maintenance (MAINT (resolution)).
type serverTemplateSection struct {
	// Prefix of the servers' names: letters, digits, "-", "_", "." and
	// ":". Required.
	Prefix string `toml:"prefix"`

	// Count is how many servers the template creates. 1..10000. Required.
	Count int `toml:"count"`

	// FQDN is the name resolved: a host name, or an SRV name (starting
	// with "_"). Required.
	FQDN string `toml:"fqdn"`

	// Port of the servers. Required with a host name; with an SRV name each
	// record's port is used and port must not be set.
	Port int `toml:"port"`

	// The keys that [backend.default_server] gives defaults to.
	serverParams

	tls *ServerTLS // loaded by checkTLS, nil without ssl and check_ssl
}

// maxTemplateCount bounds a template's count: each slot is a server.
const maxTemplateCount = 10000

// isSRVName reports whether name is an SRV label (HAProxy: anything that
// starts with an underscore).
func isSRVName(name string) bool { return strings.HasPrefix(name, "_") }

// validate checks one [[backend.server_template]].
func (st *serverTemplateSection) validate(s scope) {
	checkName(s.at("prefix"), st.Prefix)
	inRange(s.at("count"), &st.Count, 1, maxTemplateCount)
	if required(s.at("fqdn"), st.FQDN) {
		if err := checkFQDN(st.FQDN); err != nil {
			s.at("fqdn").errorf("%v", err)
		}
	}
	switch {
	case isSRVName(st.FQDN) && st.Port != 0:
		s.at("port").errorf("must not be set with an SRV name: each record gives its port")
	case !isSRVName(st.FQDN) && st.FQDN != "" && st.Port == 0:
		s.at("port").errorf("required with a host name")
	case !isSRVName(st.FQDN) && st.FQDN != "":
		inRange(s.at("port"), &st.Port, 1, 65535)
	}
	st.serverParams.validate(s)
}

// names returns the names of the template's servers, PREFIX1..PREFIXcount.
func (st *serverTemplateSection) names() []string {
	out := make([]string, 0, max(st.Count, 0))
	for i := 1; i <= st.Count && i <= maxTemplateCount; i++ {
		out = append(out, st.Prefix+strconv.Itoa(i))
	}
	return out
}

// checkFQDN checks a name to resolve: dot-separated labels of 1..63
// characters, 253 at most in all (RFC 1035 section 2.3.4), letters,
// digits, "-" and "_" (SRV labels).
func checkFQDN(name string) error {
	n := strings.TrimSuffix(name, ".")
	if n == "" || len(n) > 253 {
		return fmt.Errorf("must be a host name of 1..253 characters, got %q", name)
	}
	for _, label := range strings.Split(n, ".") {
		if label == "" || len(label) > 63 {
			return fmt.Errorf("labels must be 1..63 characters, got %q", name)
		}
		for _, r := range label {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
				return fmt.Errorf("may contain only letters, digits, \"-\", \"_\" and \".\", got %q", name)
			}
		}
	}
	return nil
}

// initAddrMethods are the words of init_addr besides IP addresses.
var initAddrMethods = []string{"last", "libc", "none"}

// checkInitAddr checks an init_addr list: "last", "libc", "none" or IP
// addresses, separated by commas.
func checkInitAddr(s scope, v *string) {
	if v == nil || *v == "" {
		return
	}
	for _, m := range strings.Split(*v, ",") {
		m = strings.TrimSpace(m)
		if m == "last" || m == "libc" || m == "none" {
			continue
		}
		if _, err := netip.ParseAddr(m); err != nil {
			s.errorf("must be a comma-separated list of last, libc, none or IP addresses, got %q", *v)
			return
		}
	}
}

// parseInitAddr returns init_addr as a list, HAProxy's default when it
// is empty: "last,libc", then "none" for a server with resolvers, which
// never fails to start (server.c srv_iterate_initaddr).
func parseInitAddr(v string, resolvers bool) []string {
	if strings.TrimSpace(v) == "" {
		if resolvers {
			return []string{"last", "libc", "none"}
		}
		return []string{"last", "libc"}
	}
	var out []string
	for _, m := range strings.Split(v, ",") {
		out = append(out, strings.TrimSpace(m))
	}
	return out
}

// resolveOptions are the words of resolve_opts.
var resolveOptions = []string{"allow-dup-ip", "ignore-weight", "prevent-dup-ip"}

// checkResolveOpts checks resolve_opts: a comma-separated list of
// resolveOptions.
func checkResolveOpts(s scope, v *string) {
	if v == nil || *v == "" {
		return
	}
	for _, o := range strings.Split(*v, ",") {
		o = strings.TrimSpace(o)
		ok := false
		for _, known := range resolveOptions {
			ok = ok || o == known
		}
		if !ok {
			s.errorf("must be a comma-separated list of %s, got %q", quoteList(resolveOptions), *v)
			return
		}
	}
}

// lastOpt reports whether the resolve_opts list v sets opt, the last of
// two opposite options winning.
func lastOpt(v string, opt, opposite string) bool {
	on := false
	for _, o := range strings.Split(v, ",") {
		switch strings.TrimSpace(o) {
		case opt:
			on = true
		case opposite:
			on = false
		}
	}
	return on
}

// resolution fills the DNS keys of a server of the model from its
// parameters and the name it resolves (host, "" for an IP address).
func (sp *serverParams) resolution(m *Server, host string, port int) {
	m.Resolvers, m.Port = *sp.Resolvers, port
	m.ResolvePrefer = *sp.ResolvePrefer
	m.InitAddr = parseInitAddr(*sp.InitAddr, m.Resolvers != "")
	m.AllowDupIP = lastOpt(*sp.ResolveOpts, "allow-dup-ip", "prevent-dup-ip")
	m.IgnoreWeight = lastOpt(*sp.ResolveOpts, "ignore-weight", "")
	if m.Resolvers == "" {
		return
	}
	if _, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil || host == "" {
		return // an address: nothing to resolve, as HAProxy
	}
	m.FQDN = strings.ToLower(strings.TrimSuffix(host, "."))
}

// serverHostPort splits a server address "host:port" (checked).
func serverHostPort(addr string) (string, int) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr, 0
	}
	n, _ := strconv.Atoi(port)
	return host, n
}

package proxy

// The server-state file (global state_file), read at start: HAProxy's
// load-server-state-from-file. The daemon writes it at stop with the reply
// of `show servers state` (runtime.WriteServersState), so an operator can
// also produce one with socat, then one comment line per server added at
// runtime (runtime.WriteStateFile):
//
//	# add server web/s4 127.0.0.1:9004 id 12 weight 10 check enabled
//
// which HAProxy skips as a comment and fulcrum reads back to add the
// server again, before the state lines apply (going beyond HAProxy, whose
// state file cannot bring back a dynamic server).

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/fulcrum-proxy/fulcrum/conf"
)

// AddedServerPrefix starts the state file's lines for servers added at
// runtime; the rest of the line is what `add server` takes.
const AddedServerPrefix = "# add server "

// AddedServerLine returns s's line in the state file: "# add server
// <b>/<s> <addr> [keywords]", with its current address, `id` when an
// operator gave it (else its state line's srv_id gives it back), and
// `enabled` unless it is in MAINT (its DRAIN or MAINT come from its state
// line).
func AddedServerLine(s *Server) string {
	sc := *s.Conf
	sc.Address = s.Addr()
	id := 0
	if s.forcedID {
		id = s.ID
	}
	return AddedServerPrefix + s.Backend.Name + "/" + s.Name + " " +
		strings.Join(sc.Keywords(id, s.Admin() != AdminMaint), " ")
}

// Admin state bits of srv_admin_state (HAProxy's SRV_ADMF_*).
const (
	admfForcedMaint = 0x01 // SRV_ADMF_FMAINT: maintenance set by an operator
	admfForcedDrain = 0x08 // SRV_ADMF_FDRAIN: drain set by an operator
)

// StateResult counts what LoadServerState did and carries the check part
// of the lines it applied, for proxy/check to restore (RestoreState).
type StateResult struct {
	Applied int // servers whose state was restored
	Skipped int // lines naming a backend or server that no longer exists
	// Added counts the servers added at runtime that were added again;
	// NotAdded those that were not: their backend is gone, the file now
	// defines a server of the same name (the file wins), or their line
	// does not read.
	Added, NotAdded int
	Checks          []SavedChecks
	// DNS are the saved addresses of the servers whose address comes from
	// DNS, for proxy/resolve's init_addr "last".
	DNS []SavedDNS
}

// SavedDNS is the DNS part of a server-state line: srv_addr, srv_fqdn and
// srv_port, for a server whose address comes from DNS.
type SavedDNS struct {
	Server *Server
	Addr   netip.Addr // srv_addr; the zero value for "-"
	FQDN   string     // srv_fqdn ("" for "-"): a template slot's SRV target
	Port   int        // srv_port
}

// SavedChecks is the check part of a server-state line, in HAProxy's
// encodings (see ServerCheckState).
type SavedChecks struct {
	Server      *Server
	CheckHealth int // srv_check_health
	CheckState  int // srv_check_state: 0x02 configured, 0x04 enabled
	AgentState  int // srv_agent_state: the same bits
}

// LoadServerState restores, from a server-state file in the format of
// `show servers state` (version 1), what operators set at runtime on the
// servers that still exist, matched by backend and server name:
//   - the admin state: MAINT or DRAIN when the line says an operator forced
//     it (SRV_ADMF_FMAINT, SRV_ADMF_FDRAIN); a server in MAINT only by its
//     configured `disabled` follows the configuration;
//   - the user weight, when srv_iweight is still the configured weight (a
//     changed configuration wins, as in HAProxy);
//   - the operational state (DOWN, NOLB) of a server that is still checked;
//     the check counters and a check disabled at runtime are returned in
//     StateResult.Checks for proxy/check's RestoreState.
//
// It is called before Start. A malformed file is an error and changes
// nothing.
func (p *Proxy) LoadServerState(r io.Reader) (StateResult, error) {
	type line struct {
		be, srv        string
		admin, op      int
		uweight, iwght int
		checks         SavedChecks
		dns            SavedDNS
	}
	var res StateResult
	var lines []line
	var added []string      // "<b>/<s> <addr> [keywords]"
	ids := map[string]int{} // "<b>/<s>" to srv_id, when the file has it
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	col := map[string]int{}
	n := 0
	for sc.Scan() {
		n++
		text := strings.TrimSpace(sc.Text())
		switch {
		case text == "":
			continue
		case n == 1:
			if text != "1" {
				return res, fmt.Errorf("line 1: unsupported state file version %q, want 1", text)
			}
			continue
		case strings.HasPrefix(text, AddedServerPrefix):
			added = append(added, strings.TrimPrefix(text, AddedServerPrefix))
			continue
		case strings.HasPrefix(text, "# be_id "):
			for i, name := range strings.Fields(strings.TrimPrefix(text, "#")) {
				col[name] = i
			}
			continue
		case strings.HasPrefix(text, "#"):
			continue // a comment
		}
		if len(col) == 0 {
			return res, fmt.Errorf("line %d: no \"# be_id be_name ...\" header before the first server", n)
		}
		f := strings.Fields(text)
		get := func(name string) (string, error) {
			i, ok := col[name]
			if !ok || i >= len(f) {
				return "", fmt.Errorf("line %d: no %s field", n, name)
			}
			return f[i], nil
		}
		num := func(name string) (int, error) {
			v, err := get(name)
			if err != nil {
				return 0, err
			}
			x, err := strconv.Atoi(v)
			if err != nil {
				return 0, fmt.Errorf("line %d: %s: %w", n, name, err)
			}
			return x, nil
		}
		var l line
		var errs []error
		var err error
		l.be, err = get("be_name")
		errs = append(errs, err)
		l.srv, err = get("srv_name")
		errs = append(errs, err)
		l.admin, err = num("srv_admin_state")
		errs = append(errs, err)
		l.uweight, err = num("srv_uweight")
		errs = append(errs, err)
		l.iwght, err = num("srv_iweight")
		errs = append(errs, err)
		l.op, err = num("srv_op_state")
		errs = append(errs, err)
		for _, c := range []struct {
			name string
			v    *int
		}{{"srv_check_health", &l.checks.CheckHealth}, {"srv_check_state", &l.checks.CheckState}, {"srv_agent_state", &l.checks.AgentState}} {
			*c.v, err = num(c.name)
			errs = append(errs, err)
		}
		if err := errors.Join(errs...); err != nil {
			return res, err
		}
		if id, err := num("srv_id"); err == nil {
			ids[l.be+"/"+l.srv] = id
		}
		// The DNS fields are optional: only init_addr "last" reads them.
		if v, err := get("srv_addr"); err == nil {
			l.dns.Addr, _ = netip.ParseAddr(v)
		}
		if v, err := get("srv_fqdn"); err == nil && v != "-" {
			l.dns.FQDN = v
		}
		if v, err := num("srv_port"); err == nil {
			l.dns.Port = v
		}
		lines = append(lines, l)
	}
	if err := sc.Err(); err != nil {
		return res, err
	}
	// The servers added at runtime come back first, so that their state
	// lines find them.
	now := time.Now()
	for _, a := range added {
		if p.restoreAdded(a, ids, now) {
			res.Added++
		} else {
			res.NotAdded++
		}
	}
	for _, l := range lines {
		b := p.Backend(l.be)
		var s *Server
		if b != nil {
			s = b.Server(l.srv)
		}
		if s == nil {
			res.Skipped++
			continue
		}
		switch {
		case l.admin&admfForcedMaint != 0:
			b.SetAdmin(s, AdminMaint)
		case l.admin&admfForcedDrain != 0:
			b.SetAdmin(s, AdminDrain)
		}
		if l.iwght == s.InitialWeight && l.uweight != int(s.UserWeight.Load()) {
			// A static algorithm refuses weights it cannot apply; the
			// configured one then stays.
			b.SetWeight(s, l.uweight)
		}
		// The checks' verdict, for a server still checked and not in
		// maintenance (where the file says stopped whatever the checks).
		if s.DNS() != nil {
			l.dns.Server = s
			res.DNS = append(res.DNS, l.dns)
		}
		// (Maintenance by resolution is decided later, by init_addr.)
		if (s.Conf.Check || s.Conf.Agent != nil) && s.OperatorAdmin() != AdminMaint {
			switch l.op {
			case 0: // SRV_ST_STOPPED
				b.SetOp(s, OpDown)
			case 3: // SRV_ST_STOPPING
				b.SetOp(s, OpStopping)
			}
			l.checks.Server = s
			res.Checks = append(res.Checks, l.checks)
		}
		res.Applied++
	}
	return res, nil
}

// restoreAdded adds again the server of a state file's "# add server"
// line (words after the prefix), unless its backend is gone or the
// configuration defines a server of the same name. Its id is the line's
// (an operator's), else its state line's (ids), unless a server has it;
// the backend numbers the next servers after it. It reports whether the
// server was added.
func (p *Proxy) restoreAdded(words string, ids map[string]int, now time.Time) bool {
	f := strings.Fields(words)
	if len(f) == 0 {
		return false
	}
	bname, sname, ok := strings.Cut(f[0], "/")
	b := p.Backend(bname)
	if !ok || b == nil || b.Server(sname) != nil {
		return false
	}
	sc, line, err := conf.ParseServerLine(sname, f[1:], p.Conf.ServerLineEnv(b.Conf.Mode))
	if err != nil {
		return false
	}
	id, forced := line.ID, line.ID > 0
	if !forced {
		id = ids[f[0]]
	}
	if id > 0 && b.ServerByID(id) != nil {
		id, forced = 0, false
	}
	s, err := b.addServer(sc, addOpts{id: id, dynamic: true, fds: p.fds, now: now})
	if err != nil {
		return false
	}
	b.mu.Lock()
	s.forcedID = forced
	if !forced { // the ids the backend gave before the restart stay given
		b.nextID = max(b.nextID, s.ID+1)
	}
	b.mu.Unlock()
	return true
}

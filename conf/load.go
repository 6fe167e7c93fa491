package conf

import (
	"errors"
	"github.com/fulcrum-proxy/fulcrum/internal/suggest"
	"io/fs"
	"net"
	"os"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"unicode"

	"github.com/BurntSushi/toml"
)

// fileSection is the whole file: its top-level tables.
type fileSection struct {
	// Global is [global].
	Global globalSection `toml:"global"`
	// Defaults is [defaults].
	Defaults defaultsSection `toml:"defaults"`
	// Frontends are the [[frontend]] tables, in file order.
	Frontends []*frontendSection `toml:"frontend"`
	// Backends are the [[backend]] tables, in file order.
	Backends []*backendSection `toml:"backend"`
	// Tables are the standalone stick tables ([[table]]), in file order.
	Tables []*tableSection `toml:"table"`
	// Peers are the [[peers]] sections, in file order.
	Peers []*peersSection `toml:"peers"`
	// Resolvers are the [[resolvers]] sections, in file order.
	Resolvers []*resolversSection `toml:"resolvers"`
	// Userlist are the [[userlist]] sections, in file order.
	Userlist []*userlistSection `toml:"userlist"`
}

// Load reads, checks and returns the configuration in the file at path.
// On failure the error is an *Errors listing every problem; problems are
// reported with path as their file name.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, &Errors{List: []Error{{File: path, Msg: "cannot read: " + err.Error()}}}
	}
	return Parse(path, data)
}

// Parse checks the configuration in data and returns it as the model, with
// every default applied. file names data in problem reports (Load passes
// the path). On failure the error is an *Errors listing every problem found,
// in file order, each as `FILE:LINE: message`.
//
// The steps: the toml package parses data into a generic tree (a syntax
// error stops there, as one problem with its line); scanPositions finds the
// line of every key; decode fills the sections, reporting unknown keys and
// values of the wrong type; each section's validate checks the values it
// sets; setDefaults fills in [defaults], then the frontends and backends
// inherit from it and the servers from their default_server; the links
// between sections are checked; last, keys that the proxy does not
// implement yet are reported.
func Parse(file string, data []byte) (*Config, error) {
	var tree map[string]any
	if _, err := toml.Decode(string(data), &tree); err != nil {
		return nil, &Errors{List: []Error{syntaxError(file, err)}}
	}
	c := &checker{file: file, tree: tree, pos: scanPositions(string(data)), failed: map[string]bool{}}
	root := scope{c: c}

	var f fileSection
	root.decode(tree, reflect.ValueOf(&f).Elem())
	f.validate(root)
	f.setDefaults()
	f.checkLinks(root)
	f.checkALPN(root)
	reg := f.compileRules(root)
	f.checkServers(root, reg)
	f.checkTables(root)
	f.checkPeers(root)
	c.checkSupport()

	if len(c.errs) > 0 {
		errs := &Errors{List: c.errs}
		errs.sort()
		return nil, errs
	}
	cfg := f.model(c)
	cfg.ACL = reg
	cfg.TLS = c.tls
	warns := &Errors{List: c.warns}
	warns.sort()
	cfg.Warnings = warns.List
	return cfg, nil
}

// checkResolvers checks, after inheritance, that every resolvers a server,
// a template or a default_server names exists, and that SRV templates have
// one. A name inherited from default_server is reported there only.
func (f *fileSection) checkResolvers(s scope) {
	names := map[string]bool{}
	for _, r := range f.Resolvers {
		names[r.Name] = true
	}
	known := func(s scope, name string) bool {
		if name != "" && !names[name] {
			s.errorf("unknown resolvers %q", name)
			return false
		}
		return true
	}
	for i, be := range f.Backends {
		item := s.at("backend").item(i)
		ds := be.DefaultServer
		known(item.at("default_server").at("resolvers"), *ds.Resolvers)
		for j, srv := range be.Servers {
			if *srv.Resolvers != *ds.Resolvers {
				known(item.at("server").item(j).at("resolvers"), *srv.Resolvers)
			}
		}
		for j, st := range be.ServerTemplates {
			ts := item.at("server_template").item(j)
			if *st.Resolvers != *ds.Resolvers {
				known(ts.at("resolvers"), *st.Resolvers)
			}
			if isSRVName(st.FQDN) && *st.Resolvers == "" {
				ts.at("resolvers").errorf("required with an SRV name")
			}
		}
	}
}

// syntaxError turns an error of the toml package into a problem report.
func syntaxError(file string, err error) Error {
	var pe toml.ParseError
	if errors.As(err, &pe) {
		line := pe.Position.Line
		if line > 1 && strings.Contains(pe.Message, "table name") && strings.HasSuffix(pe.Message, `got '\n' instead`) {
			// An unterminated `[global`: the toml package counts the
			// newline that ends the line as the next line's.
			line--
		}
		return Error{File: file, Line: line, Msg: "syntax error: " + oneLine(pe.Message)}
	}
	return Error{File: file, Msg: "syntax error: " + oneLine(err.Error())}
}

// oneLine escapes the control characters of a message from the toml
// package, which may quote the offending input as it is: a problem report
// stays on one line.
func oneLine(s string) string {
	var b strings.Builder
	for _, r := range s {
		if unicode.IsControl(r) {
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// validate checks every section, and that names are unique.
func (f *fileSection) validate(s scope) {
	f.Global.validate(s.at("global"))
	f.Defaults.validate(s.at("defaults"))
	seen := map[string]int{}
	for i, fe := range f.Frontends {
		item := s.at("frontend").item(i)
		fe.validate(item)
		if first, dup := seen[fe.Name]; dup && fe.Name != "" {
			item.at("name").errorf("duplicate frontend name, first defined at line %d", first)
		} else {
			seen[fe.Name] = item.at("name").line()
		}
	}
	seen = map[string]int{}
	for i, be := range f.Backends {
		item := s.at("backend").item(i)
		be.validate(item)
		if first, dup := seen[be.Name]; dup && be.Name != "" {
			item.at("name").errorf("duplicate backend name, first defined at line %d", first)
		} else {
			seen[be.Name] = item.at("name").line()
		}
	}
	for i, t := range f.Tables {
		t.validate(s.at("table").item(i))
	}
	for i, ps := range f.Peers {
		ps.validate(s.at("peers").item(i))
	}
	seen = map[string]int{}
	for i, r := range f.Resolvers {
		item := s.at("resolvers").item(i)
		r.validate(item)
		if first, dup := seen[r.Name]; dup && r.Name != "" {
			item.at("name").errorf("duplicate resolvers name, first defined at line %d", first)
		} else {
			seen[r.Name] = item.at("name").line()
		}
	}
}

// setDefaults applies the built-in defaults to [global] and [defaults], then
// the inheritance of frontends and backends from [defaults].
func (f *fileSection) setDefaults() {
	f.Global.setDefaults()
	f.Defaults.setDefaults()
	for _, fe := range f.Frontends {
		fe.setDefaults(&f.Defaults)
	}
	for _, be := range f.Backends {
		inherit(&be.HashKey, f.Global.HashKey)
		be.setDefaults(&f.Defaults)
	}
	for _, r := range f.Resolvers {
		r.setDefaults()
	}
}

// checkLinks checks, after inheritance, that every backend a frontend routes
// to exists and runs in the frontend's mode.
func (f *fileSection) checkLinks(s scope) {
	backends := map[string]*backendSection{}
	for _, be := range f.Backends {
		if _, dup := backends[be.Name]; !dup {
			backends[be.Name] = be
		}
	}
	link := func(s scope, fe *frontendSection, name string) {
		be, ok := backends[name]
		switch {
		case !ok:
			names := make([]string, 0, len(backends))
			for n := range backends {
				names = append(names, n)
			}
			if near := suggest.Nearest(name, names); near != "" {
				s.errorf("unknown backend %q; did you mean %q?", name, near)
			} else {
				s.errorf("unknown backend %q", name)
			}
		case *be.Mode != *fe.Mode:
			s.errorf("backend %q is in mode %s, the frontend in mode %s", name, *be.Mode, *fe.Mode)
		}
	}
	f.checkResolvers(s)
	for i, fe := range f.Frontends {
		item := s.at("frontend").item(i)
		if fe.DefaultBackend != "" {
			link(item.at("default_backend"), fe, fe.DefaultBackend)
		}
		for j, r := range fe.UseBackend {
			if r.Backend != "" {
				link(item.at("use_backend").item(j).at("backend"), fe, r.Backend)
			}
		}
	}
}

// model returns the checked file as the model the proxy consumes. It is
// called only when there was no problem: every key has its value.
func (f *fileSection) model(c *checker) *Config {
	cfg := &Config{
		File: c.file,
		Global: Global{
			MaxConn:       f.Global.MaxConn,
			NbThread:      f.Global.NbThread,
			HardStopAfter: f.Global.HardStopAfter.Std(),
			LogLevel:      *f.Global.LogLevel,
			LogFormat:     *f.Global.LogFormat,
			StatsTimeout:  f.Global.StatsTimeout.Std(),
			StateFile:     f.Global.StateFile,
			MaxHdr:        *f.Global.TuneHTTPMaxHdr,
			LogTag:        *f.Global.LogTag,
			H2MaxStreams:  *f.Global.TuneH2MaxConcurrentStreams,
			NetIO:         *f.Global.TuneNetIO,
			ClientBufs:    SocketBufs{Snd: f.Global.TuneSndbufClient, Rcv: f.Global.TuneRcvbufClient},
			ServerBufs:    SocketBufs{Snd: f.Global.TuneSndbufServer, Rcv: f.Global.TuneRcvbufServer},

			StatsHistoryInterval: f.Global.StatsHistoryInterval.Std(),
		},
	}
	for i, l := range f.Global.Log {
		cfg.Global.Log = append(cfg.Global.Log, l.model(c.pos.line(path{"global", "log"}.index(i))))
	}
	for i, ss := range f.Global.StatsSocket {
		cfg.Global.StatsSockets = append(cfg.Global.StatsSockets, StatsSocket{
			Path:        ss.Path,
			Line:        c.pos.line(path{"global", "stats_socket"}.index(i)),
			Level:       *ss.Level,
			Mode:        os.FileMode(socketMode(*ss.Mode)),
			Owner:       ss.Owner,
			Group:       ss.Group,
			TCP:         ss.TCP,
			AllowRemote: ss.AllowRemote,
			MaxConn:     *ss.MaxConn,
		})
	}
	for i, fe := range f.Frontends {
		var addrs []string
		for _, b := range fe.binds {
			addrs = append(addrs, b.Addr)
		}
		hs := fe.TimeoutClientHS.Std()
		if hs == 0 {
			hs = fe.TimeoutClient.Std()
		}
		cfg.Frontends = append(cfg.Frontends, &Frontend{
			Name:                 fe.Name,
			Line:                 c.pos.line(path{"frontend"}.index(i)),
			Binds:                addrs,
			BindOptions:          fe.binds,
			TimeoutClientHS:      hs,
			Mode:                 *fe.Mode,
			MaxConn:              *fe.MaxConn,
			DefaultBackend:       fe.DefaultBackend,
			TimeoutClient:        fe.TimeoutClient.Std(),
			TimeoutHTTPRequest:   fe.TimeoutHTTPRequest.Std(),
			TimeoutHTTPKeepAlive: fe.TimeoutHTTPKeepAlive.Std(),
			ForwardFor:           *fe.ForwardFor,
			Stats:                fe.Stats.model(),
			Rules:                fe.rules,
			StickTable:           fe.StickTable.model(fe.Name, c.pos.line(path{"frontend"}.index(i).child("stick_table"))),
			Log:                  fe.logModel(c, i, cfg.Global.Log),
			LogFormat:            fe.logFormat,
			LogSamples:           fe.logSamples,
			CaptureRequest:       captures(fe.CaptureRequestHeader),
			CaptureResponse:      captures(fe.CaptureResponseHeader),
			DontLogNull:          *fe.DontLogNull,
			DisableH2Upgrade:     *fe.DisableH2Upgrade,
			DontLogNormal:        *fe.DontLogNormal,
			LogSeparateErrors:    *fe.LogSeparateErrors,
		})
	}
	for i, t := range f.Tables {
		cfg.Tables = append(cfg.Tables, t.stick().model(t.Name, c.pos.line(path{"table"}.index(i))))
	}
	for i, ps := range f.Peers {
		cfg.Peers = append(cfg.Peers, ps.model(c, i))
	}
	for i, r := range f.Resolvers {
		cfg.Resolvers = append(cfg.Resolvers, r.model(c.pos.line(path{"resolvers"}.index(i))))
	}
	for i, be := range f.Backends {
		b := &Backend{
			Name:              be.Name,
			Line:              c.pos.line(path{"backend"}.index(i)),
			Mode:              *be.Mode,
			Balance:           *be.Balance,
			HashType:          *be.HashType,
			HashBalanceFactor: *be.HashBalanceFactor,
			PanicThreshold:    be.PanicThreshold,
			FullConn:          *be.FullConn,
			AllBackups:        be.AllBackups,
			HTTPReuse:         *be.HTTPReuse,
			TimeoutConnect:    be.TimeoutConnect.Std(),
			TimeoutServer:     be.TimeoutServer.Std(),
			TimeoutTunnel:     optDuration(be.TimeoutTunnel),
			TimeoutQueue:      be.TimeoutQueue.Std(),
			TimeoutCheck:      be.TimeoutCheck.Std(),
			Check:             be.checkModel(),
			Retries:           *be.Retries,
			Redispatch:        *be.Redispatch,
			AbortOnClose:      *be.AbortOnClose,
			ForwardFor:        *be.ForwardFor,
			Rules:             be.rules,
			StickTable:        be.StickTable.model(be.Name, c.pos.line(path{"backend"}.index(i).child("stick_table"))),
			Stick:             be.stickRules,
			Cookie:            be.Cookie.model(),
		}
		b.HashKey, b.HashPreserveAffinity = *be.HashKey, *be.HashPreserveAffinity
		b.DefaultServer = be.DefaultServer.defaultModel()
		for j, srv := range be.Servers {
			m := srv.serverParams.server(srv.Name, c.pos.line(path{"backend"}.index(i).child("server").index(j)))
			m.Address, m.Cookie, m.TLS = srv.Address, srv.Cookie, srv.tls
			host, port := serverHostPort(srv.Address)
			srv.serverParams.resolution(m, host, port)
			b.Servers = append(b.Servers, m)
		}
		for j, st := range be.ServerTemplates {
			line := c.pos.line(path{"backend"}.index(i).child("server_template").index(j))
			for _, name := range st.names() {
				m := st.serverParams.server(name, line)
				m.Address, m.Template, m.TLS = st.FQDN, st.Prefix, st.tls
				if st.Port > 0 {
					m.Address = net.JoinHostPort(st.FQDN, strconv.Itoa(st.Port))
				}
				st.serverParams.resolution(m, st.FQDN, st.Port)
				b.Servers = append(b.Servers, m)
			}
		}
		// Servers and templates are numbered together in file order, as
		// HAProxy numbers its server and server-template lines.
		sort.SliceStable(b.Servers, func(x, y int) bool { return b.Servers[x].Line < b.Servers[y].Line })
		cfg.Backends = append(cfg.Backends, b)
	}
	return cfg
}

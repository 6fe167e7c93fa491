package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/fulcrum-proxy/fulcrum/conf"
	"github.com/fulcrum-proxy/fulcrum/conf/haproxycfg"
	"github.com/fulcrum-proxy/fulcrum/proxy/peers"
)

// defaultConfig is the configuration `fulcrum run` and `fulcrum check`
// read without -c, when it exists.
const defaultConfig = "/etc/fulcrum/fulcrum.toml"

// configPath returns the file to read: the one given with -c or as the
// command's one argument (args), else fallback when it exists. It says so
// when there is none, or more than one.
func configPath(given string, args []string, fallback string) (string, error) {
	switch {
	case len(args) > 1 || len(args) == 1 && given != "":
		return "", fmt.Errorf("one configuration file, with -c FILE or as the argument; flags go before it (got %q)", args)
	case len(args) == 1:
		return args[0], nil // `fulcrum check fulcrum.toml`
	case given != "":
		return given, nil
	}
	if _, err := os.Stat(fallback); err == nil {
		return fallback, nil
	}
	return "", fmt.Errorf("no configuration file: give one with -c FILE (without -c, %s is read when it exists)", fallback)
}

// loadConfig loads and validates a configuration file for `run`, `check`
// and reloads. Beyond conf's checks, a configuration without any frontend
// is refused: it would start and listen on nothing, which HAProxy refuses
// too ("no listener").
//
// An HAProxy configuration (recognised by its content,
// haproxycfg.IsHAProxy) is converted as `fulcrum import` does; each of its
// lines that fulcrum would not run as HAProxy does (not supported, not
// supported yet) is an error `FILE:LINE: keyword: why`, so that nothing
// asked for is ignored.
//
// localPeer is --localpeer: with the host name, it says which peers
// sections of an haproxy.cfg are this instance's (haproxycfg.Options).
func loadConfig(path, localPeer string) (*conf.Config, error) {
	cfg, _, err := loadConfigNotes(path, localPeer)
	return cfg, err
}

// notesError is the error of an HAProxy configuration with lines fulcrum
// would not run: one entry per such note, FILE:LINE: keyword: kind: why.
type notesError struct{ *conf.Errors }

// Unwrap returns the *conf.Errors.
func (e notesError) Unwrap() error { return e.Errors }

// loadConfigNotes is loadConfig, with the notes of an HAProxy
// configuration's conversion (nil for a TOML file). An error for notes is
// a notesError.
func loadConfigNotes(path, localPeer string) (*conf.Config, []haproxycfg.Note, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, nil, &conf.Errors{List: []conf.Error{{File: path, Msg: "cannot read: " + err.Error()}}}
	}
	var cfg *conf.Config
	var notes []haproxycfg.Note
	if haproxycfg.IsHAProxy(data) {
		r, err := haproxycfg.Import(data, haproxycfg.Options{Name: filepath.Base(path), Dir: filepath.Dir(path),
			LocalPeer: localPeer, HostName: peers.LocalPeer(), Env: os.LookupEnv})
		if err != nil {
			return nil, nil, err
		}
		notes = r.Notes
		if blocking := r.Blocking(); len(blocking) > 0 {
			errs := &conf.Errors{}
			for _, n := range blocking {
				errs.List = append(errs.List, conf.Error{File: path, Line: n.Line, Msg: fmt.Sprintf("%s: %s: %s", n.Keyword, n.Kind, n.Why)})
			}
			return nil, notes, notesError{errs}
		}
		// Relative files (acl -f) are relative to the HAProxy file.
		cfg, err = conf.Parse(path, r.TOML)
		if err != nil {
			return nil, notes, err
		}
		// The check's warnings are notes already, at the HAProxy file's
		// lines (cfg's are the TOML's): run logs the notes of what runs
		// differently or is ignored instead.
		cfg.Warnings = nil
		for _, n := range notes {
			if n.Kind == haproxycfg.Differs || n.Kind == haproxycfg.Ignored {
				cfg.Warnings = append(cfg.Warnings, conf.Error{File: path, Line: n.Line, Msg: fmt.Sprintf("%s: %s: %s", n.Keyword, n.Kind, n.Why)})
			}
		}
	} else if cfg, err = conf.Parse(path, data); err != nil {
		return nil, nil, err
	}
	if len(cfg.Frontends) == 0 {
		return nil, notes, fmt.Errorf("%s: no [[frontend]]: nothing would listen", path)
	}
	return cfg, notes, nil
}

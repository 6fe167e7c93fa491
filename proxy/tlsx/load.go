package tlsx

// Loading what a configuration's binds name: certificates, crt-lists,
// `crt` directories and CA files, each read once however many binds name
// it (HAProxy's ckch store is keyed by path the same way).

import (
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Source is one certificate source of a bind, in the order written: a
// `crt FILE` (Cert) or a crt-list, which is a `crt-list FILE` or a `crt
// DIR` (List).
type Source struct {
	Cert string
	List string
}

// BindConfig is the TLS side of one bind line: its settings and its
// certificate sources. Where is the bind's place in the configuration,
// "FILE:LINE", for messages that point at it.
type BindConfig struct {
	Settings  Settings
	Sources   []Source
	StrictSNI bool
	Where     string
	// HTTP1Only leaves "h2" out of the protocols offered by ALPN: the
	// bind's frontend speaks HTTP/1.1 (conf sets it for http mode).
	HTTP1Only bool
}

// Loader reads the files of a configuration's binds. Relative paths are
// relative to Dir (the configuration file's directory), but names keep
// the path as written: they are what `show ssl cert` prints and what
// `set ssl cert` takes.
type Loader struct {
	Dir string
	Now time.Time // to tell expired certificates

	certs   map[string]*Cert
	lists   map[string]*CrtList
	cas     map[string]*x509.CertPool
	failed  map[string]error
	expired map[string]bool
}

// NewLoader returns a loader resolving relative paths against dir.
func NewLoader(dir string) *Loader {
	return &Loader{Dir: dir, Now: time.Now(), certs: map[string]*Cert{}, lists: map[string]*CrtList{},
		cas: map[string]*x509.CertPool{}, failed: map[string]error{}, expired: map[string]bool{}}
}

// path returns where the file named name is.
func (l *Loader) path(name string) string {
	if filepath.IsAbs(name) || l.Dir == "" {
		return name
	}
	return filepath.Join(l.Dir, name)
}

// LoadCA reads the CA file named name (once).
func (l *Loader) LoadCA(name string) (*x509.CertPool, error) {
	if p, ok := l.cas[name]; ok {
		return p, nil
	}
	if err, ok := l.failed["ca:"+name]; ok {
		return nil, err
	}
	p, err := LoadCAFile(l.path(name))
	if err != nil {
		l.failed["ca:"+name] = err
		return nil, err
	}
	l.cas[name] = p
	return p, nil
}

// Cert loads the certificate named name (once). The first time an
// expired certificate is loaded, a warning says so; it loads anyway, as
// HAProxy's does.
func (l *Loader) Cert(name string) (*Cert, []string, error) {
	if c, ok := l.certs[name]; ok {
		return c, nil, nil
	}
	if err, ok := l.failed["crt:"+name]; ok {
		return nil, nil, err
	}
	c, err := LoadCert(name, l.path(name))
	if err != nil {
		l.failed["crt:"+name] = err
		return nil, nil, err
	}
	l.certs[name] = c
	var warnings []string
	if c.Expired(l.Now) && !l.expired[name] {
		l.expired[name] = true
		warnings = append(warnings, fmt.Sprintf("certificate expired on %s (notAfter), loaded anyway",
			c.Leaf.NotAfter.UTC().Format("2006-01-02 15:04:05 MST")))
	}
	return c, warnings, nil
}

// AddCrt adds `crt NAME` to b: a certificate file, or a directory of
// them, which becomes a crt-list named after it.
func (l *Loader) AddCrt(b *BindConfig, name string) ([]string, error) {
	fi, err := os.Stat(l.path(name))
	if err == nil && fi.IsDir() {
		ln := strings.TrimRight(name, "/")
		if ln == "" {
			ln = "/"
		}
		dl, ok := l.lists[ln]
		if !ok {
			if dl, err = ReadDirList(ln, l.path(name)); err != nil {
				return nil, err
			}
			if len(dl.Entries) == 0 {
				return nil, errors.New("no certificate in directory")
			}
		}
		warnings, err := l.loadEntries(dl)
		if err != nil {
			return warnings, err
		}
		l.lists[ln] = dl
		b.Sources = append(b.Sources, Source{List: ln})
		return warnings, nil
	}
	_, warnings, err := l.Cert(name)
	if err != nil {
		return warnings, err
	}
	b.Sources = append(b.Sources, Source{Cert: name})
	return warnings, nil
}

// AddCrtList adds `crt-list NAME` to b, loading the list and every
// certificate it names.
func (l *Loader) AddCrtList(b *BindConfig, name string) ([]string, error) {
	cl, ok := l.lists[name]
	var warnings []string
	if !ok {
		data, err := os.ReadFile(l.path(name))
		if err != nil {
			return nil, fmt.Errorf("cannot read: %w", unwrapPath(err))
		}
		cl, warnings, err = ParseCrtList(name, data, l.LoadCA)
		if err != nil {
			return warnings, err
		}
		if len(cl.Entries) == 0 {
			return warnings, errors.New("no certificate in crt-list")
		}
		w, err := l.loadEntries(cl)
		warnings = append(warnings, w...)
		if err != nil {
			return warnings, err
		}
		l.lists[name] = cl
	}
	b.Sources = append(b.Sources, Source{List: name})
	return warnings, nil
}

// loadEntries loads the certificates of a list's entries.
func (l *Loader) loadEntries(cl *CrtList) ([]string, error) {
	var warnings []string
	for _, e := range cl.Entries {
		_, w, err := l.Cert(e.Cert)
		for _, x := range w {
			warnings = append(warnings, fmt.Sprintf("%q: %s", e.Cert, x))
		}
		if err != nil {
			if e.Line > 0 {
				return warnings, fmt.Errorf("line %d: %q: %w", e.Line, e.Cert, err)
			}
			return warnings, fmt.Errorf("%q: %w", e.Cert, err)
		}
	}
	return warnings, nil
}

// Check reports a bind that cannot work: no certificate, or settings
// that do not hold together (on the bind or merged into one of its
// crt-list lines).
func (l *Loader) Check(b *BindConfig) error {
	if len(b.Sources) == 0 {
		return errors.New("ssl needs a certificate: crt or crt-list")
	}
	if err := b.Settings.Check(); err != nil {
		return err
	}
	for _, src := range b.Sources {
		if src.List == "" {
			continue
		}
		for _, e := range l.lists[src.List].Entries {
			if e.Opts == nil {
				continue
			}
			s := b.Settings.Over(e.Opts)
			if err := s.Check(); err != nil {
				return fmt.Errorf("crt-list %q: line %d: %w", src.List, e.Line, err)
			}
		}
	}
	return nil
}

// Certs returns the certificates loaded, by name.
func (l *Loader) Certs() map[string]*Cert { return l.certs }

// Lists returns the crt-lists and directories loaded, by name.
func (l *Loader) Lists() map[string]*CrtList { return l.lists }

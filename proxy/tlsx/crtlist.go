package tlsx

// crt-lists: HAProxy's files of certificates with their SNI filters and
// options, one per line ("path [options] [filter...]"), and the `crt`
// directories, which HAProxy treats as crt-lists of the PEM files they
// hold (show ssl crt-list lists both).

import (
	"crypto/sha256"
	"crypto/x509"
	"fmt"
	"os"
	"path"
	"slices"
	"strings"
)

// CrtList is a crt-list file or a `crt` directory: its entries in order.
// A CrtList in a Store is changed only under the Store's lock, by
// replacing Entries with a new slice (readers of an old one are safe).
type CrtList struct {
	Name    string // as the configuration writes it; a directory without its trailing '/'
	Dir     bool
	Entries []*Entry
	// Disk is the SHA-256 of the file (a directory: of its sorted file
	// names) when loaded: a runtime change survives a reload while it
	// stays the same.
	Disk []byte
	// Lines counts the file's lines, then the lines added at runtime,
	// which are numbered on from it (a directory starts at 0).
	Lines int
}

// Entry is one line of a crt-list.
type Entry struct {
	Cert    string    // the certificate's name
	Line    int       // line in the file (a directory's entries: 0); runtime additions continue the count
	Opts    *Settings // the options in brackets; nil without brackets
	Filters []string  // SNI filters: "name", "*.domain", "!name"
}

// Text renders the entry as `show ssl crt-list` does: the certificate,
// ":LINE" when withLine, " [options]" and the filters.
func (e *Entry) Text(withLine bool) string {
	var b strings.Builder
	b.WriteString(e.Cert)
	if withLine {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	if e.Opts != nil {
		b.WriteString(" [")
		b.WriteString(e.Opts.Text())
		b.WriteString("]")
	}
	for _, f := range e.Filters {
		b.WriteByte(' ')
		b.WriteString(f)
	}
	return b.String()
}

// maxCrtLine is the longest crt-list line, as HAProxy's CRT_LINESIZE.
const maxCrtLine = 65535

// ParseCrtLine parses one crt-list line: "path [opt...] filter...". It
// returns nil for an empty line. loadCA reads a ca-file option.
func ParseCrtLine(line string, loadCA func(string) (*x509.CertPool, error)) (e *Entry, warnings []string, err error) {
	if len(line) > maxCrtLine {
		return nil, nil, fmt.Errorf("line too long, limit is %d characters", maxCrtLine)
	}
	// Words, with '[' and ']' as separators of their own.
	var words []string
	bOpen, bClose := -1, -1
	start := -1 // of the current word
	end := func(i int) {
		if start >= 0 {
			words = append(words, line[start:i])
			start = -1
		}
	}
	for i := 0; i < len(line); i++ {
		switch c := line[i]; {
		case c == ' ' || c == '\t' || c == '\r' || c == '\n':
			end(i)
		case c == '[':
			end(i)
			if bOpen >= 0 {
				return nil, nil, fmt.Errorf("too many '['")
			}
			if len(words) == 0 {
				return nil, nil, fmt.Errorf("file must start with a cert")
			}
			bOpen = len(words)
		case c == ']':
			end(i)
			if bClose >= 0 {
				return nil, nil, fmt.Errorf("too many ']'")
			}
			if bOpen < 0 {
				return nil, nil, fmt.Errorf("missing '['")
			}
			bClose = len(words)
		case start < 0:
			start = i
		}
	}
	end(len(line))
	if len(words) == 0 {
		return nil, nil, nil
	}
	if bOpen >= 0 && bClose < 0 {
		return nil, nil, fmt.Errorf("missing ']'")
	}
	e = &Entry{Cert: words[0]}
	filtersFrom := 1
	if bOpen >= 0 {
		e.Opts = &Settings{}
		for i := bOpen; i < bClose; {
			kw := words[i]
			n := OptionArgs(kw)
			if n < 0 {
				return nil, nil, fmt.Errorf("unknown ssl keyword %s", kw)
			}
			if i+1+n > bClose {
				return nil, nil, fmt.Errorf("ssl args out of '[]' for %s", kw)
			}
			w, err := e.Opts.ParseOption(kw, words[i+1], loadCA)
			warnings = append(warnings, w...)
			if err != nil {
				return nil, warnings, err
			}
			i += 1 + n
		}
		// Versions are checked here; verify against the bind's ca-file
		// once merged with the bind's settings (NewBind).
		if err := e.Opts.checkVersions(); err != nil {
			return nil, warnings, err
		}
		filtersFrom = bClose
	}
	for _, f := range words[filtersFrom:] {
		e.Filters = append(e.Filters, strings.ToLower(f))
	}
	return e, warnings, nil
}

// ParseCrtList parses the content of a crt-list file named name. Lines
// starting with '#' and empty lines are skipped. Errors name the line.
func ParseCrtList(name string, data []byte, loadCA func(string) (*x509.CertPool, error)) (*CrtList, []string, error) {
	l := &CrtList{Name: name}
	sum := sha256.Sum256(data)
	l.Disk = sum[:]
	var warnings []string
	l.Lines = strings.Count(string(data), "\n")
	if len(data) > 0 && data[len(data)-1] != '\n' {
		l.Lines++
	}
	for i, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "#") {
			continue
		}
		e, w, err := ParseCrtLine(line, loadCA)
		for _, x := range w {
			warnings = append(warnings, fmt.Sprintf("line %d: %s", i+1, x))
		}
		if err != nil {
			return nil, warnings, fmt.Errorf("line %d: %w", i+1, err)
		}
		if e != nil {
			e.Line = i + 1
			l.Entries = append(l.Entries, e)
		}
	}
	return l, warnings, nil
}

// dirSkipped reports whether a file of a `crt` directory is not a
// certificate, as HAProxy skips them: hidden files and the .issuer, .ocsp,
// .sctl and .key companions.
func dirSkipped(name string) bool {
	if strings.HasPrefix(name, ".") {
		return true
	}
	switch path.Ext(name) {
	case ".issuer", ".ocsp", ".sctl", ".key":
		return true
	}
	return false
}

// ReadDirList lists a `crt` directory as a crt-list named name (without
// a trailing '/'): one entry per certificate file, in name order, each
// named name + "/" + file.
func ReadDirList(name, fsPath string) (*CrtList, error) {
	des, err := os.ReadDir(fsPath)
	if err != nil {
		return nil, fmt.Errorf("cannot read directory: %w", unwrapPath(err))
	}
	l := &CrtList{Name: name, Dir: true}
	var names []string
	for _, de := range des {
		if de.IsDir() || dirSkipped(de.Name()) {
			continue
		}
		names = append(names, de.Name())
	}
	slices.Sort(names)
	h := sha256.New()
	for _, n := range names {
		h.Write([]byte(n + "\n"))
		l.Entries = append(l.Entries, &Entry{Cert: name + "/" + n})
	}
	l.Disk = h.Sum(nil)
	return l, nil
}

func unwrapPath(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}

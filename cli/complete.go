package cli

import (
	"sort"
	"strings"
	"sync"
)

// Completer completes command lines for the shell. Command words come from
// the server's `help` (fetched once per connection); backend, server,
// frontend and table names are fetched live on each Tab, from `show stat`
// (else `show servers state`) and `show table`. It implements
// readline.AutoCompleter.
type Completer struct {
	mu    sync.Mutex // serialises the use of Sess with the shell
	Sess  *Session
	usage [][]string // the usage of each command, split in words
}

// names are the objects of the running configuration.
type names struct {
	backends, frontends, tables []string
	servers                     map[string][]string
}

// Do returns the completions of line[:pos]: the suffixes to append to the
// word under the cursor, and that word's length.
func (c *Completer) Do(line []rune, pos int) ([][]rune, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	text := string(line[:pos])
	words := strings.Fields(text)
	partial := ""
	if len(words) > 0 && !strings.HasSuffix(text, " ") {
		partial, words = words[len(words)-1], words[:len(words)-1]
	}
	cands := c.candidates(words, partial)
	var out [][]rune
	for _, cand := range cands {
		if strings.HasPrefix(cand, partial) && cand != partial || cand == partial && !strings.HasSuffix(cand, "/") {
			suffix := cand[len(partial):]
			if !strings.HasSuffix(cand, "/") {
				suffix += " "
			}
			out = append(out, []rune(suffix))
		}
	}
	return out, len([]rune(partial))
}

// candidates lists the possible next words after words.
func (c *Completer) candidates(words []string, partial string) []string {
	if c.usage == nil {
		c.loadHelp()
	}
	seen := map[string]bool{}
	var out []string
	add := func(s string) {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	var live *names
	for _, u := range c.usage {
		if len(u) <= len(words) || !matches(u, words) {
			continue
		}
		tok := u[len(words)]
		if !isPlaceholder(tok) {
			for _, alt := range alternatives(tok) {
				add(alt)
			}
			continue
		}
		if live == nil {
			live = fetchNames(c.Sess)
		}
		for _, n := range placeholderNames(tok, partial, live) {
			add(n)
		}
	}
	sort.Strings(out)
	return out
}

// matches reports whether words fit the first words of usage u.
func matches(u, words []string) bool {
	for i, w := range words {
		if isPlaceholder(u[i]) {
			continue
		}
		ok := false
		for _, alt := range alternatives(u[i]) {
			if alt == w {
				ok = true
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

// isPlaceholder: `<bk>/<srv>`, `[<backend>]`, `[opts]` stand for values;
// `cli`, `[desc|json|...]*` are literal words.
func isPlaceholder(tok string) bool {
	return strings.Contains(tok, "<") || tok == "[opts]" || tok == "[id]" || tok == "[var]" || tok == "[num]"
}

// alternatives splits `[desc|json|up]*` into its literal words.
func alternatives(tok string) []string {
	tok = strings.Trim(tok, "[]*")
	return strings.Split(tok, "|")
}

// placeholderNames returns the live names a placeholder stands for.
func placeholderNames(tok, partial string, n *names) []string {
	t := strings.ToLower(tok)
	switch {
	case strings.Contains(t, "/<s"): // <bk>/<srv>, <b>/<s>, <backend>/<server>
		if b, _, ok := strings.Cut(partial, "/"); ok {
			var out []string
			for _, s := range n.servers[b] {
				out = append(out, b+"/"+s)
			}
			return out
		}
		var out []string
		for _, b := range n.backends {
			if len(n.servers[b]) > 0 {
				out = append(out, b+"/")
			}
		}
		return out
	case strings.Contains(t, "frontend"), strings.Contains(t, "<fe>"):
		return n.frontends
	case strings.Contains(t, "table"):
		return n.tables
	case strings.Contains(t, "backend"), strings.Contains(t, "<bk>"), strings.Contains(t, "px"),
		strings.Contains(t, "proxy"), strings.Contains(t, "iid"):
		return n.backends
	}
	return nil
}

// loadHelp reads the command list from `help`: lines "  USAGE : help".
func (c *Completer) loadHelp() {
	c.usage = [][]string{}
	reply, err := c.Sess.Exec("help")
	if err != nil {
		return
	}
	for _, l := range strings.Split(reply, "\n") {
		if !strings.HasPrefix(l, "  ") {
			continue
		}
		i := strings.Index(l, ": ")
		if i < 0 {
			continue
		}
		var u []string
		for _, w := range strings.Fields(l[:i]) {
			if strings.HasPrefix(w, "(") {
				break
			}
			u = append(u, w)
		}
		if len(u) > 0 {
			c.usage = append(c.usage, u)
		}
	}
}

// Reset forgets the command list (after a reconnection: the server may
// have changed).
func (c *Completer) Reset() {
	c.mu.Lock()
	c.usage = nil
	c.mu.Unlock()
}

// fetchNames fetches the live names. Errors (an older server without
// `show table`, a user-level socket) leave the list empty.
func fetchNames(s *Session) *names {
	n := &names{servers: map[string][]string{}}
	if reply, err := s.Exec("show stat"); err == nil && !IsError(reply) {
		if t, ok := ParseTable(reply); ok && t.Kind == "stat" {
			for _, r := range t.Rows {
				px, sv := t.Get(r, "pxname"), t.Get(r, "svname")
				switch sv {
				case "FRONTEND":
					n.frontends = append(n.frontends, px)
				case "BACKEND":
					n.backends = append(n.backends, px)
				default:
					n.servers[px] = append(n.servers[px], sv)
				}
			}
		}
	}
	if len(n.backends) == 0 {
		if reply, err := s.Exec("show servers state"); err == nil && !IsError(reply) {
			if t, ok := ParseTable(reply); ok && t.Kind == "servers-state" {
				for _, r := range t.Rows {
					b := t.Get(r, "be_name")
					if len(n.servers[b]) == 0 {
						n.backends = append(n.backends, b)
					}
					n.servers[b] = append(n.servers[b], t.Get(r, "srv_name"))
				}
			}
		}
	}
	if reply, err := s.Exec("show table"); err == nil && !IsError(reply) {
		if t, ok := ParseTable(reply); ok && t.Kind == "table-list" {
			for _, r := range t.Rows {
				n.tables = append(n.tables, r[0])
			}
		}
	}
	return n
}

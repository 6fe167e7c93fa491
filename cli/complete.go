package cli

import (
	"regexp"
	"sort"
	"strings"
	"sync"
)

// Completer completes command lines for the shell. Command words come from
// the server's `help` (fetched once per connection); the arguments of the
// commands that take names are completed from argCompleters, with the
// backend, server, frontend, table, ACL and map names fetched live on each
// Tab (show stat, show table, show acl, show map), and the subcommands of
// `set server` from the server's own usage reply. fulcrumctl's verbs
// (Verbs) complete too. It implements readline.AutoCompleter.
//
// The command list stays the server's (STYLE §6): the table below only
// says what an argument is, for the commands whose usage in `help` does
// not (HAProxy prints "disable health" without its <backend>/<server>).
type Completer struct {
	mu    sync.Mutex // serialises the use of Sess with the shell
	Sess  *Session
	Verbs []Verb
	usage [][]string // the usage of each command, split in words
}

// ArgKind is what a verb's arguments are, for completion.
type ArgKind int

// The kinds of verb arguments.
const (
	ArgNone    ArgKind = iota
	ArgServers         // BACKEND/SERVER or BACKEND/*
	ArgBackend         // a backend name
)

// Verb is one of fulcrumctl's own commands (drain, ready, watch...): the
// shell runs it as the command line does, and completes it.
type Verb struct {
	Name  string   // one or two words: "drain", "cert update"
	Flags []string // for completion: "--wait", "--timeout"
	Args  ArgKind
	// Run runs the verb with the words after its name, on the shell's
	// session, and returns its exit code.
	Run func(args []string) int
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
			if !strings.HasSuffix(cand, "/") && !strings.HasSuffix(cand, ".") {
				suffix += " "
			}
			out = append(out, []rune(suffix))
		}
	}
	return out, len([]rune(partial))
}

// Candidates returns the words that may come after words (the complete
// words typed), whatever the word being typed (partial) starts with: the
// table tests read it.
func (c *Completer) Candidates(line string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	words := strings.Fields(line)
	partial := ""
	if len(words) > 0 && !strings.HasSuffix(line, " ") {
		partial, words = words[len(words)-1], words[:len(words)-1]
	}
	var out []string
	for _, cand := range c.candidates(words, partial) {
		if strings.HasPrefix(cand, partial) {
			out = append(out, cand)
		}
	}
	return out
}

// candidates lists the possible next words after words.
func (c *Completer) candidates(words []string, partial string) []string {
	n := &names{s: c.Sess}
	if v, args := c.verb(words); v != nil {
		return uniqueSorted(verbCandidates(v, args, partial, n))
	}
	if row, done := argCompleterFor(words); row != nil {
		return uniqueSorted(row.complete(done, partial, n))
	}
	if c.usage == nil {
		c.loadHelp()
	}
	var out []string
	if len(words) == 0 {
		for _, v := range c.Verbs {
			out = append(out, strings.Fields(v.Name)[0])
		}
	}
	for _, u := range c.usage {
		if len(u) <= len(words) || !matches(u, words) {
			continue
		}
		tok := u[len(words)]
		if !isPlaceholder(tok) {
			out = append(out, alternatives(tok)...)
			continue
		}
		out = append(out, placeholderNames(tok, partial, n)...)
	}
	if len(words) == 1 {
		for _, v := range c.Verbs {
			if f := strings.Fields(v.Name); len(f) == 2 && f[0] == words[0] {
				out = append(out, f[1])
			}
		}
	}
	return uniqueSorted(out)
}

// verb returns the verb words start with, and the words after its name.
func (c *Completer) verb(words []string) (*Verb, []string) {
	for i := range c.Verbs {
		v := &c.Verbs[i]
		name := strings.Fields(v.Name)
		if len(words) >= len(name) && strings.Join(words[:len(name)], " ") == strings.Join(name, " ") {
			return v, words[len(name):]
		}
	}
	return nil, nil
}

// verbCandidates completes a verb's arguments: its flags after "-", else
// its arguments' names.
func verbCandidates(v *Verb, args []string, partial string, n *names) []string {
	if strings.HasPrefix(partial, "-") {
		return v.Flags
	}
	switch v.Args {
	case ArgServers:
		return serverNames(partial, n, true)
	case ArgBackend:
		if len(args) == 0 {
			return n.Backends()
		}
	}
	return nil
}

func uniqueSorted(in []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range in {
		if s != "" && !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	sort.Strings(out)
	return out
}

// argCompleter completes the arguments of one command.
type argCompleter struct {
	words []string // the command: "set", "server"
	// complete returns the candidates for the next argument, given the
	// arguments already typed (done) and the one being typed.
	complete func(done []string, partial string, n *names) []string
}

// positional completes the arguments by position: the i-th is of kind
// kinds[i]; words past them get nothing.
func positional(kinds ...string) func([]string, string, *names) []string {
	return func(done []string, partial string, n *names) []string {
		if len(done) >= len(kinds) {
			return nil
		}
		return n.of(kinds[len(done)], partial)
	}
}

// completeHistogram: show histogram PROXY|BACKEND/SERVER [TIMING].
func completeHistogram(done []string, partial string, n *names) []string {
	switch len(done) {
	case 0:
		if strings.Contains(partial, "/") {
			return serverNames(partial, n, false)
		}
		return append(n.of("proxy", partial), serverNames(partial, n, false)...)
	case 1:
		return []string{"queue", "connect", "response", "total"}
	}
	return nil
}

// setServerValues are the values of `set server B/S <what>` that are
// words.
var setServerValues = map[string][]string{
	"state":  {"ready", "drain", "maint"},
	"health": {"up", "stopping", "down"},
	"agent":  {"up", "down"},
}

// setServerFallback are `set server`'s subcommands when the server's usage
// reply cannot be read.
var setServerFallback = []string{"addr", "agent", "agent-addr", "agent-port", "agent-send",
	"check-addr", "check-port", "health", "maxconn", "state", "weight"}

// completeSetServer: set server B/S SUBCOMMAND VALUE.
func completeSetServer(done []string, partial string, n *names) []string {
	switch len(done) {
	case 0:
		return serverNames(partial, n, false)
	case 1:
		return n.SetServerSubcommands(done[0])
	case 2:
		return setServerValues[done[1]]
	}
	return nil
}

// tableDataTypes are the stored data of HAProxy's stick tables, as the
// `data.<type>` filters of show/clear table and set table name them.
var tableDataTypes = []string{"server_id", "server_key", "gpt0", "gpc0", "gpc0_rate", "gpc1", "gpc1_rate",
	"conn_cnt", "conn_cur", "conn_rate", "sess_cnt", "sess_rate", "http_req_cnt", "http_req_rate",
	"http_err_cnt", "http_err_rate", "bytes_in_cnt", "bytes_in_rate", "bytes_out_cnt", "bytes_out_rate"}

// tableOps are the operators of a data filter.
var tableOps = []string{"eq", "ne", "le", "ge", "lt", "gt"}

func dataNames() []string {
	out := make([]string, len(tableDataTypes))
	for i, d := range tableDataTypes {
		out[i] = "data." + d
	}
	return out
}

// completeTableFilter: show|clear table NAME [data.TYPE OP VALUE]... | [key KEY].
func completeTableFilter(done []string, partial string, n *names) []string {
	if len(done) == 0 {
		return n.Tables()
	}
	prev := done[len(done)-1]
	switch {
	case strings.HasPrefix(prev, "data."):
		return tableOps
	case prev == "key", slicesContains(tableOps, prev):
		return nil // a value
	case len(done) >= 2 && done[len(done)-2] == "key":
		return nil
	}
	return append(dataNames(), "key")
}

// completeSetTable: set table NAME key KEY [data.TYPE VALUE]...
func completeSetTable(done []string, partial string, n *names) []string {
	switch {
	case len(done) == 0:
		return n.Tables()
	case len(done) == 1:
		return []string{"key"}
	case len(done) == 2:
		return nil
	case (len(done)-3)%2 == 0:
		return dataNames()
	}
	return nil
}

// argCompleters are the commands whose arguments are names, by command.
var argCompleters = []argCompleter{
	{[]string{"enable", "server"}, positional("server")},
	{[]string{"disable", "server"}, positional("server")},
	{[]string{"enable", "health"}, positional("server")},
	{[]string{"disable", "health"}, positional("server")},
	{[]string{"enable", "agent"}, positional("server")},
	{[]string{"disable", "agent"}, positional("server")},
	{[]string{"get", "weight"}, positional("server")},
	{[]string{"set", "weight"}, positional("server")},
	{[]string{"set", "maxconn", "server"}, positional("server")},
	{[]string{"shutdown", "sessions", "server"}, positional("server")},
	{[]string{"set", "server"}, completeSetServer},
	{[]string{"set", "maxconn", "frontend"}, positional("frontend")},
	{[]string{"enable", "frontend"}, positional("frontend")},
	{[]string{"disable", "frontend"}, positional("frontend")},
	{[]string{"shutdown", "frontend"}, positional("frontend")},
	{[]string{"show", "servers", "state"}, positional("backend")},
	{[]string{"show", "servers", "conn"}, positional("backend")},
	{[]string{"show", "queue"}, positional("backend")},
	{[]string{"show", "errors"}, positional("proxy", "request|response")},
	{[]string{"show", "histogram"}, completeHistogram},
	{[]string{"show", "stat"}, func(done []string, partial string, n *names) []string {
		return append(n.of("proxy", partial), "typed", "json", "desc", "up", "no-maint")
	}},
	{[]string{"show", "table"}, completeTableFilter},
	{[]string{"clear", "table"}, completeTableFilter},
	{[]string{"set", "table"}, completeSetTable},
	{[]string{"show", "acl"}, positional("acl")},
	{[]string{"get", "acl"}, positional("acl")},
	{[]string{"add", "acl"}, positional("acl")},
	{[]string{"del", "acl"}, positional("acl")},
	{[]string{"clear", "acl"}, positional("acl")},
	{[]string{"show", "map"}, positional("map")},
	{[]string{"get", "map"}, positional("map")},
	{[]string{"add", "map"}, positional("map")},
	{[]string{"set", "map"}, positional("map")},
	{[]string{"del", "map"}, positional("map")},
	{[]string{"clear", "map"}, positional("map")},
}

// argCompleterFor returns the completer of the command words start with
// (the longest one), and the arguments typed after the command.
func argCompleterFor(words []string) (*argCompleter, []string) {
	var best *argCompleter
	for i := range argCompleters {
		a := &argCompleters[i]
		if len(words) >= len(a.words) && strings.Join(words[:len(a.words)], " ") == strings.Join(a.words, " ") {
			if best == nil || len(a.words) > len(best.words) {
				best = a
			}
		}
	}
	if best == nil {
		return nil, nil
	}
	return best, words[len(best.words):]
}

func slicesContains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
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

// placeholderNames returns the live names a placeholder of `help` stands
// for.
func placeholderNames(tok, partial string, n *names) []string {
	t := strings.ToLower(tok)
	switch {
	case strings.Contains(t, "/<s"): // <bk>/<srv>, <b>/<s>, <backend>/<server>
		return serverNames(partial, n, false)
	case strings.Contains(t, "frontend"), strings.Contains(t, "<fe>"):
		return n.Frontends()
	case strings.Contains(t, "table"):
		return n.Tables()
	case strings.Contains(t, "backend"), strings.Contains(t, "<bk>"), strings.Contains(t, "px"),
		strings.Contains(t, "proxy"), strings.Contains(t, "iid"):
		return n.Backends()
	}
	return nil
}

// serverNames completes BACKEND/SERVER: the backends with a "/" first,
// then, once the backend is typed, its servers (and BACKEND/* with all).
func serverNames(partial string, n *names, all bool) []string {
	if b, _, ok := strings.Cut(partial, "/"); ok {
		var out []string
		for _, s := range n.Servers(b) {
			out = append(out, b+"/"+s)
		}
		if all && len(out) > 0 {
			out = append(out, b+"/*")
		}
		return out
	}
	var out []string
	for _, b := range n.Backends() {
		if len(n.Servers(b)) > 0 {
			out = append(out, b+"/")
		}
	}
	return out
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

// names fetches the objects of the running configuration, each list once
// and only when a completion needs it. Errors (an older server, a
// user-level socket) leave a list empty.
type names struct {
	s                    *Session
	stat, tbl, acl, mp   bool
	backends, frontends  []string
	servers              map[string][]string
	tables, acls, maps   []string
	setServerSubcommands []string
}

// of returns the names of a kind: server, backend, frontend, proxy, acl,
// map, or literal words separated by "|".
func (n *names) of(kind, partial string) []string {
	switch kind {
	case "server":
		return serverNames(partial, n, false)
	case "backend":
		return n.Backends()
	case "frontend":
		return n.Frontends()
	case "proxy":
		return append(append([]string{}, n.Frontends()...), n.Backends()...)
	case "acl":
		n.loadACLs()
		return n.acls
	case "map":
		n.loadMaps()
		return n.maps
	}
	return strings.Split(kind, "|")
}

// Backends returns the backends' names.
func (n *names) Backends() []string { n.loadStat(); return n.backends }

// Frontends returns the frontends' names.
func (n *names) Frontends() []string { n.loadStat(); return n.frontends }

// Servers returns the servers of backend b.
func (n *names) Servers(b string) []string { n.loadStat(); return n.servers[b] }

// Tables returns the stick tables' names.
func (n *names) Tables() []string {
	if !n.tbl {
		n.tbl = true
		if reply, err := n.s.Exec("show table"); err == nil && !IsError(reply) {
			if t, ok := ParseTable(reply); ok && t.Kind == "table-list" {
				for _, r := range t.Rows {
					n.tables = append(n.tables, r[0])
				}
			}
		}
	}
	return n.tables
}

// loadStat reads backends, frontends and servers from show stat, else
// from show servers state.
func (n *names) loadStat() {
	if n.stat {
		return
	}
	n.stat = true
	n.servers = map[string][]string{}
	if reply, err := n.s.Exec("show stat"); err == nil && !IsError(reply) {
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
		if reply, err := n.s.Exec("show servers state"); err == nil && !IsError(reply) {
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
}

// loadACLs reads the ACL ids (#N) and files of `show acl`: "N (file) ...".
func (n *names) loadACLs() {
	if !n.acl {
		n.acl = true
		n.acls = patternSets(n.s, "show acl")
	}
}

// loadMaps reads the map ids and files of `show map`.
func (n *names) loadMaps() {
	if !n.mp {
		n.mp = true
		n.maps = patternSets(n.s, "show map")
	}
}

// patternSet matches a line of `show acl` or `show map`: its id and file.
var patternSet = regexp.MustCompile(`^(\d+) \(([^)]*)\)`)

// patternSets returns "#N" for each set the command lists, and its file
// when it has one.
func patternSets(s *Session, cmd string) []string {
	reply, err := s.Exec(cmd)
	if err != nil || IsError(reply) {
		return nil
	}
	var out []string
	for _, l := range strings.Split(reply, "\n") {
		if m := patternSet.FindStringSubmatch(l); m != nil {
			out = append(out, "#"+m[1])
			if m[2] != "" {
				out = append(out, m[2])
			}
		}
	}
	return out
}

// setServerWord matches the subcommands in `set server`'s usage reply
// ("usage: set server <backend>/<server> addr | agent | ...") or in
// HAProxy's ("... only supports 'agent', 'health', ...").
var setServerWord = regexp.MustCompile(`'([a-z-]+)'|\b([a-z][a-z-]*)\b`)

// SetServerSubcommands returns the subcommands `set server B/S` takes at
// the session's level, as the server's usage reply lists them.
func (n *names) SetServerSubcommands(server string) []string {
	if n.setServerSubcommands != nil {
		return n.setServerSubcommands
	}
	n.setServerSubcommands = setServerFallback
	reply, err := n.s.Exec("set server " + server)
	if err != nil {
		return n.setServerSubcommands
	}
	first, _, _ := strings.Cut(reply, "\n")
	var out []string
	switch {
	case strings.HasPrefix(first, "usage: set server "):
		_, list, _ := strings.Cut(strings.TrimPrefix(first, "usage: set server "), " ")
		for _, w := range strings.Split(list, "|") {
			if w = strings.TrimSpace(w); w != "" {
				out = append(out, w)
			}
		}
	case strings.Contains(first, "only supports"):
		_, list, _ := strings.Cut(first, "only supports")
		for _, m := range setServerWord.FindAllStringSubmatch(list, -1) {
			if m[1] != "" {
				out = append(out, m[1])
			}
		}
	}
	if len(out) > 0 {
		n.setServerSubcommands = out
	}
	return n.setServerSubcommands
}

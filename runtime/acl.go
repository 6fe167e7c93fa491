package runtime

import (
	"strconv"
	"strings"

	"github.com/fulcrum-proxy/fulcrum/proxy/acl"
)

// ACL commands (HAProxy's map.c cli_kws for acls): list the pattern sets,
// dump, test and change one. A set is named "#<id>" (its number in `show
// acl`) or by the file it was loaded from (-f), and a change applies from
// the next request on.
//
// Levels: the reads are user level, as in HAProxy. HAProxy 2.6 does not
// check the level of the edits at all (levels.txt), so a user socket could
// unblock an address; fulcrum requires operator for add, del and clear, as
// the Runtime API issue asks (user may only read).
var aclCommands = []Command{
	{Words: []string{"show", "acl"}, Level: LevelUser, Usage: "show acl [@<ver>] <acl>]", Help: "report available acls or dump an acl's contents", Run: showACL},
	{Words: []string{"get", "acl"}, Level: LevelUser, Usage: "get acl <acl> <value>", Help: "report the patterns matching a sample for an ACL", Run: getACL},
	{Words: []string{"add", "acl"}, Level: LevelOperator, Usage: "add acl [@<ver>] <acl> <pattern>", Help: "add an acl entry", Run: addACL},
	{Words: []string{"del", "acl"}, Level: LevelOperator, Usage: "del acl <acl> [<key>|#<ref>]", Help: "delete acl entries matching <key>", Run: delACL},
	{Words: []string{"clear", "acl"}, Level: LevelOperator, Usage: "clear acl [@<ver>] <acl>", Help: "clear the contents of this acl", Run: clearACL},
}

// Replies of the ACL commands, with HAProxy's texts. `del acl` names the
// ACL a map, as HAProxy 2.6 does.
var (
	errUnknownACL    = reply("Unknown ACL identifier. Please use #<id> or <file>.")
	errUnknownACLDel = reply("Unknown map identifier. Please use #<id> or <file>.")
	errKeyNotFound   = reply("Key not found.")
)

// findACL returns the set named name ("#<id>" or a file), nil if none.
func findACL(c *Context, name string) *acl.Set {
	reg := c.Proxy.ACL()
	if reg == nil || name == "" {
		return nil
	}
	return reg.Lookup(name)
}

// showACL lists the sets, or dumps one set's entries, each as its id in
// HAProxy's pointer form and its pattern.
func showACL(c *Context, args []string) error {
	if name := arg(args, 0); name != "" {
		set := findACL(c, name)
		if set == nil {
			return errUnknownACL
		}
		for _, e := range set.Entries() {
			c.Printf("0x%x %s\n", e.ID, e.Pattern)
		}
		return nil
	}
	c.Printf("# id (file) description\n")
	if reg := c.Proxy.ACL(); reg != nil {
		for _, s := range reg.Sets() {
			c.Printf("%d (%s) %s curr_ver=0 next_ver=0 entry_cnt=%d\n", s.ID(), s.File(), s.Description(), s.Len())
		}
	}
	return nil
}

// getACL matches a value against a set as the ACL reading it does.
func getACL(c *Context, args []string) error {
	if arg(args, 0) == "" || arg(args, 1) == "" {
		return reply("Missing ACL identifier and/or key.")
	}
	set := findACL(c, args[0])
	if set == nil {
		return errUnknownACL
	}
	kind, icase := set.MatchKind()
	cs := "sensitive"
	if icase {
		cs = "insensitive"
	}
	pattern, ok := set.Lookup(args[1])
	if !ok {
		c.Printf("type=%s, case=%s, match=no\n", kind, cs)
		return nil
	}
	// HAProxy indexes ip patterns, and exact and prefix strings matched
	// with case, in trees; the others are lists.
	idx := "list"
	if kind == "ip" || (!icase && (kind == "str" || kind == "beg")) {
		idx = "tree"
	}
	c.Printf("type=%s, case=%s, match=yes, idx=%s, pattern=\"%s\"\n", kind, cs, idx, pattern)
	return nil
}

// addACL adds one pattern, or one per line of the payload (`add acl <acl>
// <<`). Patterns are checked one by one: those before a bad one stay, as
// in HAProxy.
func addACL(c *Context, args []string) error {
	name, pattern := arg(args, 0), arg(args, 1)
	var patterns []string
	switch {
	case name != "" && pattern != "":
		patterns = []string{pattern}
	case name != "" && c.Payload != "":
		for l := range strings.SplitSeq(c.Payload, "\n") {
			if l = strings.TrimSpace(l); l != "" {
				patterns = append(patterns, l)
			}
		}
	default:
		return reply("'add acl' expects two parameters: ACL identifier and pattern.")
	}
	set := findACL(c, name)
	if set == nil {
		return errUnknownACL
	}
	for _, p := range patterns {
		e, err := set.Add(p)
		if err != nil {
			// HAProxy's CLI ends a pattern's parse error with a period.
			msg := err.Error()
			if !strings.HasSuffix(msg, ".") {
				msg += "."
			}
			return reply(msg)
		}
		c.Changed().Str("acl", aclName(set)).Str("pattern", p).Str("entry", "0x"+strconv.FormatUint(e.ID, 16)).
			Int("entries", set.Len()).Msg("acl entry added")
	}
	return nil
}

// delACL removes every entry whose pattern is the key, or the entry
// "#0x<id>" that `show acl` printed.
func delACL(c *Context, args []string) error {
	name, key := arg(args, 0), arg(args, 1)
	if name == "" || key == "" {
		return reply("This command expects two parameters: ACL identifier and key.")
	}
	set := findACL(c, name)
	if set == nil {
		return errUnknownACLDel
	}
	var ok bool
	if ref, isRef := strings.CutPrefix(key, "#0x"); isRef {
		id, err := strconv.ParseUint(ref, 16, 64)
		ok = err == nil && set.DelID(id)
	} else {
		ok = set.Del(key)
	}
	if !ok {
		return errKeyNotFound
	}
	// The key is what an operator adds back to undo.
	c.Changed().Str("acl", aclName(set)).Str("pattern", key).Int("entries", set.Len()).Msg("acl entry deleted")
	return nil
}

// clearACL removes every entry of a set. The log line lists them, so that
// the operator can add them back.
func clearACL(c *Context, args []string) error {
	name := arg(args, 0)
	if name == "" {
		return reply("'clear acl' expects an ACL identifier.")
	}
	set := findACL(c, name)
	if set == nil {
		return errUnknownACL
	}
	old := set.Entries()
	set.Clear()
	if len(old) > 0 {
		prev := make([]string, len(old))
		for i, e := range old {
			prev[i] = e.Pattern
		}
		c.Changed().Str("acl", aclName(set)).Strs("previous_patterns", prev).Msg("acl cleared")
	}
	return nil
}

// aclName names a set in change logs: "#<id>" and its file, if any.
func aclName(s *acl.Set) string {
	if s.File() == "" {
		return "#" + strconv.Itoa(s.ID())
	}
	return "#" + strconv.Itoa(s.ID()) + " (" + s.File() + ")"
}

package runtime

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/fulcrum-proxy/fulcrum/proxy/stick"
)

// Stick table commands (HAProxy's stick_table.c cli_kws): show, clear and
// set table share one handler, tableCommand, which gets the action as a
// value, as HAProxy's cli_parse_table_req. Replies and their order of
// checks are HAProxy 2.6's (reference: show-table.txt, set-clear-table.txt,
// errors.txt, permissions.txt).
//
// Levels: the commands are user level, because HAProxy lets a user list
// the tables, see a table's header and send a bare `clear table <name>`
// (which then removes nothing). What a user may not do is part of the
// reply, not of the command: the contents of a table are replaced by
// "# contents not dumped due to insufficient privileges", a key lookup,
// set or clear is "Permission denied", and a bare or filtered clear
// removes nothing. Those checks live in tableCommand, in one place.
var tableCommands = []Command{
	{Words: []string{"show", "table"}, Level: LevelUser, Usage: "show table <table> [<filter>]*", Help: "report table usage stats or dump this table's contents (filter: data/key)", Run: tableAction(tableShow)},
	{Words: []string{"clear", "table"}, Level: LevelUser, Usage: "clear table <table> [<filter>]*", Help: "remove an entry from a table (filter: data/key)", Run: tableAction(tableClear)},
	{Words: []string{"set", "table"}, Level: LevelUser, Usage: "set table <table> key <k> [data.* <v>]*", Help: "update or create a table entry's data", Run: tableAction(tableSet)},
}

// tableVerb is the action of a table command.
type tableVerb uint8

const (
	tableShow tableVerb = iota
	tableClear
	tableSet
)

// maxTableFilters is HAProxy's STKTABLE_FILTER_LEN.
const maxTableFilters = 4

func tableAction(v tableVerb) func(*Context, []string) error {
	return func(c *Context, args []string) error { return tableCommand(c, v, args) }
}

// errTableArgs returns the usage reply of verb for bad arguments.
func errTableArgs(v tableVerb) error {
	switch v {
	case tableShow:
		return reply(`Optional argument only supports "data.<store_data_type>" <operator> <value> and key <key>`)
	case tableClear:
		return reply(`Required arguments: <table> "data.<store_data_type>" <operator> <value> or <table> key <key>`)
	}
	return reply(`Required arguments: <table> key <key> [data.<store_data_type> <value>]*`)
}

// tableCommand runs show, clear or set table. args are the words after
// the command's two.
func tableCommand(c *Context, v tableVerb, args []string) error {
	name := arg(args, 0)
	if name == "" {
		if v != tableShow {
			return errTableArgs(v)
		}
		var b []byte
		for _, t := range c.Proxy.Tables() {
			b = t.AppendHeader(b)
		}
		_, err := c.Write(b)
		return err
	}
	t := c.Proxy.Table(name)
	if t == nil {
		return reply("No such table")
	}
	oper := c.Level() >= LevelOperator
	switch w := arg(args, 1); {
	case w == "key":
		return tableKey(c, v, t, args[2:], oper)
	case strings.HasPrefix(w, "data."):
		if v == tableSet {
			return reply(`content-based lookup is only supported with the "show" and "clear" actions`)
		}
		filters, err := tableFilters(t, args)
		if err != nil {
			return err
		}
		return tableAll(c, v, t, filters, oper)
	case w != "":
		return errTableArgs(v)
	}
	if v == tableSet {
		// HAProxy 2.6: `set table <name>` alone empties the table.
		if oper {
			t.Clear(nil, nil)
		}
		return nil
	}
	return tableAll(c, v, t, nil, oper)
}

// tableFilters parses up to four "data.<type> <op> <value>" filters from
// args[1:] (args[0] is the table), as table_prepare_data_request.
func tableFilters(t *stick.Table, args []string) ([]stick.Filter, error) {
	var fs []stick.Filter
	i := 0
	for ; i < maxTableFilters; i++ {
		w := arg(args, 1+3*i)
		if i > 0 && w == "" {
			break
		}
		d, ok := stick.DataTypeByName(strings.TrimPrefix(w, "data."))
		if !ok || !strings.HasPrefix(w, "data.") {
			return nil, replyf("Filter entry #%d: Unknown data type", i+1)
		}
		if !t.Stores(d) {
			return nil, replyf("Filter entry #%d: Data type not stored in this table", i+1)
		}
		op, ok := stick.ParseOp(arg(args, 2+3*i))
		if !ok {
			return nil, replyf(`Filter entry #%d: Require and operator among "eq", "ne", "le", "ge", "lt", "gt"`, i+1)
		}
		n, err := strconv.ParseInt(arg(args, 3+3*i), 10, 64)
		if err != nil {
			return nil, replyf("Filter entry #%d: Require a valid integer value to compare against", i+1)
		}
		fs = append(fs, stick.Filter{Type: d, Op: op, Value: n})
	}
	if w := arg(args, 1+3*i); w != "" {
		// HAProxy counts words from "show" (its args[0]).
		return nil, replyf("Detected extra data in filter, %s word of input, after '%s'", ordinal(3+3*i+1), arg(args, 3*i))
	}
	return fs, nil
}

// ordinal returns n with its English suffix, as HAProxy's "%ith" (always
// "th").
func ordinal(n int) string { return fmt.Sprintf("%dth", n) }

// tableAll shows or clears every entry passing filters.
func tableAll(c *Context, v tableVerb, t *stick.Table, filters []stick.Filter, oper bool) error {
	if v == tableClear {
		if oper {
			t.Clear(filters, nil)
		}
		return nil
	}
	b := t.AppendHeader(nil)
	if !oper {
		b = append(b, "# contents not dumped due to insufficient privileges\n"...)
	} else {
		for _, e := range t.Entries(filters, nil) {
			b = t.AppendEntry(b, e)
		}
	}
	_, err := c.Write(b)
	return err
}

// tableKey runs a key action (table_process_entry_per_key): args are the
// words after "key".
func tableKey(c *Context, v tableVerb, t *stick.Table, args []string, oper bool) error {
	text := arg(args, 0)
	if text == "" {
		return reply("Key value expected")
	}
	if t.Type() == stick.KeyBinary {
		switch v {
		case tableShow:
			return reply("Showing keys from tables of type other than ip, ipv6, string and integer is not supported")
		case tableClear:
			return reply("Removing keys from tables of type other than ip, ipv6, string and integer is not supported")
		}
		return reply("Inserting keys into tables of type other than ip, ipv6, string and integer is not supported")
	}
	k, err := t.ParseKey(text)
	if err != nil {
		return reply("Invalid key")
	}
	if !oper {
		return errPermission
	}
	switch v {
	case tableShow:
		es := t.Entries(nil, &k)
		if len(es) == 0 {
			return nil
		}
		_, err := c.Write(t.AppendEntry(t.AppendHeader(nil), es[0]))
		return err
	case tableClear:
		if len(t.Entries(nil, &k)) > 0 && t.Clear(nil, &k) == 0 {
			return reply("Entry currently in use, cannot remove")
		}
		return nil
	}
	// set: assignments before a failing word are kept, as HAProxy 2.6.
	var values []stick.Assign
	var fail error
	for i := 1; arg(args, i) != ""; i += 2 {
		w := arg(args, i)
		if !strings.HasPrefix(w, "data.") {
			fail = reply(`"data.<type>" followed by a value expected`)
			break
		}
		d, ok := stick.DataTypeByName(w[len("data."):])
		if !ok {
			fail = reply("Unknown data type")
			break
		}
		if !t.Stores(d) {
			fail = reply("Data type not stored in this table")
			break
		}
		n, err := strconv.ParseInt(arg(args, i+1), 10, 64)
		if err != nil {
			fail = reply("Require a valid integer value to store")
			break
		}
		values = append(values, stick.Assign{Type: d, Value: n})
	}
	if !t.Set(k, values) {
		return reply("Unable to allocate a new entry")
	}
	return fail
}

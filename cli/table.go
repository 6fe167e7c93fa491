package cli

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"
)

// Table is a reply the client recognised as tabular: the columns as the
// server names them and the rows with the server's values, untouched
// (JSON output prints exactly these). Kind names the layout: "stat" (CSV
// with a "# pxname,svname,..." header), "servers-state", "table-list",
// "table-dump", or "columns" (any "# a b c" header over blank-separated
// rows: show backend, show cli sockets, show queue...).
type Table struct {
	Kind    string
	Columns []string
	Rows    [][]string
	// Title is a line printed above the table: a stick table's name,
	// type, size and use.
	Title string
	// Notes are lines printed below it ("# contents not dumped...").
	Notes []string
	// Merged says that the rows are a fleet's: each ends with its
	// instance's name, in the last column (InstanceColumn).
	Merged bool

	trailingComma bool // a CSV reply whose lines end with ',' (HAProxy's)
}

// Col returns the index of the column name, or -1.
func (t *Table) Col(name string) int {
	for i, c := range t.Columns {
		if c == name {
			return i
		}
	}
	return -1
}

// Get returns row's value in the column name, "" when there is none.
func (t *Table) Get(row []string, name string) string {
	if i := t.Col(name); i >= 0 && i < len(row) {
		return row[i]
	}
	return ""
}

// ParseTable recognises the tabular replies; ok is false for anything
// else (show info, errors, free text).
func ParseTable(reply string) (*Table, bool) {
	lines := strings.Split(strings.TrimRight(reply, "\n"), "\n")
	if len(lines) == 0 || lines[0] == "" {
		return nil, false
	}
	// show servers state: a version line, then a "# " header.
	if len(lines) >= 2 && isDigits(lines[0]) && strings.HasPrefix(lines[1], "# be_id ") {
		t := spaced("servers-state", lines[1], lines[2:])
		return t, true
	}
	first := lines[0]
	if !strings.HasPrefix(first, "# ") {
		return nil, false
	}
	if strings.HasPrefix(first, "# table: ") {
		return parseStickTable(lines)
	}
	if strings.Contains(first, ",") {
		r := csv.NewReader(strings.NewReader(strings.TrimPrefix(reply, "# ")))
		r.FieldsPerRecord = -1
		recs, err := r.ReadAll()
		if err != nil || len(recs) == 0 {
			return nil, false
		}
		cols := recs[0]
		// HAProxy ends every line with a comma: an unnamed last column.
		trailing := len(cols) > 0 && cols[len(cols)-1] == ""
		if trailing {
			cols = cols[:len(cols)-1]
		}
		t := &Table{Kind: "columns", Columns: cols, trailingComma: trailing}
		if len(cols) > 1 && cols[0] == "pxname" && cols[1] == "svname" {
			t.Kind = "stat"
		}
		for _, rec := range recs[1:] {
			t.Rows = append(t.Rows, fit(rec, len(cols)))
		}
		return t, true
	}
	if strings.HasPrefix(first, "# bkname/svname ") {
		return spaced("servers-conn", first, lines[1:]), true
	}
	return spaced("columns", first, lines[1:]), true
}

// ParseReply is ParseTable knowing the command that got the reply: the
// reply of `show table NAME` is a table's entries even when it has none
// (its header line alone reads like the list of `show table`).
func ParseReply(cmd, reply string) (*Table, bool) {
	t, ok := ParseTable(reply)
	if !ok || t.Kind != "table-list" {
		return t, ok
	}
	words := strings.Fields(cmd)
	if len(words) >= 3 && words[0] == "show" && words[1] == "table" && len(t.Rows) == 1 {
		dump := &Table{Kind: "table-dump", Columns: []string{"ptr", "key", "use", "exp"}, Title: tableTitle(t.Rows[0])}
		for _, l := range strings.Split(reply, "\n") {
			if strings.HasPrefix(l, "# ") && !strings.HasPrefix(l, "# table: ") {
				dump.Notes = append(dump.Notes, l)
			}
		}
		return dump, true
	}
	return t, ok
}

// tableTitle is the line above a stick table's entries, from the fields of
// its `# table:` line.
func tableTitle(row []string) string {
	return fmt.Sprintf("table %s: type %s, size %s, used %s", row[0], row[1], row[2], row[3])
}

// spaced parses a "# a b c" header over blank-separated rows; surplus
// fields are joined into the last column.
func spaced(kind, header string, rows []string) *Table {
	t := &Table{Kind: kind, Columns: strings.Fields(strings.TrimPrefix(header, "# "))}
	n := len(t.Columns)
	for _, l := range rows {
		if strings.TrimSpace(l) == "" {
			continue
		}
		f := strings.Fields(l)
		if len(f) > n && n > 0 {
			f = append(f[:n-1], strings.Join(f[n-1:], " "))
		}
		t.Rows = append(t.Rows, fit(f, n))
	}
	return t
}

// parseStickTable reads `show table` (one "# table: NAME, type: T,
// size:N, used:N" line per table) and `show table NAME` (that line, then
// "0xPTR: key=K use=U exp=E data=V..." entries).
func parseStickTable(lines []string) (*Table, bool) {
	var entries []string
	var heads, notes []string
	for _, l := range lines {
		switch {
		case strings.HasPrefix(l, "# table: "):
			heads = append(heads, l)
		case strings.HasPrefix(l, "# "):
			notes = append(notes, l) // "# contents not dumped due to insufficient privileges"
		case strings.TrimSpace(l) != "":
			entries = append(entries, l)
		}
	}
	list := &Table{Kind: "table-list", Columns: []string{"table", "type", "size", "used"}}
	for _, h := range heads {
		row := make([]string, 4)
		for i, f := range strings.Split(strings.TrimPrefix(h, "# "), ",") {
			if i >= 4 {
				break
			}
			_, v, _ := strings.Cut(f, ":")
			row[i] = strings.TrimSpace(v)
		}
		list.Rows = append(list.Rows, row)
	}
	if len(entries) == 0 && len(notes) == 0 {
		return list, true
	}
	t := &Table{Kind: "table-dump", Columns: []string{"ptr"}, Notes: notes}
	if len(list.Rows) == 1 {
		t.Title = tableTitle(list.Rows[0])
	}
	if len(entries) == 0 {
		t.Columns = []string{"ptr", "key", "use", "exp"}
		return t, true
	}
	var rows []map[string]string
	for _, e := range entries {
		ptr, rest, ok := strings.Cut(e, ": ")
		if !ok {
			return nil, false
		}
		m := map[string]string{"ptr": ptr}
		for _, kv := range strings.Fields(rest) {
			k, v, _ := strings.Cut(kv, "=")
			if t.Col(k) < 0 {
				t.Columns = append(t.Columns, k)
			}
			m[k] = v
		}
		rows = append(rows, m)
	}
	for _, m := range rows {
		row := make([]string, len(t.Columns))
		for i, c := range t.Columns {
			row[i] = m[c]
		}
		t.Rows = append(t.Rows, row)
	}
	return t, true
}

func fit(f []string, n int) []string {
	if len(f) >= n {
		return f[:n]
	}
	return append(f, make([]string, n-len(f))...)
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// view is one displayed column: a title, how to get its value, and its
// rank: when the table is wider than the screen, the columns of the
// highest rank go first (rank 0 is never dropped).
type view struct {
	title string
	get   func(t *Table, row []string) string
	rank  int
}

func col(title, name string, rank int) view {
	return view{title, func(t *Table, row []string) string { return t.Get(row, name) }, rank}
}

// limit renders a "current/limit" pair, with HAProxy's "-" for a limit
// that is not set (unlimited), as its stats page does.
func limit(cur, lim string) string {
	if lim == "" || lim == "0" || lim == "-1" {
		lim = "-"
	}
	return cur + "/" + lim
}

// statViews are the columns of `show stat` worth a glance, most useful
// first; --raw and --json give all of them. The first column holds
// frontend and backend names alike: HAProxy's pxname, the proxy.
var statViews = []view{
	col("PROXY", "pxname", 0),
	col("SERVER", "svname", 0),
	col("STATUS", "status", 0),
	col("WEIGHT", "weight", 1),
	{"SESS", func(t *Table, row []string) string { return limit(t.Get(row, "scur"), t.Get(row, "slim")) }, 1},
	col("QUEUE", "qcur", 2),
	col("RATE", "rate", 3),
	col("LBTOT", "lbtot", 4),
	col("CHECK", "check_status", 2),
	{"LASTCHG", func(t *Table, row []string) string { return seconds(t.Get(row, "lastchg")) }, 3},
}

// opStates names srv_op_state (HAProxy's enum srv_state, SRV_ST_*).
var opStates = map[string]string{"0": "STOPPED", "1": "STARTING", "2": "RUNNING", "3": "STOPPING"}

// adminBits names the bits of srv_admin_state (HAProxy's SRV_ADMF_*):
// forced maintenance, inherited from a tracked server, from the
// configuration, forced drain, inherited drain, from DNS resolution,
// FQDN set from the CLI.
var adminBits = []struct {
	bit  int
	name string
}{
	{0x01, "MAINT"}, {0x02, "MAINT(via)"}, {0x04, "MAINT(config)"}, {0x08, "DRAIN"},
	{0x10, "DRAIN(via)"}, {0x20, "MAINT(dns)"}, {0x40, "FQDN(cli)"},
}

// adminState names an srv_admin_state mask: READY for 0.
func adminState(v string) string {
	n, err := strconv.Atoi(v)
	if err != nil {
		return v
	}
	if n == 0 {
		return "READY"
	}
	if n&0x04 != 0 {
		n &^= 0x01 // a server disabled in the configuration has both bits: one name says it
	}
	var names []string
	for _, b := range adminBits {
		if n&b.bit != 0 {
			names = append(names, b.name)
			n &^= b.bit
		}
	}
	if n != 0 {
		names = append(names, "0x"+strconv.FormatInt(int64(n), 16))
	}
	return strings.Join(names, "+")
}

// checkStatuses names srv_check_status (HAProxy's HCHK_STATUS_*, as the
// stats' check_status column spells them).
var checkStatuses = []string{"UNK", "INI", "START", "CHECKED", "HANA", "SOCKERR", "L4OK", "L4TOUT",
	"L4CON", "L6OK", "L6TOUT", "L6RSP", "L7TOUT", "L7RSP", "L57DATA", "L7OK", "L7OKC", "L7STS",
	"PROCERR", "PROCTOUT", "PROCOK"}

// checkStatus names a server's check status, "-" when it has no check
// (check state 0: not configured).
func checkStatus(status, state string) string {
	if state == "0" || state == "" {
		return "-"
	}
	if n, err := strconv.Atoi(status); err == nil && n >= 0 && n < len(checkStatuses) {
		return checkStatuses[n]
	}
	return status
}

// orDash shows an empty or "-" value as "-".
func orDash(v string) string {
	if v == "" {
		return "-"
	}
	return v
}

// serversStateViews are `show servers state`'s columns, named: states
// instead of their numbers, address and port together.
var serversStateViews = []view{
	col("BACKEND", "be_name", 0),
	col("SERVER", "srv_name", 0),
	{"STATE", func(t *Table, r []string) string {
		return cmpOr(opStates[t.Get(r, "srv_op_state")], t.Get(r, "srv_op_state"))
	}, 0},
	{"ADMIN", func(t *Table, r []string) string { return adminState(t.Get(r, "srv_admin_state")) }, 0},
	col("WEIGHT", "srv_uweight", 1),
	{"ADDRESS", func(t *Table, r []string) string { return hostPort(t.Get(r, "srv_addr"), t.Get(r, "srv_port")) }, 1},
	{"CHECK", func(t *Table, r []string) string {
		return checkStatus(t.Get(r, "srv_check_status"), t.Get(r, "srv_check_state"))
	}, 2},
	{"LASTCHG", func(t *Table, r []string) string { return seconds(t.Get(r, "srv_time_since_last_change")) }, 3},
	col("INITIAL", "srv_iweight", 4),
	col("HEALTH", "srv_check_health", 5),
	{"AGENT", func(t *Table, r []string) string {
		if t.Get(r, "srv_agent_state") == "0" {
			return "-"
		}
		return hostPort(cmpOr(orNone(t.Get(r, "srv_agent_addr")), "*"), t.Get(r, "srv_agent_port"))
	}, 6},
	{"CHECK_PORT", func(t *Table, r []string) string {
		if p := t.Get(r, "srv_check_port"); p != "0" && p != "" {
			return p
		}
		return "-"
	}, 7},
	{"FQDN", func(t *Table, r []string) string { return orDash(t.Get(r, "srv_fqdn")) }, 8},
}

// serversConnViews are `show servers conn`'s columns, named.
var serversConnViews = []view{
	col("SERVER", "bkname/svname", 0),
	{"ADDRESS", func(t *Table, r []string) string { return hostPort(t.Get(r, "addr"), t.Get(r, "port")) }, 1},
	col("USED", "used_cur", 0),
	col("USED_MAX", "used_max", 1),
	col("IDLE", "idle_cur", 1),
	col("SAFE", "safe_nb", 2),
	col("UNSAFE", "unsafe_nb", 2),
	{"IDLE_LIMIT", func(t *Table, r []string) string {
		if v := t.Get(r, "idle_lim"); v != "-1" {
			return v
		}
		return "-"
	}, 3},
	col("NEED_EST", "need_est", 4),
	{"PURGE", func(t *Table, r []string) string { return millis(t.Get(r, "purge_delay")) }, 5},
	col("IDS", "bkid/svid", 6),
}

// hostPort joins an address and a port ("127.0.0.1:80"), leaving out what
// is missing.
func hostPort(host, port string) string {
	host = orNone(host)
	switch {
	case port == "" || port == "0" || port == "-":
		return orDash(host)
	case strings.Contains(host, ":"):
		return "[" + host + "]:" + port
	}
	return host + ":" + port
}

// orNone turns HAProxy's "-" for an empty string back into "".
func orNone(v string) string {
	if v == "-" {
		return ""
	}
	return v
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// firstColumns puts the most useful columns of a layout first and renames
// them; the others follow in the server's order, upper-cased.
var firstColumns = map[string][][2]string{
	"table-dump": {{"key", "KEY"}, {"use", "USE"}, {"exp", "EXP"}},
	"columns": {
		{"backend", "BACKEND"}, {"server", "SERVER"}, {"queued", "QUEUED"}, {"name", "NAME"},
	},
}

// views returns the displayed columns of t: a fleet's instance first.
func (t *Table) views() []view {
	vs := t.kindViews()
	if t.Merged {
		vs = append([]view{col("INSTANCE", InstanceColumn, 0)}, vs...)
	}
	return vs
}

// kindViews returns the displayed columns of t's kind of reply.
func (t *Table) kindViews() []view {
	switch t.Kind {
	case "stat":
		return statViews
	case "servers-state":
		return serversStateViews
	case "servers-conn":
		return serversConnViews
	}
	var vs []view
	used := map[string]bool{}
	for _, fc := range firstColumns[t.Kind] {
		if t.Col(fc[0]) >= 0 || t.Kind == "table-dump" {
			v := col(fc[1], fc[0], 0)
			if fc[0] == "exp" {
				v.get = func(t *Table, r []string) string { return expiry(t.Get(r, "exp")) }
			}
			vs = append(vs, v)
			used[fc[0]] = true
		}
	}
	for i, c := range t.Columns {
		if !used[c] && !(t.Kind == "table-dump" && c == "ptr") && !(t.Merged && i == len(t.Columns)-1) {
			vs = append(vs, col(dataTitle(c), c, 1+i))
		}
	}
	return vs
}

// dataTitle is a column's title: upper case, with a rate's period in
// milliseconds as a duration ("HTTP_REQ_RATE(10s)").
func dataTitle(c string) string {
	if name, period, ok := strings.Cut(c, "("); ok && strings.HasSuffix(period, ")") {
		return strings.ToUpper(name) + "(" + millis(strings.TrimSuffix(period, ")")) + ")"
	}
	return strings.ToUpper(c)
}

// millis renders milliseconds as a duration ("5000" is "5s").
func millis(v string) string {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return v
	}
	return (time.Duration(n) * time.Millisecond).String()
}

// expiry renders a stick-table entry's exp (milliseconds left) as a
// duration to the second, "-" for 0 (a table without expire).
func expiry(v string) string {
	n, err := strconv.ParseInt(v, 10, 64)
	switch {
	case err != nil || n < 0:
		return v
	case n == 0:
		return "-"
	}
	return seconds(strconv.FormatInt(n/1000, 10))
}

// seconds renders a count of seconds as 45s, 3m20s, 2h5m or 3d4h.
func seconds(s string) string {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return s
	}
	switch {
	case n < 60:
		return strconv.Itoa(n) + "s"
	case n < 3600:
		return strconv.Itoa(n/60) + "m" + strconv.Itoa(n%60) + "s"
	case n < 86400:
		return strconv.Itoa(n/3600) + "h" + strconv.Itoa(n%3600/60) + "m"
	}
	return strconv.Itoa(n/86400) + "d" + strconv.Itoa(n%86400/3600) + "h"
}

// fitWidth drops the columns of the highest rank, one rank at a time, until the
// table is at most width columns wide (two spaces between columns). Rank 0
// columns always stay.
func fitWidth(vs []view, cells [][]string, width int) ([]view, [][]string) {
	if width <= 0 {
		return vs, cells
	}
	for {
		w := make([]int, len(vs))
		for i, v := range vs {
			w[i] = displayWidth(v.title)
		}
		for _, row := range cells {
			for i, c := range row {
				w[i] = max(w[i], displayWidth(c))
			}
		}
		total, top := 0, 0
		for i := range vs {
			total += w[i]
			if i > 0 {
				total += 2
			}
			top = max(top, vs[i].rank)
		}
		if total <= width || top == 0 {
			return vs, cells
		}
		var keep []int
		for i, v := range vs {
			if v.rank != top {
				keep = append(keep, i)
			}
		}
		nv := make([]view, len(keep))
		for j, i := range keep {
			nv[j] = vs[i]
		}
		nc := make([][]string, len(cells))
		for r, row := range cells {
			nc[r] = make([]string, len(keep))
			for j, i := range keep {
				nc[r][j] = row[i]
			}
		}
		vs, cells = nv, nc
	}
}

// displayWidth is the number of terminal columns s takes.
func displayWidth(s string) int { return len([]rune(s)) }

// Render writes t as an aligned table without borders, its title (a
// stick table's type, size and use) above. With colour, the status
// columns are coloured (green up, red down, yellow drain, blue
// maintenance). width > 0 is the screen's width: the least useful columns
// are left out until the table fits, and lines still wider are cut.
func (t *Table) Render(colour bool, width int) string {
	vs := t.views()
	cells := make([][]string, len(t.Rows))
	for r, row := range t.Rows {
		cells[r] = make([]string, len(vs))
		for i, v := range vs {
			cells[r][i] = v.get(t, row)
		}
	}
	vs, cells = fitWidth(vs, cells, width)
	var buf bytes.Buffer
	tb := tablewriter.NewTable(&buf,
		tablewriter.WithRenderer(renderer.NewBlueprint(tw.Rendition{
			Borders: tw.BorderNone,
			Symbols: tw.NewSymbols(tw.StyleNone),
			Settings: tw.Settings{
				Separators: tw.Separators{BetweenColumns: tw.Off, BetweenRows: tw.Off},
				Lines:      tw.Lines{ShowHeaderLine: tw.Off},
			},
		})),
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithHeaderAlignment(tw.AlignLeft),
		tablewriter.WithRowAlignment(tw.AlignLeft),
		tablewriter.WithHeaderAutoWrap(tw.WrapNone),
		tablewriter.WithRowAutoWrap(tw.WrapNone),
		tablewriter.WithPadding(tw.Padding{Right: "  ", Overwrite: true}),
	)
	head := make([]any, len(vs))
	for i, v := range vs {
		head[i] = v.title
	}
	tb.Header(head...)
	for _, row := range cells {
		if colour {
			for i, v := range vs {
				if v.title == "STATUS" || v.title == "STATE" || v.title == "ADMIN" {
					row[i] = paint(row[i])
				}
			}
		}
		tb.Append(row)
	}
	tb.Render()
	var out strings.Builder
	if t.Title != "" {
		out.WriteString(cut(t.Title, width) + "\n")
	}
	for _, l := range strings.Split(strings.TrimRight(buf.String(), "\n"), "\n") {
		l = strings.TrimRight(l, " ")
		if width > 0 {
			l = cut(l, width)
		}
		out.WriteString(l + "\n")
	}
	for _, n := range t.Notes {
		out.WriteString(n + "\n")
	}
	return out.String()
}

// paint colours a status with ANSI escapes.
func paint(s string) string {
	code := ""
	switch {
	case strings.HasPrefix(s, "UP"), s == "OPEN", s == "RUNNING":
		code = "32"
	case strings.HasPrefix(s, "DOWN"), s == "NOLB", s == "STOPPED", s == "STOPPING", s == "STOP":
		code = "31"
	case strings.HasPrefix(s, "DRAIN"), s == "STARTING", s == "PAUSED":
		code = "33"
	case strings.HasPrefix(s, "MAINT"):
		code = "34"
	}
	if code == "" || s == "" {
		return s
	}
	return "\x1b[" + code + "m" + s + "\x1b[0m"
}

// cut shortens l to w visible columns, skipping ANSI escapes; w <= 0
// leaves it whole.
func cut(l string, w int) string {
	if w <= 0 {
		return l
	}
	var b strings.Builder
	n, esc, coloured := 0, false, false
	for _, r := range l {
		switch {
		case r == '\x1b':
			esc, coloured = true, true
		case esc:
			if r == 'm' {
				esc = false
			}
		default:
			if n == w {
				if coloured {
					b.WriteString("\x1b[0m")
				}
				return b.String()
			}
			n++
		}
		b.WriteRune(r)
	}
	return b.String()
}

// JSON returns t as a JSON array of objects, one per row, with the
// server's column names as keys (in its order) and its values as strings,
// exactly as they appear in the reply.
func (t *Table) JSON() []byte {
	var b bytes.Buffer
	b.WriteString("[")
	for i, row := range t.Rows {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString("\n  {")
		for j, c := range t.Columns {
			if j > 0 {
				b.WriteString(", ")
			}
			k, _ := json.Marshal(c)
			v, _ := json.Marshal(row[j])
			b.Write(k)
			b.WriteString(": ")
			b.Write(v)
		}
		b.WriteString("}")
	}
	if len(t.Rows) > 0 {
		b.WriteString("\n")
	}
	b.WriteString("]\n")
	return b.Bytes()
}

// ToJSON turns any reply into JSON: tables as JSON arrays (Table.JSON),
// replies that are already JSON (show stat json) as they are, "Name: value"
// lines (show info) as one object, anything else as {"lines": [...]}.
func ToJSON(reply string) []byte { return ReplyJSON("", reply) }

// ReplyJSON is ToJSON knowing the command that got the reply (see
// ParseReply): `show table NAME` without entries is an empty array.
func ReplyJSON(cmd, reply string) []byte {
	trim := strings.TrimSpace(reply)
	if t, ok := ParseReply(cmd, reply); ok {
		return t.JSON()
	}
	if (strings.HasPrefix(trim, "[") || strings.HasPrefix(trim, "{")) && json.Valid([]byte(trim)) {
		return []byte(trim + "\n")
	}
	lines := strings.Split(strings.TrimRight(reply, "\n"), "\n")
	if reply == "" {
		lines = nil
	}
	kv := len(lines) > 0
	for _, l := range lines {
		if k, _, ok := strings.Cut(l, ":"); !ok || k == "" || strings.HasPrefix(k, " ") || strings.HasPrefix(k, "#") {
			kv = false
			break
		}
	}
	var b bytes.Buffer
	if kv {
		b.WriteString("{")
		for i, l := range lines {
			k, v, _ := strings.Cut(l, ":")
			v = strings.TrimPrefix(v, " ")
			if i > 0 {
				b.WriteString(",")
			}
			kj, _ := json.Marshal(k)
			vj, _ := json.Marshal(v)
			b.WriteString("\n  ")
			b.Write(kj)
			b.WriteString(": ")
			b.Write(vj)
		}
		b.WriteString("\n}\n")
		return b.Bytes()
	}
	if lines == nil {
		lines = []string{}
	}
	out, _ := json.MarshalIndent(map[string][]string{"lines": lines}, "", "  ")
	return append(out, '\n')
}

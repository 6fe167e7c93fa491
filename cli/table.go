package cli

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"strconv"
	"strings"

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
		if len(cols) > 0 && cols[len(cols)-1] == "" {
			cols = cols[:len(cols)-1]
		}
		t := &Table{Kind: "columns", Columns: cols}
		if len(cols) > 1 && cols[0] == "pxname" && cols[1] == "svname" {
			t.Kind = "stat"
		}
		for _, rec := range recs[1:] {
			t.Rows = append(t.Rows, fit(rec, len(cols)))
		}
		return t, true
	}
	return spaced("columns", first, lines[1:]), true
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
	var heads []string
	for _, l := range lines {
		switch {
		case strings.HasPrefix(l, "# table: "):
			heads = append(heads, l)
		case strings.TrimSpace(l) != "":
			entries = append(entries, l)
		}
	}
	if len(entries) == 0 {
		t := &Table{Kind: "table-list", Columns: []string{"table", "type", "size", "used"}}
		for _, h := range heads {
			row := make([]string, 4)
			for i, f := range strings.Split(strings.TrimPrefix(h, "# "), ",") {
				if i >= 4 {
					break
				}
				_, v, _ := strings.Cut(f, ":")
				row[i] = strings.TrimSpace(v)
			}
			t.Rows = append(t.Rows, row)
		}
		return t, true
	}
	t := &Table{Kind: "table-dump", Columns: []string{"ptr"}}
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

// view is one displayed column: a title and how to get its value.
type view struct {
	title string
	get   func(t *Table, row []string) string
}

func col(title, name string) view {
	return view{title, func(t *Table, row []string) string { return t.Get(row, name) }}
}

// statViews are the columns of `show stat` worth a glance, most useful
// first; --raw and --json give all of them.
var statViews = []view{
	col("BACKEND", "pxname"),
	col("SERVER", "svname"),
	col("STATUS", "status"),
	col("WEIGHT", "weight"),
	{"SESS", func(t *Table, row []string) string {
		cur, lim := t.Get(row, "scur"), t.Get(row, "slim")
		if lim == "" {
			return cur
		}
		return cur + "/" + lim
	}},
	col("QUEUE", "qcur"),
	col("RATE", "rate"),
	col("LBTOT", "lbtot"),
	col("CHECK", "check_status"),
	{"LASTCHG", func(t *Table, row []string) string { return seconds(t.Get(row, "lastchg")) }},
}

// firstColumns puts the most useful columns of a layout first and renames
// them; the others follow in the server's order, upper-cased.
var firstColumns = map[string][][2]string{
	"servers-state": {
		{"be_name", "BACKEND"}, {"srv_name", "SERVER"}, {"srv_addr", "ADDR"}, {"srv_port", "PORT"},
		{"srv_op_state", "OP_STATE"}, {"srv_admin_state", "ADMIN_STATE"}, {"srv_uweight", "WEIGHT"},
		{"srv_iweight", "IWEIGHT"}, {"srv_time_since_last_change", "LASTCHG"},
		{"srv_check_status", "CHECK_STATUS"}, {"srv_check_health", "CHECK_HEALTH"},
	},
	"table-dump": {{"key", "KEY"}, {"use", "USE"}, {"exp", "EXP"}},
	"columns": {
		{"backend", "BACKEND"}, {"server", "SERVER"}, {"queued", "QUEUED"}, {"name", "NAME"},
	},
}

// views returns the displayed columns of t.
func (t *Table) views() []view {
	if t.Kind == "stat" {
		return statViews
	}
	var vs []view
	used := map[string]bool{}
	for _, fc := range firstColumns[t.Kind] {
		if t.Col(fc[0]) >= 0 {
			vs = append(vs, col(fc[1], fc[0]))
			used[fc[0]] = true
		}
	}
	for _, c := range t.Columns {
		if !used[c] && !(t.Kind == "table-dump" && c == "ptr") {
			vs = append(vs, col(strings.ToUpper(c), c))
		}
	}
	return vs
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

// Render writes t as an aligned table without borders. With colour, the
// status columns are coloured (green up, red down, yellow drain, blue
// maintenance). maxWidth > 0 cuts every line to that many columns.
func (t *Table) Render(colour bool, maxWidth int) string {
	vs := t.views()
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
	for _, row := range t.Rows {
		cells := make([]string, len(vs))
		for i, v := range vs {
			cells[i] = v.get(t, row)
			if colour && (v.title == "STATUS" || v.title == "OP_STATE") {
				cells[i] = paint(cells[i])
			}
		}
		tb.Append(cells)
	}
	tb.Render()
	var out strings.Builder
	for _, l := range strings.Split(strings.TrimRight(buf.String(), "\n"), "\n") {
		l = strings.TrimRight(l, " ")
		if maxWidth > 0 {
			l = cut(l, maxWidth)
		}
		out.WriteString(l + "\n")
	}
	return out.String()
}

// paint colours a status with ANSI escapes.
func paint(s string) string {
	code := ""
	switch {
	case strings.HasPrefix(s, "UP"), s == "OPEN", s == "2":
		code = "32"
	case strings.HasPrefix(s, "DOWN"), s == "NOLB", s == "0":
		code = "31"
	case strings.HasPrefix(s, "DRAIN"), s == "3":
		code = "33"
	case strings.HasPrefix(s, "MAINT"):
		code = "34"
	}
	if code == "" || s == "" {
		return s
	}
	return "\x1b[" + code + "m" + s + "\x1b[0m"
}

// cut shortens l to w visible columns, skipping ANSI escapes.
func cut(l string, w int) string {
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
func ToJSON(reply string) []byte {
	trim := strings.TrimSpace(reply)
	if t, ok := ParseTable(reply); ok {
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

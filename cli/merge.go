package cli

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"slices"
	"strings"
)

// InstanceColumn names the column of a fleet's merged table that holds
// each row's instance. It comes after the server's columns, never among
// them: in CSV and JSON a script that reads HAProxy's columns by position
// or by name reads them unchanged (columns are only ever appended, as
// HAProxy's own stats columns are).
const InstanceColumn = "instance"

// mergeReplies merges the replies of a fleet's members to cmd into one
// table (mergeTables), or returns nil when one of them is not a table or
// their kinds differ: they are then printed one by one.
func mergeReplies(cmd string, rs []reply) *Table {
	ts := make([]*Table, len(rs))
	names := make([]string, len(rs))
	for i, r := range rs {
		t, ok := ParseReply(cmd, r.text)
		if !ok || i > 0 && t.Kind != ts[0].Kind {
			return nil
		}
		ts[i], names[i] = t, r.m.Name
	}
	return mergeTables(ts, names)
}

// mergeTables merges tables of one kind, read from the instances names,
// into one: the columns of all in the order they first appear (the first
// table's, then those a later one adds: another version may have more),
// then InstanceColumn; the rows of each table in turn, in the fleet's
// order, each ending with its instance's name. The title is kept when
// the tables share it (a stick table's without its use count when only
// that differs), and the notes of all, once each.
func mergeTables(ts []*Table, names []string) *Table {
	m := &Table{Kind: ts[0].Kind, Merged: true, trailingComma: ts[0].trailingComma}
	at := map[string]int{}
	for _, t := range ts {
		for _, c := range t.Columns {
			if _, ok := at[c]; !ok {
				at[c] = len(m.Columns)
				m.Columns = append(m.Columns, c)
			}
		}
	}
	m.Columns = append(m.Columns, InstanceColumn)
	for i, t := range ts {
		for _, r := range t.Rows {
			row := make([]string, len(m.Columns))
			for j, c := range t.Columns {
				if j < len(r) {
					row[at[c]] = r[j]
				}
			}
			row[len(row)-1] = names[i]
			m.Rows = append(m.Rows, row)
		}
		for _, n := range t.Notes {
			if !slices.Contains(m.Notes, n) {
				m.Notes = append(m.Notes, n)
			}
		}
	}
	m.Title = ts[0].Title
	for _, t := range ts[1:] {
		if t.Title != m.Title {
			stem, _, _ := strings.Cut(m.Title, ", used ")
			other, _, _ := strings.Cut(t.Title, ", used ")
			if m.Title = ""; stem == other {
				m.Title = stem
			}
		}
	}
	return m
}

// CSV returns t as CSV in HAProxy's form (management.txt §9.1): the
// column names after "# ", then one line per row, values quoted only when
// needed; a table read from a reply whose lines end with a comma (show
// stat) keeps that comma. A merged table's last column is InstanceColumn.
func (t *Table) CSV() string {
	var b strings.Builder
	b.WriteString("# " + strings.Join(t.Columns, ","))
	if t.trailingComma {
		b.WriteString(",")
	}
	b.WriteString("\n")
	w := csv.NewWriter(&b)
	for _, r := range t.Rows {
		if t.trailingComma {
			r = append(slices.Clip(r), "")
		}
		w.Write(r)
	}
	w.Flush()
	return b.String()
}

// fleetJSON returns the replies of a fleet's members that are not
// tables as one JSON object: each instance's name, in the fleet's order,
// to its reply as ReplyJSON gives it.
func fleetJSON(cmd string, rs []reply) []byte {
	var b bytes.Buffer
	b.WriteString("{")
	for i, r := range rs {
		if i > 0 {
			b.WriteString(",")
		}
		k, _ := json.Marshal(r.m.Name)
		b.Write(k)
		b.WriteString(":")
		if err := json.Compact(&b, ReplyJSON(cmd, r.text)); err != nil {
			v, _ := json.Marshal(r.text)
			b.Write(v)
		}
	}
	b.WriteString("}")
	var out bytes.Buffer
	json.Indent(&out, b.Bytes(), "", "  ")
	out.WriteString("\n")
	return out.Bytes()
}

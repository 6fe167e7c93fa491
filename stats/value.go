package stats

import (
	"strconv"
	"strings"
)

// fieldType is a column's type in typed and JSON output.
type fieldType uint8

const (
	tU32 fieldType = iota
	tU64
	tS32
	tStr
)

// String is the type's name in typed and JSON output.
func (t fieldType) String() string {
	return [...]string{"u32", "u64", "s32", "str"}[t]
}

// value is one cell: empty (set false), a number or a string, printed as
// its column's type says.
type value struct {
	set bool
	n   int64
	s   string
}

func num(n int64) value  { return value{set: true, n: n} }
func str(s string) value { return value{set: true, s: s} }

// positive is n, or empty when n is 0 (an unset limit).
func positive(n int) value {
	if n <= 0 {
		return value{}
	}
	return num(int64(n))
}

// nonNegative is n, or empty when n is negative (unknown).
func nonNegative(n int64) value {
	if n < 0 {
		return value{}
	}
	return num(n)
}

// nonEmpty is s, or empty when s is "".
func nonEmpty(s string) value {
	if s == "" {
		return value{}
	}
	return str(s)
}

// boolValue is 1 or 0.
func boolValue(b bool) value {
	if b {
		return num(1)
	}
	return num(0)
}

// appendText appends v as typed output prints it (strings raw).
func (v value) appendText(b []byte, t fieldType) []byte {
	if t == tStr {
		return append(b, v.s...)
	}
	return strconv.AppendInt(b, v.n, 10)
}

// appendCSV appends v as a CSV field: empty when unset, strings quoted only
// when they hold a comma, a double quote, a line break or an outer space
// (HAProxy's csv_enc), with inner quotes doubled.
func (v value) appendCSV(b []byte, t fieldType) []byte {
	if !v.set {
		return b
	}
	if t != tStr {
		return strconv.AppendInt(b, v.n, 10)
	}
	s := v.s
	if !strings.ContainsAny(s, ",\"\r\n") && !strings.HasPrefix(s, " ") && !strings.HasSuffix(s, " ") {
		return append(b, s...)
	}
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		if s[i] == '"' {
			b = append(b, '"')
		}
		b = append(b, s[i])
	}
	return append(b, '"')
}

// appendJSONString appends s as a JSON string.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c == '\n':
			b = append(b, '\\', 'n')
		case c == '\r':
			b = append(b, '\\', 'r')
		case c == '\t':
			b = append(b, '\\', 't')
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}

// Typed tags spelled out for JSON (stats-csv.md §5).
var (
	tagOrigin = map[byte]string{'M': "Metric", 'S': "Status", 'K': "Key", 'C': "Config", 'P': "Product"}
	tagNature = map[byte]string{'A': "Age", 'a': "Avg", 'C': "Counter", 'D': "Duration", 'G': "Gauge",
		'L': "Limit", 'M': "Max", 'm': "Min", 'N': "Name", 'O': "Output", 'R': "Rate", 'T': "Time"}
	tagScope = map[byte]string{'C': "Cluster", 'P': "Process", 'S': "Service", 's': "System"}
)

// appendJSONTags appends {"origin":...,"nature":...,"scope":...}.
func appendJSONTags(b []byte, tags string) []byte {
	b = append(b, `{"origin":"`...)
	b = append(b, tagOrigin[tags[0]]...)
	b = append(b, `","nature":"`...)
	b = append(b, tagNature[tags[1]]...)
	b = append(b, `","scope":"`...)
	b = append(b, tagScope[tags[2]]...)
	return append(b, `"}`...)
}

// appendJSONValue appends {"type":"u32","value":0}.
func appendJSONValue(b []byte, v value, t fieldType) []byte {
	b = append(b, `{"type":"`...)
	b = append(b, t.String()...)
	b = append(b, `","value":`...)
	if t == tStr {
		b = appendJSONString(b, v.s)
	} else {
		b = strconv.AppendInt(b, v.n, 10)
	}
	return append(b, '}')
}

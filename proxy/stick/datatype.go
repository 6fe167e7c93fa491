package stick

// Stored data types: one table of name, kind and argument (HAProxy's
// stktable_data_types[]), in HAProxy's internal order, which is the order
// `show table` prints them in.

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// DataType is one field an entry may store.
type DataType uint8

// The data types, in HAProxy's order (STKTABLE_DT_*).
const (
	ServerID DataType = iota
	GPT0
	GPC0
	GPC0Rate
	ConnCnt
	ConnRate
	ConnCur
	SessCnt
	SessRate
	HTTPReqCnt
	HTTPReqRate
	HTTPErrCnt
	HTTPErrRate
	BytesInCnt
	BytesInRate
	BytesOutCnt
	BytesOutRate
	GPC1
	GPC1Rate
	ServerKey
	NumDataTypes
)

// dataKind is how a data type is stored and printed (HAProxy's std_t_*).
type dataKind uint8

const (
	kindSint dataKind = iota // signed 32-bit
	kindUint                 // unsigned 32-bit
	kindULL                  // unsigned 64-bit
	kindFreq                 // freq counter over a period: 3 words
	kindDict                 // a string from the table's dictionary
)

// words is the number of data words a kind takes in an entry.
func (k dataKind) words() int {
	if k == kindFreq {
		return 3
	}
	return 1
}

// dataTypes is the one table of data types.
var dataTypes = [NumDataTypes]struct {
	name string
	kind dataKind
}{
	ServerID:     {"server_id", kindSint},
	GPT0:         {"gpt0", kindUint},
	GPC0:         {"gpc0", kindUint},
	GPC0Rate:     {"gpc0_rate", kindFreq},
	ConnCnt:      {"conn_cnt", kindUint},
	ConnRate:     {"conn_rate", kindFreq},
	ConnCur:      {"conn_cur", kindUint},
	SessCnt:      {"sess_cnt", kindUint},
	SessRate:     {"sess_rate", kindFreq},
	HTTPReqCnt:   {"http_req_cnt", kindUint},
	HTTPReqRate:  {"http_req_rate", kindFreq},
	HTTPErrCnt:   {"http_err_cnt", kindUint},
	HTTPErrRate:  {"http_err_rate", kindFreq},
	BytesInCnt:   {"bytes_in_cnt", kindULL},
	BytesInRate:  {"bytes_in_rate", kindFreq},
	BytesOutCnt:  {"bytes_out_cnt", kindULL},
	BytesOutRate: {"bytes_out_rate", kindFreq},
	GPC1:         {"gpc1", kindUint},
	GPC1Rate:     {"gpc1_rate", kindFreq},
	ServerKey:    {"server_key", kindDict},
}

// String returns the type's HAProxy name.
func (d DataType) String() string {
	if d < NumDataTypes {
		return dataTypes[d].name
	}
	return "unknown"
}

// IsRate reports whether d is a freq counter, which takes a period.
func (d DataType) IsRate() bool { return d < NumDataTypes && dataTypes[d].kind == kindFreq }

// IsCounter reports whether d is an integer an sc_* fetch may read
// (every type but server_key).
func (d DataType) IsCounter() bool { return d < NumDataTypes && dataTypes[d].kind != kindDict }

// Aggregates reports whether d adds up over the instances of an aggregate
// table (Config.Origins): the counters and the rates. server_id and
// server_key name a server, gpt0 is a tag, and conn_cur counts this
// instance's own connections (see Local): they do not add up.
func (d DataType) Aggregates() bool {
	switch d {
	case ServerID, GPT0, ConnCur, ServerKey:
		return false
	}
	return d < NumDataTypes
}

// Local reports whether d is never learned from a peer: conn_cur, the
// connections open on this instance (HAProxy's is_local).
func (d DataType) Local() bool { return d == ConnCur }

// DataTypeByName returns the data type named name, as HAProxy spells it.
func DataTypeByName(name string) (DataType, bool) {
	for i := range dataTypes {
		if dataTypes[i].name == name {
			return DataType(i), true
		}
	}
	return 0, false
}

// DataTypes returns every data type, in order.
func DataTypes() []DataType {
	out := make([]DataType, NumDataTypes)
	for i := range out {
		out[i] = DataType(i)
	}
	return out
}

// Store is the set of data types a table keeps, with each rate's period.
type Store struct {
	has    [NumDataTypes]bool
	period [NumDataTypes]time.Duration
}

// Has reports whether d is stored.
func (s *Store) Has(d DataType) bool { return d < NumDataTypes && s.has[d] }

// Period returns the period of rate d (0 when d is not a stored rate).
func (s *Store) Period(d DataType) time.Duration { return s.period[d] }

// Add stores d (with period p for a rate).
func (s *Store) Add(d DataType, p time.Duration) {
	s.has[d] = true
	if d.IsRate() {
		s.period[d] = p
	}
}

// ParseStore parses a table's `store` list, each item a data type as
// HAProxy writes it: "server_id", "gpc0", "http_req_rate(10s)". Items may
// also be comma-separated inside one string, as in HAProxy's store line.
func ParseStore(items []string) (Store, error) {
	var s Store
	for _, item := range items {
		for _, w := range strings.Split(item, ",") {
			w = strings.TrimSpace(w)
			if w == "" {
				continue
			}
			name, arg, hasArg := strings.Cut(w, "(")
			d, ok := DataTypeByName(name)
			if !ok {
				return s, fmt.Errorf("unknown data type '%s' (known: %s)", name, knownNames())
			}
			if !d.IsRate() {
				if hasArg {
					return s, fmt.Errorf("data type '%s' takes no argument", name)
				}
				s.Add(d, 0)
				continue
			}
			if !hasArg || !strings.HasSuffix(arg, ")") {
				return s, fmt.Errorf("data type '%s' expects a period: %s(<period>)", name, name)
			}
			p, err := parsePeriod(strings.TrimSuffix(arg, ")"))
			if err != nil {
				return s, fmt.Errorf("data type '%s': %v", name, err)
			}
			s.Add(d, p)
		}
	}
	return s, nil
}

// parsePeriod parses a rate's period as HAProxy: a number with a unit
// (us, ms, s, m, h, d), or a bare number of milliseconds.
func parsePeriod(v string) (time.Duration, error) {
	if n, err := strconv.ParseUint(v, 10, 31); err == nil {
		if n == 0 {
			return 0, fmt.Errorf("period must be above 0")
		}
		return time.Duration(n) * time.Millisecond, nil
	}
	d, err := time.ParseDuration(v)
	if err == nil && strings.HasSuffix(v, "d") {
		err = fmt.Errorf("bad unit")
	}
	if err != nil {
		if n, e := strconv.ParseUint(strings.TrimSuffix(v, "d"), 10, 16); e == nil && strings.HasSuffix(v, "d") {
			return time.Duration(n) * 24 * time.Hour, nil
		}
		return 0, fmt.Errorf("invalid period %q", v)
	}
	if d < time.Millisecond {
		return 0, fmt.Errorf("period must be at least 1ms, got %q", v)
	}
	return d, nil
}

func knownNames() string {
	names := make([]string, NumDataTypes)
	for i := range dataTypes {
		names[i] = dataTypes[i].name
	}
	return strings.Join(names, ", ")
}

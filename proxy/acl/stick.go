package acl

// Stick tables in the rule language: sample expressions that give a key
// (stick on/match/store-request, track-sc), the track-sc0/1/2 action, and
// the sc_* fetches that read the counters of a tracked entry. The tables
// themselves are proxy/stick's; the engine connects the two through the
// Request's Tracker.

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/fulcrum-proxy/fulcrum/proxy/stick"
)

// Tracker is the engine's side of the tracking counters of one request
// (HAProxy's stkctr slots 0..2).
type Tracker interface {
	// Track starts tracking key in the counter slot and table of rule (a
	// track-sc rule: TrackSlot, TrackTable); a slot already tracking
	// something is left alone, as in HAProxy.
	Track(rule *Rule, key Value)
	// Tracked returns data type d of the entry tracked in slot; ok is
	// false when the slot tracks nothing or its table does not store d.
	Tracked(slot int, d stick.DataType) (v int64, ok bool)
	// Inc adds one to each of ds (the types the table stores) on the
	// entry tracked in slot and returns ds[0]'s new value; ok is false
	// when the slot tracks nothing or the table does not store ds[0].
	Inc(slot int, ds ...stick.DataType) (v int64, ok bool)
	// Swap sets d of the entry tracked in slot to v and returns its old
	// value; ok as Inc's.
	Swap(slot int, d stick.DataType, v int64) (old int64, ok bool)
	// Src reads, counts or clears data d of the entry of src in the
	// table named table, without tracking it (HAProxy's src_* fetches):
	// op 0 reads (0 when there is no entry), opInc adds one to d and
	// rate (0: none) and gives the new value, opClr sets d to 0 and gives
	// the old one (both make the entry). ok is false when there is no
	// such table or it does not store d.
	Src(table string, src netip.Addr, op SrcOp, d, rate stick.DataType) (v int64, ok bool)
}

// SrcOp is what a src_* fetch does with the entry.
type SrcOp uint8

// The src_* fetches' operations.
const (
	SrcRead SrcOp = iota
	SrcInc
	SrcClr
)

// Value is one fetched sample, as a key: an address, an integer or bytes
// (which alias the request's buffers: valid during the evaluation only).
type Value struct {
	Kind ValueKind
	IP   netip.Addr
	Int  int64
	Str  []byte
}

// ValueKind is the type of a Value.
type ValueKind uint8

// The kinds of Value.
const (
	ValueStr ValueKind = iota
	ValueInt
	ValueIP
)

// Expr is a compiled sample expression: one fetch, e.g. "src",
// "req.cook(SRV)", "hdr(x-user)".
type Expr struct {
	f *fetch
}

// L7 reports whether the expression needs an HTTP request.
func (e *Expr) L7() bool { return e.f.def.l7 }

// String returns the expression as written.
func (e *Expr) String() string { return e.f.text }

// Fetch returns the expression's first value for r.
func (e *Expr) Fetch(r *Request) (Value, bool) {
	s, ok := e.f.value(r)
	if !ok {
		return Value{}, false
	}
	switch s.t {
	case typeIP:
		return Value{Kind: ValueIP, IP: s.ip}, true
	case typeInt, typeBool:
		return Value{Kind: ValueInt, Int: s.n}, true
	}
	return Value{Kind: ValueStr, Str: s.s}, true
}

// value returns the fetch's value where one value is wanted (a key, a
// format), as HAProxy's sample fetches give it: the last occurrence for
// the header and cookie fetches without an occurrence number (req.hdr,
// hdr, res.hdr, shdr, req.cook, cook: "the last comma-separated value",
// configuration.txt 7.3.6), the first for the others. A condition tries
// them all instead. With a client's own X-Forwarded-For before the one a
// proxy in front appended, the first value is the client's word.
func (f *fetch) value(r *Request) (sample, bool) {
	var it iter
	s, ok := f.next(r, &it)
	if !ok || !(f.def.id == fHdr && f.occ == 0 || f.def.id == fCook) {
		return s, ok
	}
	for {
		n, more := f.next(r, &it)
		if !more {
			return s, true
		}
		s = n
	}
}

// SampleExpr compiles a sample expression. Converters are not supported.
func (sc *Scope) SampleExpr(text string) (*Expr, error) {
	name, args, hasArgs := text, "", false
	if i := strings.IndexByte(text, '('); i >= 0 {
		if !strings.HasSuffix(text, ")") {
			return nil, fmt.Errorf("missing closing ')' after arguments to fetch '%s'", text)
		}
		name, args, hasArgs = text[:i], text[i+1:len(text)-1], true
	}
	if strings.Contains(text, ",") && !hasArgs {
		return nil, fmt.Errorf("converters are not supported in '%s'", text)
	}
	def := fetchByName(name)
	if def == nil || def.id == fConst {
		return nil, fmt.Errorf("unknown fetch method '%s' in sample expression '%s'", name, text)
	}
	if def.res {
		return nil, fmt.Errorf("fetch '%s' reads the response, which '%s' cannot see", def.name, text)
	}
	f, err := sc.parseFetch(def, text, args, hasArgs)
	if err != nil {
		return nil, err
	}
	return &Expr{f: f}, nil
}

// StickKind is what a stick rule does.
type StickKind uint8

// The stick rules of a backend.
const (
	StickOn    StickKind = iota // match, then store
	StickMatch                  // look the key up: a server found there gets the request
	StickStore                  // store-request: remember the server the request went to
)

// StickRule is one compiled `stick on|match|store-request EXPR [table
// NAME] [if|unless COND]`.
type StickRule struct {
	Kind  StickKind
	Expr  *Expr
	Table string // "" = the backend's own table
	Cond  *Cond  // nil: always
	Text  string
	Line  int
}

// StickRule compiles one rule of a backend's `stick` list, written
// without the leading "stick": "on src", "match req.cook(SRV) table t".
func (sc *Scope) StickRule(text string, line int) (*StickRule, error) {
	words, err := splitWords(text)
	if err != nil {
		return nil, err
	}
	args, cond, err := sc.splitCond(words, line)
	if err != nil {
		return nil, err
	}
	if len(args) == 0 {
		return nil, fmt.Errorf("empty rule")
	}
	r := &StickRule{Cond: cond, Text: text, Line: line}
	switch args[0] {
	case "on":
		r.Kind = StickOn
	case "match":
		r.Kind = StickMatch
	case "store-request":
		r.Kind = StickStore
	case "store-response":
		return nil, fmt.Errorf("'stick store-response' is not supported yet")
	default:
		return nil, fmt.Errorf("unknown stick rule '%s' (supported: on, match, store-request)", args[0])
	}
	if len(args) < 2 {
		return nil, fmt.Errorf("'stick %s' expects a sample expression", args[0])
	}
	if r.Expr, err = sc.SampleExpr(args[1]); err != nil {
		return nil, err
	}
	r.Table, err = tableOpt(args[2:], "stick "+args[0])
	return r, err
}

// tableOpt parses an optional "table NAME" after a rule's expression.
func tableOpt(opts []string, rule string) (string, error) {
	switch {
	case len(opts) == 0:
		return "", nil
	case len(opts) == 2 && opts[0] == "table":
		return opts[1], nil
	}
	return "", fmt.Errorf("'%s': unexpected '%s' (expected 'table <name>', 'if' or 'unless')", rule, strings.Join(opts, " "))
}

// parseTrack fills a track-sc rule: "track-sc0 EXPR [table NAME]".
func (sc *Scope) parseTrack(rule *Rule, act string, opts []string) error {
	rule.Action = ActTrackSC
	rule.slot = int(act[len(act)-1] - '0')
	if len(opts) == 0 {
		return fmt.Errorf("'%s' expects a sample expression", act)
	}
	var err error
	if rule.key, err = sc.SampleExpr(opts[0]); err != nil {
		return err
	}
	rule.table, err = tableOpt(opts[1:], act)
	return err
}

// TrackSlot returns the counter slot (0..2) of a track-sc rule.
func (rule *Rule) TrackSlot() int { return rule.slot }

// TrackTable returns the table named by a track-sc rule, "" for the
// section's own.
func (rule *Rule) TrackTable() string { return rule.table }

// TrackKey returns the key expression of a track-sc rule.
func (rule *Rule) TrackKey() *Expr { return rule.key }

// track runs a track-sc rule against r.
func (rule *Rule) track(r *Request) {
	if r.Tracker == nil {
		return
	}
	if v, ok := rule.key.Fetch(r); ok {
		r.Tracker.Track(rule, v)
	}
}

// scSlot returns the tracking counter an sc_* fetch reads (its name's,
// else its argument's); false when the request has no tracker or the
// fetch gave its value already.
func scSlot(r *Request, f *fetch, it *iter) (int, bool) {
	if r.Tracker == nil || it.n > 0 {
		return 0, false
	}
	if f.def.slot < 0 {
		return f.occ, true
	}
	return int(f.def.slot), true
}

// fetchSC reads a data type of the entry tracked in the fetch's slot.
func fetchSC(r *Request, f *fetch, it *iter) (sample, bool) {
	slot, ok := scSlot(r, f, it)
	if !ok {
		return sample{}, false
	}
	v, ok := r.Tracker.Tracked(slot, f.def.dt)
	if !ok {
		return sample{}, false
	}
	if f.def.kb {
		v >>= 10
	}
	it.n++
	return sample{t: typeInt, n: v}, true
}

// The general purpose counters' actions (HAProxy's sc-inc-gpc0(N),
// sc-inc-gpc1(N), sc-set-gpt0(N) <int>) and fetches (sc_inc_gpc0(N),
// sc_clr_gpc0(N) and their gpc1 and scN_ forms), on the entry tracked in
// slot N.

// gpcAction parses act when it is one of the counters' actions, into
// rule: ok false when act is another action.
func gpcAction(rule *Rule, act string, opts []string) (ok bool, err error) {
	name, slot, found := strings.Cut(act, "(")
	if !found || !strings.HasSuffix(slot, ")") {
		return false, nil
	}
	slot = slot[:len(slot)-1]
	switch name {
	case "sc-inc-gpc0", "sc-inc-gpc1":
		rule.Action, rule.gpc = ActIncGPC, stick.GPC0
		if name == "sc-inc-gpc1" {
			rule.gpc = stick.GPC1
		}
		if len(opts) != 0 {
			return true, fmt.Errorf("'%s' takes no argument, got '%s'", act, opts[0])
		}
	case "sc-set-gpt0":
		rule.Action, rule.gpc = ActSetGPT, stick.GPT0
		if len(opts) != 1 {
			return true, fmt.Errorf("'%s' expects an integer", act)
		}
		n, err := strconv.ParseInt(opts[0], 10, 64)
		if err != nil || n < 0 || n > 1<<32-1 {
			return true, fmt.Errorf("'%s' expects an integer from 0 to 4294967295, got '%s' (an expression is not supported)", act, opts[0])
		}
		rule.gpt = n
	default:
		return false, nil
	}
	n, err := strconv.Atoi(slot)
	if err != nil || n < 0 || n > 2 {
		return true, fmt.Errorf("'%s': the counter number must be 0, 1 or 2, got '%s'", name, slot)
	}
	rule.slot = n
	return true, nil
}

// gpcRate is the rate counted with a general purpose counter.
func gpcRate(d stick.DataType) stick.DataType {
	if d == stick.GPC1 {
		return stick.GPC1Rate
	}
	return stick.GPC0Rate
}

// applyGPC runs an sc-inc-gpc or sc-set-gpt rule against r: nothing when
// its slot tracks nothing, as HAProxy.
func (rule *Rule) applyGPC(r *Request) {
	if r.Tracker == nil {
		return
	}
	if rule.Action == ActIncGPC {
		r.Tracker.Inc(rule.slot, rule.gpc, gpcRate(rule.gpc))
		return
	}
	r.Tracker.Swap(rule.slot, rule.gpc, rule.gpt)
}

// fetchGPC is sc_inc_gpcN (increments, then gives the new value) and
// sc_clr_gpcN (clears, gives the old value).
func fetchGPC(r *Request, f *fetch, it *iter) (sample, bool) {
	slot, ok := scSlot(r, f, it)
	if !ok {
		return sample{}, false
	}
	var v int64
	if f.def.clr {
		v, ok = r.Tracker.Swap(slot, f.def.dt, 0)
	} else {
		v, ok = r.Tracker.Inc(slot, f.def.dt, gpcRate(f.def.dt))
	}
	if !ok {
		return sample{}, false
	}
	it.n++
	return sample{t: typeInt, n: v}, true
}

// fetchSrcTable is a src_* fetch: data of the client address's entry in
// the fetch's table (its argument, else the section's own), tracked or
// not.
func fetchSrcTable(r *Request, f *fetch, it *iter) (sample, bool) {
	if r.Tracker == nil || it.n > 0 || !r.Src.IsValid() {
		return sample{}, false
	}
	op, rate := SrcRead, stick.DataType(0)
	switch {
	case f.def.clr:
		op = SrcClr
	case f.def.inc:
		op, rate = SrcInc, gpcRate(f.def.dt)
	}
	v, ok := r.Tracker.Src(string(f.name), r.Src.Addr().Unmap(), op, f.def.dt, rate)
	if !ok {
		return sample{}, false
	}
	if f.def.kb {
		v >>= 10
	}
	it.n++
	return sample{t: typeInt, n: v}, true
}

// scName returns the sc_* fetch name of a data type, as HAProxy names it:
// sc_get_gpc0, sc_kbytes_in, sc_http_req_rate...
func scName(d stick.DataType) (name string, kb bool) {
	switch d {
	case stick.GPC0, stick.GPC1, stick.GPT0:
		return "get_" + d.String(), false
	case stick.BytesInCnt:
		return "kbytes_in", true
	case stick.BytesOutCnt:
		return "kbytes_out", true
	}
	return d.String(), false
}

// The sc_* fetches are rows of the fetches table, one per readable data
// type and per form: sc_X(N), sc0_X, sc1_X, sc2_X.
func init() {
	for _, d := range stick.DataTypes() {
		if !d.IsCounter() || d == stick.ServerID {
			continue
		}
		name, kb := scName(d)
		fetches = append(fetches, &fetchDef{name: "sc_" + name, out: typeInt, args: argSlot, id: fSC, dt: d, slot: -1, kb: kb})
		for n := range int8(3) {
			fetches = append(fetches, &fetchDef{name: fmt.Sprintf("sc%d_%s", n, name), out: typeInt, id: fSC, dt: d, slot: n, kb: kb})
		}
	}
	for _, d := range stick.DataTypes() {
		if d.IsCounter() && d != stick.ServerID {
			name, kb := scName(d)
			fetches = append(fetches, &fetchDef{name: "src_" + name, out: typeInt, args: argOptional, id: fSrcTable, dt: d, kb: kb})
		}
	}
	for _, d := range []stick.DataType{stick.GPC0, stick.GPC1} {
		for _, op := range []string{"inc", "clr"} {
			name := op + "_" + d.String()
			fetches = append(fetches, &fetchDef{name: "src_" + name, out: typeInt, args: argOptional, id: fSrcTable, dt: d, inc: op == "inc", clr: op == "clr"})
			fetches = append(fetches, &fetchDef{name: "sc_" + name, out: typeInt, args: argSlot, id: fGPC, dt: d, slot: -1, clr: op == "clr"})
			for n := range int8(3) {
				fetches = append(fetches, &fetchDef{name: fmt.Sprintf("sc%d_%s", n, name), out: typeInt, id: fGPC, dt: d, slot: n, clr: op == "clr"})
			}
		}
	}
}

package acl

// Rules: use_backend, http_request and tcp_request, in HAProxy's syntax,
// compiled by a Scope and run in order against a Request.

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/fulcrum-proxy/fulcrum/proxy/stick"
)

// Action is what a rule does when its condition holds.
type Action uint8

// The actions of http_request and tcp_request rules.
const (
	ActAllow     Action = iota // http_request allow: stop the section's rules
	ActDeny                    // http_request deny: answer Status's error page
	ActReturn                  // http_request return: answer Response
	ActRedirect                // http_request redirect: answer AppendRedirect's response
	ActSetHeader               // replace every header Name by Value
	ActAddHeader               // add a header line
	ActDelHeader               // remove every header Name
	ActSetPath                 // replace the path, keeping the query string
	ActAccept                  // tcp_request connection accept
	ActReject                  // tcp_request connection reject
	ActTrackSC                 // track-sc0/1/2 (http_request, tcp_request connection): track a key in a stick table
	ActSetStatus               // http_response set-status: replace the response's status (and reason)
	ActAuth                    // http_request auth: answer 401 with a Basic challenge for Realm
	ActIncGPC                  // sc-inc-gpc0(N), sc-inc-gpc1(N): count on the entry tracked in slot N
	ActSetGPT                  // sc-set-gpt0(N) <int>: set gpt0 of the entry tracked in slot N
)

// DenyStatuses are the codes deny_status accepts: those HAProxy 2.6 has a
// built-in error page for (the proxy serves each of them).
var DenyStatuses = []int{200, 400, 401, 403, 404, 405, 407, 408, 410, 413, 421, 425, 429, 500, 501, 502, 503, 504}

// DefaultResponseDenyStatus is the status of an http_response deny without
// deny_status: HAProxy's 502.
const DefaultResponseDenyStatus = 502

// Rule is one compiled http_request, http_response or tcp_request rule.
type Rule struct {
	Action Action
	Cond   *Cond  // nil: always
	Text   string // the rule as written
	Line   int

	// Status is the code of deny, return, redirect and set-status.
	Status int
	// Response is the whole response of a return rule, built at load.
	Response []byte

	name  []byte // header name (set/add/del-header)
	value format // header value or path (set-header, add-header, set-path)
	redir string // location, prefix or scheme; auth's realm
	rkind string // "location", "prefix" or "scheme"
	dropQ bool   // redirect drop-query
	slash bool   // redirect append-slash
	// reason is set-status's reason phrase; nil: HAProxy's for the code.
	reason []byte

	slot  int    // track-sc, sc-inc-gpc, sc-set-gpt counter number
	key   *Expr  // track-sc key
	table string // track-sc table, "" = the section's own

	gpc stick.DataType // sc-inc-gpc's counter, sc-set-gpt's tag
	gpt int64          // sc-set-gpt's value
}

// UseBackendRule is a compiled `use_backend NAME if COND`.
type UseBackendRule struct {
	Backend string
	Cond    *Cond
}

// Rules are the compiled rules of one frontend or backend. A nil *Rules
// has none. Rules never change after load.
type Rules struct {
	TCPConnection []*Rule // tcp_request connection rules (frontends)
	HTTP          []*Rule // http_request rules
	HTTPResponse  []*Rule // http_response rules
	UseBackend    []UseBackendRule
}

// HTTPRules returns the http_request rules (none for a nil *Rules).
func (rs *Rules) HTTPRules() []*Rule {
	if rs == nil {
		return nil
	}
	return rs.HTTP
}

// TCPRules returns the tcp_request connection rules (none for a nil *Rules).
func (rs *Rules) TCPRules() []*Rule {
	if rs == nil {
		return nil
	}
	return rs.TCPConnection
}

// HTTPResponseRules returns the http_response rules (none for a nil
// *Rules).
func (rs *Rules) HTTPResponseRules() []*Rule {
	if rs == nil {
		return nil
	}
	return rs.HTTPResponse
}

// Empty reports whether there is no rule at all.
func (rs *Rules) Empty() bool {
	return rs == nil || len(rs.TCPConnection)+len(rs.HTTP)+len(rs.HTTPResponse)+len(rs.UseBackend) == 0
}

// AcceptConnection runs the tcp_request connection rules against a new
// connection (only Src, Dst and Tracker are set). It returns false when
// the connection must be closed (reject). Rules run in order: track-sc
// rules whose condition holds track their key in r.Tracker and evaluation
// goes on, so that later conditions see the counters (sc0_conn_cur); the
// first accept or reject whose condition holds ends it. No rule, or none
// that decides, means accept.
func (rs *Rules) AcceptConnection(r *Request) bool {
	if rs == nil {
		return true
	}
	for _, rule := range rs.TCPConnection {
		if !rule.Cond.Eval(r) {
			continue
		}
		switch rule.Action {
		case ActTrackSC:
			rule.track(r)
		case ActIncGPC, ActSetGPT:
			rule.applyGPC(r)
		case ActReject:
			return false
		default:
			return true
		}
	}
	return true
}

// SelectBackend returns the index in UseBackend of the first rule whose
// condition holds, or -1 (then the default backend applies).
func (rs *Rules) SelectBackend(r *Request) int {
	if rs == nil {
		return -1
	}
	for i := range rs.UseBackend {
		if rs.UseBackend[i].Cond.Eval(r) {
			return i
		}
	}
	return -1
}

// EvalHTTP runs the http_request rules in order against r. Header and path
// actions are applied to r.Edits (and r.URI) as they come, so that later
// rules see them. It returns the first deny, return or redirect rule whose
// condition holds, or nil when the request goes on (no rule, or allow).
func (rs *Rules) EvalHTTP(r *Request) *Rule {
	if rs == nil {
		return nil
	}
	for _, rule := range rs.HTTP {
		if !rule.Cond.Eval(r) {
			continue
		}
		switch rule.Action {
		case ActAllow:
			return nil
		case ActDeny, ActReturn, ActRedirect, ActAuth:
			return rule
		case ActSetHeader, ActAddHeader, ActDelHeader, ActSetPath:
			if r.Edits != nil {
				rule.apply(r, r.headers(false))
			}
		case ActTrackSC:
			rule.track(r)
		case ActIncGPC, ActSetGPT:
			rule.applyGPC(r)
		}
	}
	return nil
}

// EvalHTTPResponse runs the http_response rules in order against the
// response r.Res of request r (HAProxy runs the backend's, then the
// frontend's: the caller calls it once per section). Header edits and
// set-status go to r.Res.Edits as they come, so that later rules see
// them. It returns the first deny rule whose condition holds, or nil when
// the response goes on (no rule, or allow, which ends this section's
// rules). r.Res.Edits must not be nil.
func (rs *Rules) EvalHTTPResponse(r *Request) *Rule {
	if rs == nil {
		return nil
	}
	for _, rule := range rs.HTTPResponse {
		if !rule.Cond.Eval(r) {
			continue
		}
		switch rule.Action {
		case ActAllow:
			return nil
		case ActDeny:
			return rule
		case ActSetHeader, ActAddHeader, ActDelHeader:
			rule.apply(r, r.headers(true))
		case ActSetStatus:
			e := r.Res.Edits
			e.status, e.reason = rule.Status, rule.reason
		case ActIncGPC, ActSetGPT:
			rule.applyGPC(r)
		}
	}
	return nil
}

// Edits are the changes http_request rules made to one request: header
// lines hidden or added, and the request URI replaced. The engine keeps
// one per connection and calls Reset before each request, so the buffers
// are reused and applying rules allocates nothing once warm.
type Edits struct {
	hidden []bool // by index of the received header lines
	added  []addedHeader
	arena  []byte // storage of formatted values; slices into it stay valid until Reset
	uri    bool   // the URI was replaced (Request.URI holds the new one)
	status int    // set-status: the new status, 0 = unchanged
	reason []byte // set-status's reason, nil = HAProxy's for the status
}

type addedHeader struct {
	name, value []byte
	dead        bool
}

// Reset empties e for a request with n received header lines.
func (e *Edits) Reset(n int) {
	e.hidden = slices.Grow(e.hidden[:0], n)[:n]
	clear(e.hidden)
	clear(e.added) // drop references to the last request's values
	e.added = e.added[:0]
	e.arena = e.arena[:0]
	e.uri = false
	e.status, e.reason = 0, nil
}

// Status returns the status and reason phrase set-status gave a
// response; ok is false when no rule changed it. The reason is the
// rule's, else HAProxy's phrase for the code (Reason).
func (e *Edits) Status() (code int, reason []byte, ok bool) {
	if e == nil || e.status == 0 {
		return 0, nil, false
	}
	if e.reason != nil {
		return e.status, e.reason, true
	}
	return e.status, []byte(Reason(e.status)), true
}

// status returns the response's status after set-status rules.
func (res *Response) status() int {
	if res.Edits != nil && res.Edits.status != 0 {
		return res.Edits.status
	}
	return res.Status
}

// Changed reports whether any header, the URI or the status was changed.
func (e *Edits) Changed() bool {
	if e.uri || len(e.added) > 0 || e.status != 0 {
		return true
	}
	for _, h := range e.hidden {
		if h {
			return true
		}
	}
	return false
}

// URIChanged reports whether set-path replaced Request.URI.
func (e *Edits) URIChanged() bool { return e.uri }

// Hidden reports whether received header line i was removed or replaced.
func (e *Edits) Hidden(i int) bool { return i < len(e.hidden) && e.hidden[i] }

// NumAdded returns the number of header lines added by rules; AddedAt
// returns line i (ok false when a later rule removed it).
func (e *Edits) NumAdded() int { return len(e.added) }

// AddedAt returns added header line i; ok is false if a later rule removed it.
func (e *Edits) AddedAt(i int) (name, value []byte, ok bool) {
	a := &e.added[i]
	return a.name, a.value, !a.dead
}

// Replace hides received header line i and, unless value is empty, adds
// a line name: value in its place (the engine's own edits: a persistence
// cookie taken out of a Cookie header). value is copied.
func (e *Edits) Replace(i int, name, value []byte) {
	if n := i + 1; len(e.hidden) < n {
		e.hidden = append(e.hidden, make([]bool, n-len(e.hidden))...)
	}
	e.hidden[i] = true
	if len(value) == 0 {
		return
	}
	start := len(e.arena)
	e.arena = append(e.arena, value...)
	e.added = append(e.added, addedHeader{name: name, value: e.arena[start:len(e.arena):len(e.arena)]})
}

// del hides every header of h named name, received or added.
func (e *Edits) del(h Headers, name []byte) {
	if h != nil {
		if n := h.NumHeaders(); len(e.hidden) < n { // Reset not called
			e.hidden = append(e.hidden, make([]bool, n-len(e.hidden))...)
		}
		for i := range h.NumHeaders() {
			if n, _ := h.HeaderAt(i); bytes.EqualFold(n, name) {
				e.hidden[i] = true
			}
		}
	}
	for i := range e.added {
		if bytes.EqualFold(e.added[i].name, name) {
			e.added[i].dead = true
		}
	}
}

// apply runs a header or path action of a rule evaluated against r on the
// header list v (the request's or the response's); v.e is not nil. A
// set-header value is rendered before the old lines are removed, so that
// it may read them.
func (rule *Rule) apply(r *Request, v hdrView) {
	e := v.e
	switch rule.Action {
	case ActDelHeader:
		e.del(v.h, rule.name)
	case ActSetHeader, ActAddHeader:
		start := len(e.arena)
		e.arena = rule.value.append(e.arena, r)
		val := e.arena[start:len(e.arena):len(e.arena)]
		if rule.Action == ActSetHeader {
			e.del(v.h, rule.name)
		}
		e.added = append(e.added, addedHeader{name: rule.name, value: val})
	case ActSetPath:
		q := []byte(nil)
		if i := bytes.IndexByte(r.URI, '?'); i >= 0 {
			q = r.URI[i:]
		}
		start := len(e.arena)
		e.arena = rule.value.append(e.arena, r)
		e.arena = append(e.arena, q...)
		r.URI = e.arena[start:len(e.arena):len(e.arena)]
		e.uri = true
	}
}

// redirectReasons are the status lines of the redirect codes.
var redirectReasons = map[int]string{301: "Moved Permanently", 302: "Found", 303: "See Other", 307: "Temporary Redirect", 308: "Permanent Redirect"}

// AppendRedirect appends the response of a redirect rule for r to dst,
// byte for byte as HAProxy 2.6 writes it (302, 303 and 307 carry
// "cache-control: no-cache").
func (rule *Rule) AppendRedirect(dst []byte, r *Request) []byte {
	dst = append(dst, "HTTP/1.1 "...)
	dst = strconv.AppendInt(dst, int64(rule.Status), 10)
	dst = append(dst, ' ')
	dst = append(dst, redirectReasons[rule.Status]...)
	dst = append(dst, "\r\ncontent-length: 0\r\nlocation: "...)
	switch rule.rkind {
	case "location":
		dst = append(dst, rule.redir...)
	case "prefix", "scheme":
		if rule.rkind == "scheme" {
			dst = append(dst, rule.redir...)
			dst = append(dst, "://"...)
			var it iter
			if h, ok := nextHeaderValue(r.headers(false), hostName, &it); ok {
				dst = append(dst, h...)
			}
		} else if rule.redir != "/" {
			dst = append(dst, rule.redir...)
		}
		uri := r.URI
		if rule.rkind == "scheme" {
			if p := pathOf(uri); p != nil {
				uri = uri[len(uri)-len(p)-len(queryOf(uri)):]
			}
		}
		path, query := uri, []byte(nil)
		if i := bytes.IndexByte(uri, '?'); i >= 0 {
			path, query = uri[:i], uri[i:]
		}
		dst = append(dst, path...)
		if rule.slash && (len(path) == 0 || path[len(path)-1] != '/') {
			dst = append(dst, '/')
		}
		if !rule.dropQ {
			dst = append(dst, query...)
		}
	}
	dst = append(dst, "\r\n"...)
	if rule.Status == 302 || rule.Status == 303 || rule.Status == 307 {
		dst = append(dst, "cache-control: no-cache\r\n"...)
	}
	return append(dst, "\r\n"...)
}

// queryOf returns "?query" of a URI, or nil.
func queryOf(uri []byte) []byte {
	if i := bytes.IndexByte(uri, '?'); i >= 0 {
		return uri[i:]
	}
	return nil
}

// format is a value of set-header, add-header or set-path: literal text
// with %[fetch] samples, HAProxy's log-format restricted to sample fetches
// without converters.
type format []formatPart

type formatPart struct {
	lit []byte
	f   *fetch
}

// parseFormat compiles a value; %% is a literal percent sign. res says
// the value belongs to an http_response rule: it may read the response.
func (sc *Scope) parseFormat(s string, res bool) (format, error) {
	var out format
	var lit []byte
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			lit = append(lit, s[i])
			continue
		}
		switch {
		case strings.HasPrefix(s[i:], "%%"):
			lit = append(lit, '%')
			i++
		case strings.HasPrefix(s[i:], "%["):
			end := strings.IndexByte(s[i:], ']')
			if end < 0 {
				return nil, fmt.Errorf("missing ']' in '%s'", s)
			}
			expr := s[i+2 : i+end]
			if strings.ContainsAny(expr, ", ") && !strings.Contains(expr, "(") {
				return nil, fmt.Errorf("converters are not supported in '%%[%s]'", expr)
			}
			if k := strings.IndexByte(expr, ')'); k >= 0 && k+1 < len(expr) {
				return nil, fmt.Errorf("converters are not supported in '%%[%s]'", expr)
			}
			name, args, hasArgs := expr, "", false
			if k := strings.IndexByte(expr, '('); k >= 0 {
				if !strings.HasSuffix(expr, ")") {
					return nil, fmt.Errorf("missing closing ')' in '%%[%s]'", expr)
				}
				name, args, hasArgs = expr[:k], expr[k+1:len(expr)-1], true
			}
			def := fetchByName(name)
			if def == nil {
				return nil, fmt.Errorf("unknown fetch method '%s' in '%%[%s]'", name, expr)
			}
			if def.res && !res {
				return nil, fmt.Errorf("fetch '%s' in '%%[%s]' reads the response, which only http_response rules can see", name, expr)
			}
			f, err := sc.parseFetch(def, expr, args, hasArgs)
			if err != nil {
				return nil, err
			}
			if len(lit) > 0 {
				out = append(out, formatPart{lit: lit})
				lit = nil
			}
			out = append(out, formatPart{f: f})
			i += end
		default:
			return nil, fmt.Errorf("only %%[fetch] and %%%% are supported in values, got '%s'", s)
		}
	}
	if len(lit) > 0 {
		out = append(out, formatPart{lit: lit})
	}
	return out, nil
}

// append renders the value for r: each fetch's sample (fetch.value) as
// text.
func (f format) append(dst []byte, r *Request) []byte {
	for _, p := range f {
		if p.f == nil {
			dst = append(dst, p.lit...)
			continue
		}
		if s, ok := p.f.value(r); ok {
			dst = sampleTextAppend(dst, s)
		}
	}
	return dst
}

// sampleTextAppend appends a sample as text.
func sampleTextAppend(dst []byte, s sample) []byte {
	switch s.t {
	case typeInt, typeBool:
		return strconv.AppendInt(dst, s.n, 10)
	case typeIP:
		return s.ip.AppendTo(dst)
	}
	return append(dst, s.s...)
}

// splitCond splits a rule's words at "if" or "unless" and compiles the
// condition (nil when there is none).
func (sc *Scope) splitCond(words []string, line int) ([]string, *Cond, error) {
	for i, w := range words {
		if w == "if" || w == "unless" {
			c, err := sc.parseCond(words[i+1:], w == "unless", line)
			return words[:i], c, err
		}
	}
	return words, nil, nil
}

// ruleHead splits an http_request or http_response rule into its words
// before the condition (the action first, never empty) and a Rule holding
// the compiled condition, the text and the line. For a request rule
// (request true), a condition on the response is errResponseFetch.
func (sc *Scope) ruleHead(text string, line int, request bool) (*Rule, []string, error) {
	words, err := splitWords(text)
	if err != nil {
		return nil, nil, err
	}
	if len(words) == 0 {
		return nil, nil, fmt.Errorf("empty rule")
	}
	args, cond, err := sc.splitCond(words, line)
	if err != nil {
		return nil, nil, err
	}
	if request && cond != nil && cond.res {
		return nil, nil, errResponseFetch
	}
	if len(args) == 0 {
		return nil, nil, fmt.Errorf("missing action before '%s'", words[0])
	}
	return &Rule{Cond: cond, Text: text, Line: line}, args, nil
}

// HTTPRule compiles one http_request rule, e.g.
// "deny deny_status 429 if { path_beg /admin } !internal".
func (sc *Scope) HTTPRule(text string, line int) (*Rule, error) {
	rule, args, err := sc.ruleHead(text, line, true)
	if err != nil {
		return nil, err
	}
	act, opts := args[0], args[1:]
	if ok, err := gpcAction(rule, act, opts); ok {
		if err != nil {
			return nil, err
		}
		return rule, nil
	}
	need := func(n int, usage string) error {
		if len(opts) != n {
			return fmt.Errorf("'%s' expects %s", act, usage)
		}
		return nil
	}
	switch act {
	case "allow":
		rule.Action = ActAllow
		err = need(0, "no argument")
	case "deny":
		rule.Action, rule.Status = ActDeny, 403
		for len(opts) > 0 && err == nil {
			switch opts[0] {
			case "deny_status", "status":
				if len(opts) < 2 {
					return nil, fmt.Errorf("'deny %s' expects a status code", opts[0])
				}
				rule.Status, err = statusArg(opts[1], DenyStatuses)
				opts = opts[2:]
			default:
				err = fmt.Errorf("'deny': unsupported option '%s' (supported: deny_status)", opts[0])
			}
		}
	case "return":
		err = rule.parseReturn(opts)
	case "redirect":
		err = rule.parseRedirect(opts)
	case "set-header", "add-header":
		rule.Action = ActSetHeader
		if act == "add-header" {
			rule.Action = ActAddHeader
		}
		if err = need(2, "<name> <fmt>"); err == nil {
			rule.name = []byte(opts[0])
			rule.value, err = sc.parseFormat(opts[1], false)
		}
	case "del-header":
		rule.Action = ActDelHeader
		if err = need(1, "<name>"); err == nil {
			rule.name = []byte(opts[0])
		}
	case "set-path":
		rule.Action = ActSetPath
		if err = need(1, "<fmt>"); err == nil {
			rule.value, err = sc.parseFormat(opts[0], false)
		}
	case "track-sc0", "track-sc1", "track-sc2":
		err = sc.parseTrack(rule, act, opts)
	case "auth":
		// auth [realm <realm>]: the realm defaults to the section's name,
		// as HAProxy's px->id.
		rule.Action, rule.Status, rule.redir = ActAuth, 401, sc.proxy
		switch {
		case len(opts) == 0:
		case len(opts) == 2 && opts[0] == "realm":
			rule.redir = opts[1]
		case opts[0] == "realm":
			err = fmt.Errorf("'auth': missing realm value")
		default:
			err = fmt.Errorf("'auth': unsupported option '%s' (supported: realm <realm>)", opts[0])
		}
	default:
		return nil, fmt.Errorf("unknown http_request action '%s' (supported: add-header, allow, auth, del-header, deny, redirect, return, sc-inc-gpc0(N), sc-inc-gpc1(N), sc-set-gpt0(N), set-header, set-path, track-sc0, track-sc1, track-sc2)", act)
	}
	if err != nil {
		return nil, err
	}
	return rule, nil
}

// HTTPResponseRule compiles one http_response rule, in HAProxy's syntax:
//
//	allow [if|unless COND]
//	deny [deny_status N] [if|unless COND]      (N defaults to 502)
//	set-header NAME FMT [if|unless COND]
//	add-header NAME FMT [if|unless COND]
//	del-header NAME [if|unless COND]
//	set-status N [reason STR] [if|unless COND]
//
// Conditions and values may use the response fetches (status, res.hdr,
// shdr, res.hdr_cnt, res.ver) besides the request's and the
// connection's.
func (sc *Scope) HTTPResponseRule(text string, line int) (*Rule, error) {
	rule, args, err := sc.ruleHead(text, line, false)
	if err != nil {
		return nil, err
	}
	act, opts := args[0], args[1:]
	if ok, err := gpcAction(rule, act, opts); ok {
		if err != nil {
			return nil, err
		}
		return rule, nil
	}
	need := func(n int, usage string) error {
		if len(opts) != n {
			return fmt.Errorf("'%s' expects %s", act, usage)
		}
		return nil
	}
	switch act {
	case "allow":
		rule.Action = ActAllow
		err = need(0, "no argument")
	case "deny":
		rule.Action, rule.Status = ActDeny, DefaultResponseDenyStatus
		for len(opts) > 0 && err == nil {
			switch opts[0] {
			case "deny_status", "status":
				if len(opts) < 2 {
					return nil, fmt.Errorf("'deny %s' expects a status code", opts[0])
				}
				rule.Status, err = statusArg(opts[1], DenyStatuses)
				opts = opts[2:]
			default:
				err = fmt.Errorf("'deny': unsupported option '%s' (supported: deny_status)", opts[0])
			}
		}
	case "set-header", "add-header":
		rule.Action = ActSetHeader
		if act == "add-header" {
			rule.Action = ActAddHeader
		}
		if err = need(2, "<name> <fmt>"); err == nil {
			if err = headerName(opts[0]); err == nil {
				rule.name = []byte(opts[0])
				rule.value, err = sc.parseFormat(opts[1], true)
			}
		}
	case "del-header":
		rule.Action = ActDelHeader
		if err = need(1, "<name>"); err == nil {
			if err = headerName(opts[0]); err == nil {
				rule.name = []byte(opts[0])
			}
		}
	case "set-status":
		rule.Action = ActSetStatus
		if len(opts) != 1 && (len(opts) != 3 || opts[1] != "reason") {
			return nil, fmt.Errorf("'set-status' expects <status> [reason <str>]")
		}
		n, aerr := strconv.Atoi(opts[0])
		if aerr != nil || n < 100 || n > 999 {
			// HAProxy's range for set-status.
			return nil, fmt.Errorf("'set-status' expects an HTTP status code between 100 and 999, got '%s'", opts[0])
		}
		rule.Status = n
		if len(opts) == 3 {
			if strings.ContainsAny(opts[2], "\r\n") {
				return nil, fmt.Errorf("'set-status': the reason must not contain CR or LF")
			}
			rule.reason = []byte(opts[2])
		}
	default:
		return nil, fmt.Errorf("unknown http_response action '%s' (supported: add-header, allow, del-header, deny, sc-inc-gpc0(N), sc-inc-gpc1(N), sc-set-gpt0(N), set-header, set-status)", act)
	}
	if err != nil {
		return nil, err
	}
	return rule, nil
}

// headerName checks a header name of a rule: a token (RFC 9110, section
// 5.6.2), so that an edit cannot write a broken head.
func headerName(name string) error {
	if name == "" {
		return fmt.Errorf("empty header name")
	}
	for i := 0; i < len(name); i++ {
		if !isTchar(name[i]) {
			return fmt.Errorf("invalid header name '%s'", name)
		}
	}
	return nil
}

// isTchar reports whether c may appear in a token.
func isTchar(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

// statusArg parses a status code that must be one of allowed (nil: 200..599).
func statusArg(s string, allowed []int) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("status code must be an integer, got '%s'", s)
	}
	if allowed != nil && !slices.Contains(allowed, n) {
		return 0, fmt.Errorf("status %d has no built-in error page (one of %s)", n, joinInts(allowed))
	}
	if n < 200 || n > 599 {
		return 0, fmt.Errorf("status code must be 200..599, got %d", n)
	}
	return n, nil
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ", ")
}

// parseReturn compiles `return [status N] [content-type T] [string S]`
// into its response, as HAProxy 2.6 writes it.
func (rule *Rule) parseReturn(opts []string) error {
	rule.Action, rule.Status = ActReturn, 200
	ctype, body, hasBody := "", "", false
	for len(opts) > 0 {
		if len(opts) < 2 {
			return fmt.Errorf("'return %s' expects an argument", opts[0])
		}
		switch opts[0] {
		case "status":
			n, err := statusArg(opts[1], nil)
			if err != nil {
				return err
			}
			rule.Status = n
		case "content-type":
			ctype = opts[1]
		case "string":
			body, hasBody = opts[1], true
		default:
			return fmt.Errorf("'return': unsupported option '%s' (supported: status, content-type, string)", opts[0])
		}
		opts = opts[2:]
	}
	if hasBody && ctype == "" {
		return fmt.Errorf("'return': 'string' needs a 'content-type'")
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "HTTP/1.1 %d %s\r\ncontent-length: %d\r\n", rule.Status, Reason(rule.Status), len(body))
	if ctype != "" {
		fmt.Fprintf(&b, "content-type: %s\r\n", ctype)
	}
	b.WriteString("\r\n")
	b.WriteString(body)
	rule.Response = b.Bytes()
	return nil
}

// parseRedirect compiles `redirect location|prefix|scheme VALUE [code N]
// [drop-query] [append-slash]`.
func (rule *Rule) parseRedirect(opts []string) error {
	rule.Action, rule.Status = ActRedirect, 302
	if len(opts) < 2 {
		return fmt.Errorf("'redirect' expects location, prefix or scheme and a value")
	}
	switch opts[0] {
	case "location", "prefix", "scheme":
		rule.rkind, rule.redir = opts[0], opts[1]
	default:
		return fmt.Errorf("'redirect' expects location, prefix or scheme, got '%s'", opts[0])
	}
	if strings.Contains(rule.redir, "%[") {
		return fmt.Errorf("'redirect': log-format values are not supported yet, got '%s'", rule.redir)
	}
	for opts = opts[2:]; len(opts) > 0; opts = opts[1:] {
		switch opts[0] {
		case "code":
			if len(opts) < 2 {
				return fmt.Errorf("'redirect code' expects 301, 302, 303, 307 or 308")
			}
			n, err := strconv.Atoi(opts[1])
			if _, ok := redirectReasons[n]; err != nil || !ok {
				return fmt.Errorf("'redirect code' expects 301, 302, 303, 307 or 308, got '%s'", opts[1])
			}
			rule.Status = n
			opts = opts[1:]
		case "drop-query":
			rule.dropQ = true
		case "append-slash":
			rule.slash = true
		default:
			return fmt.Errorf("'redirect': unsupported option '%s' (supported: code, drop-query, append-slash)", opts[0])
		}
	}
	return nil
}

// TCPRule compiles one tcp_request rule; only the connection stage
// exists yet: "connection accept|reject [if|unless COND]" and
// "connection track-sc0|1|2 KEY [table NAME] [if|unless COND]". The key and
// the condition may use layer-4 fetches only (src, src_port, dst,
// dst_port) and the counters tracked by earlier rules (sc_*).
func (sc *Scope) TCPRule(text string, line int) (*Rule, error) {
	words, err := splitWords(text)
	if err != nil {
		return nil, err
	}
	if len(words) == 0 {
		return nil, fmt.Errorf("empty rule")
	}
	if words[0] != "connection" {
		return nil, fmt.Errorf("unsupported tcp_request stage '%s' (supported: connection)", words[0])
	}
	args, cond, err := sc.splitCond(words[1:], line)
	if err != nil {
		return nil, err
	}
	rule := &Rule{Cond: cond, Text: text, Line: line}
	if len(args) == 0 {
		return nil, fmt.Errorf("'connection' expects an action: accept, reject or track-sc0/1/2")
	}
	act, opts := args[0], args[1:]
	if ok, err := gpcAction(rule, act, opts); ok {
		if err != nil {
			return nil, err
		}
		if cond != nil && cond.l7 {
			return nil, fmt.Errorf("condition uses HTTP fetches, which tcp_request connection rules cannot see (only src, src_port, dst, dst_port)")
		}
		return rule, nil
	}
	switch act {
	case "accept", "reject":
		rule.Action = ActAccept
		if act == "reject" {
			rule.Action = ActReject
		}
		if len(opts) > 0 {
			return nil, fmt.Errorf("'connection %s' takes no argument, got '%s'", act, opts[0])
		}
	case "track-sc0", "track-sc1", "track-sc2":
		if err := sc.parseTrack(rule, act, opts); err != nil {
			return nil, err
		}
		if rule.key.L7() {
			return nil, fmt.Errorf("'connection %s': fetch '%s' needs an HTTP request, which tcp_request connection rules cannot see (only src, src_port, dst, dst_port)", act, rule.key)
		}
	default:
		return nil, fmt.Errorf("unknown tcp_request connection action '%s' (supported: accept, reject, sc-inc-gpc0(N), sc-inc-gpc1(N), sc-set-gpt0(N), track-sc0, track-sc1, track-sc2)", act)
	}
	if cond != nil && cond.l7 {
		return nil, fmt.Errorf("condition uses HTTP fetches, which tcp_request connection rules cannot see (only src, src_port, dst, dst_port)")
	}
	return rule, nil
}

// Realm returns the realm of an auth rule's Basic challenge.
func (r *Rule) Realm() string { return r.redir }

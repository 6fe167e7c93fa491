package acl

// ACL expressions and conditions.
//
// An ACL expression is "fetch [flags] [patterns...]": a sample fetch, the
// flags -i, -f FILE, -m METHOD, -n, -u and "--" (end of flags), then the
// patterns. The fetch's name may carry a match suffix (path_beg,
// hdr_dom(host)). A named ACL is the OR of its definitions. A condition
// is "[!]acl [!]acl ... [|| ...]": terms side by side AND together, "||"
// (or "or") separates alternatives, and "{ expression }" is an anonymous
// ACL.

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// term is one compiled ACL expression.
type term struct {
	f       *fetch
	m       method
	indexes []*index // the expression's own set, then one per -f file
}

// eval reports whether a value of the fetch matches.
func (t *term) eval(r *Request) bool {
	var it iter
	for {
		s, ok := t.f.next(r, &it)
		if !ok {
			return false
		}
		if t.m == mFound {
			return true
		}
		for _, ix := range t.indexes {
			if ix.cur.Load().match(s) {
				return true
			}
		}
	}
}

// namedACL is an ACL: the OR of its expressions.
type namedACL struct {
	name  string
	terms []*term
	l7    bool // one of its fetches needs an HTTP request
	res   bool // one of its fetches needs a response (http_response only)
}

func (a *namedACL) eval(r *Request) bool {
	for _, t := range a.terms {
		if t.eval(r) {
			return true
		}
	}
	return false
}

// condTerm is one ACL reference of a condition, maybe negated.
type condTerm struct {
	neg bool
	acl *namedACL
}

// Cond is a compiled condition: `if` or `unless`, then alternatives of
// ACLs ANDed together. A nil *Cond always holds.
type Cond struct {
	unless bool
	or     [][]condTerm
	l7     bool
	res    bool // uses response fetches: only http_response rules may
}

// Eval reports whether the condition holds for r. It allocates nothing.
func (c *Cond) Eval(r *Request) bool {
	if c == nil {
		return true
	}
	res := false
	for _, and := range c.or {
		ok := true
		for _, t := range and {
			if t.acl.eval(r) == t.neg {
				ok = false
				break
			}
		}
		if ok {
			res = true
			break
		}
	}
	return res != c.unless
}

// Scope compiles the ACLs and rules of one frontend or backend: named ACLs
// are visible only in the section that defines them, as in HAProxy.
type Scope struct {
	reg   *Registry
	named map[string]*namedACL
	proxy string // the section's name: auth's default realm
}

// NewScope returns a scope compiling into reg.
func (reg *Registry) NewScope() *Scope {
	return &Scope{reg: reg, named: map[string]*namedACL{}}
}

// SetProxy names the frontend or backend the scope compiles: an auth rule
// without a realm announces this name, as HAProxy does.
func (sc *Scope) SetProxy(name string) { sc.proxy = name }

// Define adds a definition to the named ACL name (definitions of one name
// OR together). line is where it is written, for `show acl`.
func (sc *Scope) Define(name, expr string, line int) error {
	if name == "" || strings.ContainsAny(name, " \t{}!|") {
		return fmt.Errorf("invalid ACL name %q", name)
	}
	if _, ok := predefined[name]; ok {
		return fmt.Errorf("ACL name %q is reserved (a predefined ACL)", name)
	}
	words, err := splitWords(expr)
	if err != nil {
		return err
	}
	if len(words) == 0 {
		return fmt.Errorf("missing fetch in ACL %q", name)
	}
	t, err := sc.parseExpr(words, line)
	if err != nil {
		return err
	}
	a := sc.named[name]
	if a == nil {
		a = &namedACL{name: name}
		sc.named[name] = a
	}
	a.terms = append(a.terms, t)
	a.l7 = a.l7 || t.f.def.l7
	a.res = a.res || t.f.def.res
	return nil
}

// predefined are HAProxy's predefined ACLs that make sense here.
var predefined = map[string]string{
	"TRUE":           "always_true",
	"FALSE":          "always_false",
	"LOCALHOST":      "src 127.0.0.1/8 ::1",
	"HTTP_1.0":       "req.ver 1.0",
	"HTTP_1.1":       "req.ver 1.1",
	"HTTP_URL_ABS":   "url_reg ^[^/:]*://",
	"HTTP_URL_SLASH": "url_beg /",
	"HTTP_URL_STAR":  "url *",
	"METH_CONNECT":   "method CONNECT",
	"METH_DELETE":    "method DELETE",
	"METH_GET":       "method GET HEAD",
	"METH_HEAD":      "method HEAD",
	"METH_OPTIONS":   "method OPTIONS",
	"METH_POST":      "method POST",
	"METH_PUT":       "method PUT",
	"METH_TRACE":     "method TRACE",
}

// lookup returns the named ACL, compiling a predefined one on first use.
func (sc *Scope) lookup(name string, line int) (*namedACL, error) {
	if a := sc.named[name]; a != nil {
		return a, nil
	}
	def, ok := predefined[name]
	if !ok {
		return nil, fmt.Errorf("unknown ACL '%s'", name)
	}
	a := &namedACL{name: name}
	switch def {
	case "always_true", "always_false":
		a.terms = []*term{constTerm(def == "always_true")}
	default:
		words, _ := splitWords(def)
		t, err := sc.parseExpr(words, line)
		if err != nil {
			return nil, err
		}
		a.terms = []*term{t}
		a.l7, a.res = t.f.def.l7, t.f.def.res
	}
	sc.named[name] = a
	return a, nil
}

// constTerm is a term that always or never matches (TRUE, FALSE).
func constTerm(v bool) *term {
	def := &fetchDef{name: "always", out: typeBool, id: fConst}
	n := 0
	if v {
		n = 1
	}
	ix := &index{m: mBool}
	ix.cur.Store(&patterns{m: mBool})
	return &term{f: &fetch{def: def, occ: n}, m: mBool, indexes: []*index{ix}}
}

// parseExpr compiles one ACL expression from its words.
func (sc *Scope) parseExpr(words []string, line int) (*term, error) {
	kw := words[0]
	name, args, hasArgs := kw, "", false
	if i := strings.IndexByte(kw, '('); i >= 0 {
		if !strings.HasSuffix(kw, ")") {
			return nil, fmt.Errorf("missing closing ')' after arguments to fetch '%s'", kw)
		}
		name, args, hasArgs = kw[:i], kw[i+1:len(kw)-1], true
	}
	def := fetchByName(name)
	m, hasMethod := method(0), false
	if def == nil {
		// path_beg, hdr_dom(host): a fetch and a match suffix.
		if i := strings.LastIndexByte(name, '_'); i > 0 {
			base, suffix := name[:i], name[i+1:]
			if d := fetchByName(base); d != nil && slices.Contains(strings.Fields(d.derive), suffix) {
				def = d
				switch suffix {
				case "ip":
					m = mIP
				default:
					m, _ = methodByName(suffix)
				}
				hasMethod = true
			}
		}
	}
	if def == nil {
		return nil, fmt.Errorf("unknown fetch method '%s' in ACL expression '%s'", name, kw)
	}
	f, err := sc.parseFetch(def, kw, args, hasArgs)
	if err != nil {
		return nil, err
	}
	f.groups = def.id == fAuthGroup // the ACL form matches groups
	if !hasMethod {
		m = defaultMethod(def.out)
	}
	icase := false
	var files []string
	rest := words[1:]
flags:
	for len(rest) > 0 && strings.HasPrefix(rest[0], "-") {
		switch rest[0] {
		case "-i":
			icase = true
		case "-n", "-u":
			// No duplicate-removal or unique-id semantics needed here.
		case "--":
			rest = rest[1:]
			break flags
		case "-f", "-m":
			if len(rest) < 2 {
				return nil, fmt.Errorf("missing argument to '%s' in ACL expression '%s'", rest[0], kw)
			}
			if rest[0] == "-f" {
				files = append(files, rest[1])
			} else {
				mm, ok := methodByName(rest[1])
				if !ok {
					return nil, fmt.Errorf("unknown match method '%s' after -m (one of %s)", rest[1], strings.Join(methodNames[:], ", "))
				}
				if hasMethod && mm != m {
					return nil, fmt.Errorf("'-m %s' conflicts with the match method of '%s'", rest[1], name)
				}
				m, hasMethod = mm, true
			}
			rest = rest[1:]
		default:
			if !looksLikeNumber(rest[0]) {
				return nil, fmt.Errorf("unknown flag '%s' in ACL expression '%s'", rest[0], kw)
			}
			break flags
		}
		rest = rest[1:]
	}
	if !compatible(def.out, m) {
		return nil, fmt.Errorf("match method '%s' cannot be used with fetch '%s' (it returns %s)", m, def.name, def.out)
	}
	if (m == mFound || m == mBool) && (len(rest) > 0 || len(files) > 0) {
		if m == mFound || len(rest) > 0 {
			return nil, fmt.Errorf("match method '%s' takes no pattern", m)
		}
	}
	if m != mFound && m != mBool && len(rest) == 0 && len(files) == 0 {
		return nil, fmt.Errorf("no pattern to match against for '%s' (add patterns, -f FILE or -m found)", kw)
	}
	// Inline patterns, with the integer operators in force.
	var texts []patternText
	op := ""
	for _, w := range rest {
		if (m == mInt || m == mLen) && operators[w] {
			op = w
			continue
		}
		if _, err := compilePattern(m, icase, w, op); err != nil {
			return nil, err
		}
		texts = append(texts, patternText{w, op})
	}
	t := &term{f: f, m: m}
	validate := func(p string) error { _, err := compilePattern(m, icase, p, ""); return err }
	var fileSets []*Set
	for _, file := range files {
		s, err := sc.reg.fileSet(file, line, validate)
		if err != nil {
			return nil, err
		}
		fileSets = append(fileSets, s)
	}
	// The expression's own set comes after its files, as HAProxy numbers them.
	own := sc.reg.newSet("", fmt.Sprintf("acl '%s' file '%s' line %d.", name, sc.reg.file, line))
	for _, p := range texts {
		own.entries = append(own.entries, Entry{ID: sc.reg.nextID.Add(1), Pattern: p.text})
	}
	ops := make([]string, len(texts))
	for i, p := range texts {
		ops[i] = p.op
	}
	for i, s := range append([]*Set{own}, fileSets...) {
		ix := &index{m: m, icase: icase}
		if i == 0 {
			s.attach(ix, ops)
		} else {
			s.attach(ix, nil)
		}
		t.indexes = append(t.indexes, ix)
	}
	return t, nil
}

// looksLikeNumber reports whether a word starting with '-' is a negative
// integer pattern rather than a flag.
func looksLikeNumber(w string) bool {
	if len(w) < 2 {
		return false
	}
	for _, c := range w[1:] {
		if (c < '0' || c > '9') && c != ':' {
			return false
		}
	}
	return true
}

// Condition compiles a condition written after if (unless: negate) of a
// request-time rule (use_backend, the stats page's admin). An empty
// expression is an error: a rule without a condition has no Cond.
// Response fetches (status, res.hdr) are refused: no response exists yet.
func (sc *Scope) Condition(expr string, unless bool, line int) (*Cond, error) {
	words, err := splitWords(expr)
	if err != nil {
		return nil, err
	}
	c, err := sc.parseCond(words, unless, line)
	if err == nil && c.res {
		return nil, errResponseFetch
	}
	return c, err
}

// errResponseFetch refuses a condition that reads the response where
// there is none yet. HAProxy 2.6 warns that such an ACL "will never
// match"; fulcrum refuses it, since it could only be a mistake.
var errResponseFetch = errors.New("condition uses response fetches (status, res.hdr, shdr, res.ver...), which only http_response rules can see")

// parseCond compiles the words of a condition.
func (sc *Scope) parseCond(words []string, unless bool, line int) (*Cond, error) {
	kw := "if"
	if unless {
		kw = "unless"
	}
	if len(words) == 0 {
		return nil, fmt.Errorf("missing condition after '%s'", kw)
	}
	c := &Cond{unless: unless}
	var and []condTerm
	for i := 0; i < len(words); i++ {
		w := words[i]
		if w == "||" || w == "or" {
			if len(and) == 0 {
				return nil, fmt.Errorf("missing ACL before '%s'", w)
			}
			c.or = append(c.or, and)
			and = nil
			continue
		}
		neg := false
		for strings.HasPrefix(w, "!") {
			neg = !neg
			w = w[1:]
		}
		if w == "" {
			if i+1 >= len(words) {
				return nil, fmt.Errorf("missing ACL after '!'")
			}
			i++
			w = words[i]
		}
		var a *namedACL
		switch {
		case w == "{":
			end := slices.Index(words[i+1:], "}")
			if end < 0 {
				return nil, fmt.Errorf("missing '}' after anonymous ACL")
			}
			inner := words[i+1 : i+1+end]
			if len(inner) == 0 {
				return nil, fmt.Errorf("empty anonymous ACL '{ }'")
			}
			t, err := sc.parseExpr(inner, line)
			if err != nil {
				return nil, err
			}
			a = &namedACL{terms: []*term{t}, l7: t.f.def.l7, res: t.f.def.res}
			i += end + 1
		case w == "}":
			return nil, fmt.Errorf("unexpected '}' in condition")
		case strings.HasPrefix(w, "{"):
			return nil, fmt.Errorf("'{' must be followed by a space in '%s'", w)
		default:
			var err error
			if a, err = sc.lookup(w, line); err != nil {
				return nil, err
			}
		}
		c.l7 = c.l7 || a.l7
		c.res = c.res || a.res
		and = append(and, condTerm{neg: neg, acl: a})
	}
	if len(and) == 0 {
		return nil, fmt.Errorf("missing ACL after '||'")
	}
	c.or = append(c.or, and)
	return c, nil
}

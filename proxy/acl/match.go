package acl

// Matchers: how a fetched value is compared with an ACL's patterns. Each
// match method (HAProxy's pat_match_*) parses its patterns once, when the
// ACL is compiled or a pattern is added at runtime, into an immutable
// patterns value; matching reads it without locking or allocating.

import (
	"bytes"
	"fmt"
	"net/netip"
	"regexp"
	"strconv"
	"strings"
)

// method is a match method, the "-m" of an ACL.
type method uint8

const (
	mFound method = iota
	mBool
	mInt
	mIP
	mStr
	mBeg
	mEnd
	mSub
	mReg
	mDir
	mDom
	mLen
)

// methodNames are the "-m" names, indexed by method.
var methodNames = [...]string{"found", "bool", "int", "ip", "str", "beg", "end", "sub", "reg", "dir", "dom", "len"}

func (m method) String() string { return methodNames[m] }

func methodByName(name string) (method, bool) {
	for i, n := range methodNames {
		if n == name {
			return method(i), true
		}
	}
	return 0, false
}

// defaultMethod is the method of a fetch used without -m or a suffix.
func defaultMethod(t sampleType) method {
	switch t {
	case typeInt:
		return mInt
	case typeIP:
		return mIP
	case typeBool:
		return mBool
	}
	return mStr
}

// compatible reports whether values of type t can be matched with m,
// after HAProxy's casts (int and ip to string, string to int or ip).
func compatible(t sampleType, m method) bool {
	switch m {
	case mFound:
		return true
	case mBool:
		return t == typeBool || t == typeInt
	case mInt:
		return t == typeInt || t == typeBool || t == typeStr
	case mIP:
		return t == typeIP || t == typeStr
	case mLen:
		return t == typeStr
	}
	return t != typeBool // string methods: str, int and ip are cast to text
}

// intRange is an integer pattern: lo <= v <= hi, either end optional.
type intRange struct {
	lo, hi       int64
	hasLo, hasHi bool
}

func (r intRange) contains(v int64) bool {
	return (!r.hasLo || v >= r.lo) && (!r.hasHi || v <= r.hi)
}

// operators are the integer comparison words; each applies to the patterns
// that follow it until the next operator, as in HAProxy.
var operators = map[string]bool{"eq": true, "ge": true, "gt": true, "le": true, "lt": true}

// parseIntPattern parses "N", "N:M", "N:", ":M" under operator op.
func parseIntPattern(s, op string) (intRange, error) {
	num := func(t string) (int64, error) {
		n, err := strconv.ParseInt(t, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("'%s' is not a number", s)
		}
		return n, nil
	}
	if lo, hi, ok := strings.Cut(s, ":"); ok {
		var r intRange
		var err error
		if lo != "" {
			if r.lo, err = num(lo); err != nil {
				return r, err
			}
			r.hasLo = true
		}
		if hi != "" {
			if r.hi, err = num(hi); err != nil {
				return r, err
			}
			r.hasHi = true
		}
		if !r.hasLo && !r.hasHi {
			return r, fmt.Errorf("'%s' is not a number", s)
		}
		return r, nil
	}
	n, err := num(s)
	if err != nil {
		return intRange{}, err
	}
	switch op {
	case "ge":
		return intRange{lo: n, hasLo: true}, nil
	case "gt":
		return intRange{lo: n + 1, hasLo: true}, nil
	case "le":
		return intRange{hi: n, hasHi: true}, nil
	case "lt":
		return intRange{hi: n - 1, hasHi: true}, nil
	}
	return intRange{lo: n, hi: n, hasLo: true, hasHi: true}, nil
}

// pattern is one compiled pattern of any method.
type pattern struct {
	s   []byte // string methods (lowercased under -i; _dir/_dom trimmed)
	re  *regexp.Regexp
	rng intRange
	ip  netip.Prefix
}

// compilePattern parses one pattern text for method m. op is the integer
// operator in force. The error wording follows HAProxy's where it has one.
func compilePattern(m method, icase bool, text, op string) (pattern, error) {
	switch m {
	case mFound, mBool:
		return pattern{}, fmt.Errorf("match method '%s' takes no pattern, got %q", m, text)
	case mInt, mLen:
		r, err := parseIntPattern(text, op)
		return pattern{rng: r}, err
	case mIP:
		p, err := parseIPPattern(text)
		return pattern{ip: p}, err
	case mReg:
		src := text
		if icase {
			src = "(?i)" + src
		}
		re, err := regexp.Compile(src)
		if err != nil {
			return pattern{}, fmt.Errorf("regex '%s' is invalid: %v", text, err)
		}
		return pattern{re: re}, nil
	}
	s := text
	if icase {
		s = strings.ToLower(s)
	}
	switch m {
	case mDir:
		s = strings.Trim(s, "/?")
	case mDom:
		s = strings.Trim(s, "/?.:")
	}
	return pattern{s: []byte(s)}, nil
}

// patterns is the compiled, immutable content of one index: every pattern
// of the sets an ACL expression reads, for its method and case flag.
type patterns struct {
	m     method
	icase bool
	strs  map[string]struct{} // mStr
	list  []pattern           // every other method but mIP
	ips   *ipSet              // mIP
}

// buildPatterns compiles texts (already validated) for m.
func buildPatterns(m method, icase bool, texts []patternText) *patterns {
	p := &patterns{m: m, icase: icase}
	switch m {
	case mStr:
		p.strs = make(map[string]struct{}, len(texts))
		for _, t := range texts {
			c, _ := compilePattern(m, icase, t.text, t.op)
			p.strs[string(c.s)] = struct{}{}
		}
	case mIP:
		nets := make([]netip.Prefix, 0, len(texts))
		for _, t := range texts {
			if c, err := compilePattern(m, icase, t.text, t.op); err == nil {
				nets = append(nets, c.ip)
			}
		}
		p.ips = buildIPSet(nets)
	default:
		for _, t := range texts {
			if c, err := compilePattern(m, icase, t.text, t.op); err == nil {
				p.list = append(p.list, c)
			}
		}
	}
	return p
}

// patternText is a pattern as written with the integer operator before it.
type patternText struct{ text, op string }

// match reports whether the sample s matches one of the patterns.
func (p *patterns) match(s sample) bool {
	switch p.m {
	case mFound:
		return true
	case mBool:
		return s.n != 0
	case mInt:
		v, ok := sampleInt(s)
		if !ok {
			return false
		}
		for i := range p.list {
			if p.list[i].rng.contains(v) {
				return true
			}
		}
		return false
	case mIP:
		a, ok := sampleIP(s)
		return ok && p.ips.contains(a)
	}
	if s.t != typeStr {
		return p.matchFormatted(s)
	}
	return p.matchText(s.s)
}

// matchFormatted matches an int or ip sample with a string method, as
// its text (HAProxy's cast).
func (p *patterns) matchFormatted(s sample) bool {
	var buf [64]byte
	return p.matchText(sampleText(s, buf[:0]))
}

// matchText matches text with a string method (str, beg, ..., reg, len).
func (p *patterns) matchText(b []byte) bool {
	switch p.m {
	case mLen:
		v := int64(len(b))
		for i := range p.list {
			if p.list[i].rng.contains(v) {
				return true
			}
		}
		return false
	case mStr:
		if !p.icase {
			_, ok := p.strs[string(b)] // no allocation: map index by converted bytes
			return ok
		}
		var low [256]byte
		if len(b) <= len(low) {
			for i, c := range b {
				low[i] = lower(c)
			}
			_, ok := p.strs[string(low[:len(b)])]
			return ok
		}
		for k := range p.strs {
			if len(k) == len(b) && equalFoldLower(b, k) {
				return true
			}
		}
		return false
	case mReg:
		for i := range p.list {
			if p.list[i].re.Match(b) {
				return true
			}
		}
		return false
	}
	for i := range p.list {
		if matchString(p.m, p.icase, b, p.list[i].s) {
			return true
		}
	}
	return false
}

// matchString applies a string method other than str and reg. pat is
// lowercase when icase is set.
func matchString(m method, icase bool, s, pat []byte) bool {
	switch m {
	case mBeg:
		return len(s) >= len(pat) && eq(s[:len(pat)], pat, icase)
	case mEnd:
		return len(s) >= len(pat) && eq(s[len(s)-len(pat):], pat, icase)
	case mSub:
		return indexFold(s, pat, icase) >= 0
	case mDir:
		return matchWord(s, pat, icase, isDirDelim)
	case mDom:
		return matchWord(s, pat, icase, isDomDelim)
	}
	return false
}

func isDirDelim(c byte) bool { return c == '/' || c == '?' }
func isDomDelim(c byte) bool { return c == '/' || c == '?' || c == '.' || c == ':' }

// matchWord reports whether pat occurs in s delimited on both sides by a
// delimiter or an end of s (HAProxy's match_word, for _dir and _dom). An
// empty pattern matches only a sample made of delimiters.
func matchWord(s, pat []byte, icase bool, delim func(byte) bool) bool {
	if len(pat) == 0 {
		for _, c := range s {
			if !delim(c) {
				return false
			}
		}
		return true
	}
	for start := 0; start+len(pat) <= len(s); {
		i := indexFold(s[start:], pat, icase)
		if i < 0 {
			return false
		}
		i += start
		end := i + len(pat)
		if (i == 0 || delim(s[i-1])) && (end == len(s) || delim(s[end])) {
			return true
		}
		start = i + 1
	}
	return false
}

func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// eq compares a sample part with a pattern (lowercase under icase).
func eq(s, pat []byte, icase bool) bool {
	if !icase {
		return bytes.Equal(s, pat)
	}
	for i := range s {
		if lower(s[i]) != pat[i] {
			return false
		}
	}
	return true
}

// equalFoldLower compares b case-insensitively with the lowercase k.
func equalFoldLower(b []byte, k string) bool {
	for i := range b {
		if lower(b[i]) != k[i] {
			return false
		}
	}
	return true
}

// indexFold is bytes.Index, case-insensitive against a lowercase pat.
func indexFold(s, pat []byte, icase bool) int {
	if !icase {
		return bytes.Index(s, pat)
	}
	for i := 0; i+len(pat) <= len(s); i++ {
		if eq(s[i:i+len(pat)], pat, true) {
			return i
		}
	}
	return -1
}

// sampleInt casts a sample to an integer: strings are parsed as decimal
// (HAProxy's str-to-int cast), failing for anything else.
func sampleInt(s sample) (int64, bool) {
	switch s.t {
	case typeInt, typeBool:
		return s.n, true
	case typeStr:
		b := s.s
		neg := false
		if len(b) > 0 && (b[0] == '-' || b[0] == '+') {
			neg, b = b[0] == '-', b[1:]
		}
		if len(b) == 0 || len(b) > 18 {
			return 0, false
		}
		var n int64
		for _, c := range b {
			if c < '0' || c > '9' {
				return 0, false
			}
			n = n*10 + int64(c-'0')
		}
		if neg {
			n = -n
		}
		return n, true
	}
	return 0, false
}

// sampleIP casts a sample to an address (strings are parsed).
func sampleIP(s sample) (netip.Addr, bool) {
	switch s.t {
	case typeIP:
		return s.ip, true
	case typeStr:
		a, err := netip.ParseAddr(bstr(s.s))
		if err != nil {
			return netip.Addr{}, false
		}
		return a.Unmap(), true
	}
	return netip.Addr{}, false
}

// sampleText returns the sample as text, appending to buf when it must be
// formatted (int, ip, bool).
func sampleText(s sample, buf []byte) []byte {
	switch s.t {
	case typeInt, typeBool:
		return strconv.AppendInt(buf, s.n, 10)
	case typeIP:
		return s.ip.AppendTo(buf)
	}
	return s.s
}

package acl

// Sample fetches: the values a condition reads from a request. Each fetch
// is a row of the fetches table (name, output type, arguments, layer); the
// parser, the matchers' compatibility checks and `fulcrum check` all read
// that table. A fetch returns its values one at a time through next, so
// that multi-valued fetches (every value of a header, every cookie of a
// name) are matched without building a list.

import (
	"bytes"
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/fulcrum-proxy/fulcrum/proxy/stick"
)

// sampleType is the type of a fetched value.
type sampleType uint8

const (
	typeStr sampleType = iota
	typeInt
	typeIP
	typeBool
)

func (t sampleType) String() string {
	return [...]string{"str", "int", "ip", "bool"}[t]
}

// sample is one fetched value. s aliases the request's buffers.
type sample struct {
	t  sampleType
	s  []byte
	n  int64 // typeInt; typeBool as 0 or 1
	ip netip.Addr
}

// iter is the position of a multi-valued fetch between two values.
type iter struct {
	i, j   int      // header index and offset inside its value
	n      int      // values returned so far
	groups [][]byte // http_auth_group in an ACL: the user's groups
}

// argKind says what a fetch takes between parentheses.
type argKind uint8

const (
	argNone     argKind = iota
	argName             // one required name: url_param(id), req.cook(SID)
	argNameOcc          // a name and an optional occurrence: hdr(host,-1)
	argOptional         // an optional name: req.hdr_cnt, req.hdr_cnt(x-a)
	argSlot             // a tracking counter number 0..2: sc_http_req_rate(0)
	argDN               // [entry[,occ[,format]]]: ssl_c_s_dn(CN), ssl_c_i_dn(,0,rfc2253)
)

// fetchDef is one row of the fetches table.
type fetchDef struct {
	name string
	out  sampleType
	args argKind
	l7   bool // needs an HTTP request (not at tcp_request connection)
	// res: reads the server's response (status, res.hdr): only
	// http_response rules may use it.
	res bool
	// derive lists the match suffixes HAProxy accepts on the name, as in
	// path_beg or hdr_dom(host).
	derive string
	id     fetchID
	// sc_* fetches (id fSC): the stored data type read from the tracked
	// entry, the counter slot (-1: from the argument) and whether the
	// value is shown in kilobytes (sc_kbytes_in).
	dt   stick.DataType
	slot int8
	kb   bool
	// clr: sc_clr_gpcN, src_clr_gpcN; inc: src_inc_gpcN (id fSrcTable;
	// fGPC is sc_inc_gpcN unless clr).
	clr, inc bool
}

// fetchID selects a fetch's function. Dispatch is a switch, not a func
// field, so that the compiler sees every callee and the iteration state
// stays on the stack (no allocation per request).
type fetchID uint8

const (
	fSrc fetchID = iota
	fSrcPort
	fDst
	fDstPort
	fMethod
	fPath
	fURL
	fQuery
	fURLParam
	fHdr
	fHdrCnt
	fHost
	fCook
	fVer
	fSSL
	fSSLSNI      // ssl_fc_sni
	fSSLProtocol // ssl_fc_protocol
	fSSLCipher   // ssl_fc_cipher
	fSSLALPN     // ssl_fc_alpn
	fSSLCUsed    // ssl_c_used
	fSSLCVerify  // ssl_c_verify
	fSSLCSDN     // ssl_c_s_dn
	fSSLCIDN     // ssl_c_i_dn
	fSSLCSerial  // ssl_c_serial
	fStatus      // status: the response's status code
	fResVer      // res.ver: the response's HTTP version
	fConst       // TRUE and FALSE: the fetch's occ holds the value
	fStr         // str(<string>): the constant string, its name
	fSC          // sc_*, scN_*: a data type of a tracked entry
	fGPC         // sc_inc_gpcN, sc_clr_gpcN: change a tracked entry's counter
	fSrcTable    // src_*: the client address's entry in a table, tracked or not
	fHTTPAuth    // http_auth(<userlist>)
	fAuthGroup   // http_auth_group(<userlist>)
	fAuthType    // http_auth_type
	fAuthUser    // http_auth_user
	fAuthPass    // http_auth_pass
	fAuthBearer  // http_auth_bearer([<header>])
)

// stringSuffixes are the ACL keyword suffixes of string fetches.
const stringSuffixes = "beg end sub dir dom reg len"

// fetches is the table of sample fetches, with HAProxy's names and aliases.
var fetches = []*fetchDef{
	{name: "src", out: typeIP, id: fSrc},
	{name: "src_port", out: typeInt, id: fSrcPort},
	{name: "dst", out: typeIP, id: fDst},
	{name: "dst_port", out: typeInt, id: fDstPort},
	{name: "method", out: typeStr, l7: true, id: fMethod},
	{name: "path", out: typeStr, l7: true, derive: stringSuffixes, id: fPath},
	{name: "url", out: typeStr, l7: true, derive: stringSuffixes + " ip", id: fURL},
	{name: "query", out: typeStr, l7: true, id: fQuery},
	{name: "url_param", out: typeStr, args: argName, l7: true, derive: stringSuffixes, id: fURLParam},
	{name: "urlp", out: typeStr, args: argName, l7: true, derive: stringSuffixes, id: fURLParam},
	{name: "hdr", out: typeStr, args: argNameOcc, l7: true, derive: stringSuffixes + " ip", id: fHdr},
	{name: "req.hdr", out: typeStr, args: argNameOcc, l7: true, id: fHdr},
	{name: "req.hdr_cnt", out: typeInt, args: argOptional, l7: true, id: fHdrCnt},
	{name: "hdr_cnt", out: typeInt, args: argOptional, l7: true, id: fHdrCnt},
	{name: "host", out: typeStr, l7: true, id: fHost},
	{name: "req.cook", out: typeStr, args: argName, l7: true, id: fCook},
	{name: "cook", out: typeStr, args: argName, l7: true, derive: stringSuffixes, id: fCook},
	{name: "req.ver", out: typeStr, l7: true, id: fVer},
	{name: "req_ver", out: typeStr, l7: true, id: fVer},
	{name: "ssl_fc", out: typeBool, id: fSSL},
	{name: "ssl_fc_sni", out: typeStr, derive: "end reg", id: fSSLSNI},
	{name: "ssl_fc_protocol", out: typeStr, id: fSSLProtocol},
	{name: "ssl_fc_cipher", out: typeStr, id: fSSLCipher},
	{name: "ssl_fc_alpn", out: typeStr, id: fSSLALPN},
	{name: "ssl_c_used", out: typeBool, id: fSSLCUsed},
	{name: "ssl_c_verify", out: typeInt, id: fSSLCVerify},
	{name: "ssl_c_s_dn", out: typeStr, args: argDN, id: fSSLCSDN},
	{name: "ssl_c_i_dn", out: typeStr, args: argDN, id: fSSLCIDN},
	// str(<string>): a constant string, HAProxy's (sni str(www.test)).
	{name: "str", out: typeStr, args: argName, id: fStr},
	// The response fetches, for http_response rules: HAProxy's names.
	{name: "status", out: typeInt, l7: true, res: true, id: fStatus},
	{name: "res.hdr", out: typeStr, args: argNameOcc, l7: true, res: true, id: fHdr},
	{name: "shdr", out: typeStr, args: argNameOcc, l7: true, res: true, derive: stringSuffixes + " ip", id: fHdr},
	{name: "res.hdr_cnt", out: typeInt, args: argOptional, l7: true, res: true, id: fHdrCnt},
	{name: "shdr_cnt", out: typeInt, args: argOptional, l7: true, res: true, id: fHdrCnt},
	{name: "res.ver", out: typeStr, l7: true, res: true, id: fResVer},
	{name: "resp_ver", out: typeStr, l7: true, res: true, id: fResVer},
	// ssl_c_serial is binary in HAProxy; fulcrum has no binary samples
	// and gives its upper-case hex (what HAProxy's ssl_c_serial,hex
	// gives), which is also how HAProxy's ACL patterns write it.
	{name: "ssl_c_serial", out: typeStr, id: fSSLCSerial},
	// User lists ([[userlist]]): Basic credentials checked against one.
	{name: "http_auth", out: typeBool, args: argName, l7: true, id: fHTTPAuth},
	{name: "http_auth_group", out: typeStr, args: argName, l7: true, id: fAuthGroup},
	// What the client sent in Authorization, unchecked (HAProxy 2.6).
	{name: "http_auth_type", out: typeStr, l7: true, id: fAuthType},
	{name: "http_auth_user", out: typeStr, l7: true, id: fAuthUser},
	{name: "http_auth_pass", out: typeStr, l7: true, id: fAuthPass},
	{name: "http_auth_bearer", out: typeStr, args: argOptional, l7: true, id: fAuthBearer},
}

// fetchByName finds a fetch by its exact name.
func fetchByName(name string) *fetchDef {
	for _, d := range fetches {
		if d.name == name {
			return d
		}
	}
	return nil
}

// fetch is a fetch with its arguments, compiled.
type fetch struct {
	def  *fetchDef
	text string // as written, for messages
	name []byte // argument name (header, parameter, cookie; DN entry)
	occ  int    // hdr occurrence: 0 all, n>0 the n-th, n<0 the n-th from the end
	rfc  bool   // ssl_c_*_dn: the rfc2253 format
	// ul is the user list of http_auth and http_auth_group; groups makes
	// http_auth_group return the user's groups (its ACL form).
	ul     *Userlist
	groups bool
}

// parseFetch parses "name" or "name(args)" with the definition def.
func parseFetch(def *fetchDef, text, args string, hasArgs bool) (*fetch, error) {
	f := &fetch{def: def, text: text}
	if !hasArgs {
		if def.args == argName || def.args == argNameOcc || def.args == argSlot {
			return nil, fmt.Errorf("fetch '%s' expects an argument: %s(<name>)", def.name, def.name)
		}
		return f, nil
	}
	if def.args == argNone {
		if args != "" {
			return nil, fmt.Errorf("fetch '%s' takes no argument, got %q", def.name, text)
		}
		return f, nil
	}
	if def.args == argDN {
		return parseDNArgs(f, args)
	}
	if def.args == argSlot {
		n, err := strconv.Atoi(strings.TrimSpace(args))
		if err != nil || n < 0 || n > 2 {
			return nil, fmt.Errorf("fetch '%s' expects a tracking counter number 0, 1 or 2, got %q", def.name, text)
		}
		f.occ = n
		return f, nil
	}
	name, occ, hasOcc := strings.Cut(args, ",")
	if name == "" && def.args != argOptional {
		return nil, fmt.Errorf("fetch '%s' expects a name argument, got %q", def.name, text)
	}
	f.name = []byte(name)
	if hasOcc {
		if def.args != argNameOcc {
			return nil, fmt.Errorf("fetch '%s' takes one argument, got %q", def.name, text)
		}
		n, err := strconv.Atoi(strings.TrimSpace(occ))
		if err != nil {
			return nil, fmt.Errorf("fetch '%s': occurrence must be an integer, got %q", def.name, occ)
		}
		f.occ = n
	}
	return f, nil
}

// next returns the fetch's next value for r, or false when there is none.
func (f *fetch) next(r *Request, it *iter) (sample, bool) {
	if f.def.l7 && !r.HTTP || f.def.res && r.Res.Status == 0 {
		return sample{}, false
	}
	switch f.def.id {
	case fSrc:
		return fetchSrc(r, f, it)
	case fSrcPort:
		return fetchSrcPort(r, f, it)
	case fDst:
		return fetchDst(r, f, it)
	case fDstPort:
		return fetchDstPort(r, f, it)
	case fMethod:
		return fetchMethod(r, f, it)
	case fPath:
		return fetchPath(r, f, it)
	case fURL:
		return fetchURL(r, f, it)
	case fQuery:
		return fetchQuery(r, f, it)
	case fURLParam:
		return fetchURLParam(r, f, it)
	case fHdr:
		return fetchHdr(r, f, it)
	case fHdrCnt:
		return fetchHdrCnt(r, f, it)
	case fHost:
		return fetchHost(r, f, it)
	case fCook:
		return fetchCook(r, f, it)
	case fVer:
		return fetchVer(r, f, it)
	case fSSL:
		return fetchSSL(r, f, it)
	case fSSLSNI, fSSLProtocol, fSSLCipher, fSSLALPN, fSSLCUsed, fSSLCVerify, fSSLCSDN, fSSLCIDN, fSSLCSerial:
		return fetchTLS(r, f, it)
	case fStatus:
		return once(it, sample{t: typeInt, n: int64(r.Res.status())})
	case fResVer:
		return once(it, sample{t: typeStr, s: r.Res.Version})
	case fConst:
		return once(it, sample{t: typeBool, n: int64(f.occ)})
	case fStr:
		return once(it, sample{t: typeStr, s: f.name})
	case fSC:
		return fetchSC(r, f, it)
	case fGPC:
		return fetchGPC(r, f, it)
	case fSrcTable:
		return fetchSrcTable(r, f, it)
	case fHTTPAuth:
		return fetchHTTPAuth(r, f, it)
	case fAuthGroup:
		return fetchHTTPAuthGroup(r, f, it)
	case fAuthType, fAuthUser, fAuthPass:
		return fetchAuthInfo(r, f, it)
	case fAuthBearer:
		return fetchAuthBearer(r, f, it)
	}
	return sample{}, false
}

// once returns v the first time and nothing after: single-valued fetches.
func once(it *iter, v sample) (sample, bool) {
	if it.n > 0 {
		return sample{}, false
	}
	it.n++
	return v, true
}

func fetchSrc(r *Request, _ *fetch, it *iter) (sample, bool) {
	if !r.Src.IsValid() {
		return sample{}, false
	}
	return once(it, sample{t: typeIP, ip: r.Src.Addr().Unmap()})
}

func fetchSrcPort(r *Request, _ *fetch, it *iter) (sample, bool) {
	if !r.Src.IsValid() {
		return sample{}, false
	}
	return once(it, sample{t: typeInt, n: int64(r.Src.Port())})
}

func fetchDst(r *Request, _ *fetch, it *iter) (sample, bool) {
	if !r.Dst.IsValid() {
		return sample{}, false
	}
	return once(it, sample{t: typeIP, ip: r.Dst.Addr().Unmap()})
}

func fetchDstPort(r *Request, _ *fetch, it *iter) (sample, bool) {
	if !r.Dst.IsValid() {
		return sample{}, false
	}
	return once(it, sample{t: typeInt, n: int64(r.Dst.Port())})
}

func fetchMethod(r *Request, _ *fetch, it *iter) (sample, bool) {
	return once(it, sample{t: typeStr, s: r.Method})
}

func fetchURL(r *Request, _ *fetch, it *iter) (sample, bool) {
	return once(it, sample{t: typeStr, s: r.URI})
}

func fetchVer(r *Request, _ *fetch, it *iter) (sample, bool) {
	return once(it, sample{t: typeStr, s: r.Version})
}

func fetchSSL(r *Request, _ *fetch, it *iter) (sample, bool) {
	v := int64(0)
	if r.SSL || r.TLS != nil {
		v = 1
	}
	return once(it, sample{t: typeBool, n: v})
}

// pathOf returns the path of a request URI: without the query string, and
// without scheme and authority for an absolute-form URI (HAProxy's path).
func pathOf(uri []byte) []byte {
	if len(uri) > 0 && uri[0] != '/' {
		if i := bytes.Index(uri, []byte("://")); i >= 0 {
			rest := uri[i+3:]
			j := bytes.IndexAny(rest, "/?")
			if j < 0 || rest[j] == '?' {
				return nil // absolute URI without a path
			}
			uri = rest[j:]
		}
	}
	if i := bytes.IndexByte(uri, '?'); i >= 0 {
		uri = uri[:i]
	}
	return uri
}

func fetchPath(r *Request, _ *fetch, it *iter) (sample, bool) {
	p := pathOf(r.URI)
	if p == nil {
		return sample{}, false
	}
	return once(it, sample{t: typeStr, s: p})
}

func fetchQuery(r *Request, _ *fetch, it *iter) (sample, bool) {
	i := bytes.IndexByte(r.URI, '?')
	if i < 0 {
		return sample{}, false
	}
	return once(it, sample{t: typeStr, s: r.URI[i+1:]})
}

// fetchURLParam returns the value of the first parameter named f.name in
// the query string; parameters are separated by '&' or ';'. The value is
// not URL-decoded, as in HAProxy.
func fetchURLParam(r *Request, f *fetch, it *iter) (sample, bool) {
	i := bytes.IndexByte(r.URI, '?')
	if i < 0 || it.n > 0 {
		return sample{}, false
	}
	q := r.URI[i+1:]
	for len(q) > 0 {
		end := bytes.IndexAny(q, "&;")
		p := q
		if end >= 0 {
			p, q = q[:end], q[end+1:]
		} else {
			q = nil
		}
		name, value, _ := bytes.Cut(p, []byte("="))
		if bytes.Equal(name, f.name) {
			it.n++
			return sample{t: typeStr, s: value}, true
		}
	}
	return sample{}, false
}

// hdrView is a header list with the edits rules made to it: the
// request's or the response's.
type hdrView struct {
	h Headers
	e *Edits
}

// headers returns the request's header view, or the response's for a
// response fetch.
func (r *Request) headers(res bool) hdrView {
	if res {
		return hdrView{r.Res.Headers, r.Res.Edits}
	}
	return hdrView{r.Headers, r.Edits}
}

// count returns the number of header lines v has after its edits.
func (v hdrView) count() int {
	n := 0
	if v.h != nil {
		n = v.h.NumHeaders()
	}
	if v.e != nil {
		n += len(v.e.added)
	}
	return n
}

// at returns header line i after the edits: the received lines first,
// then the added ones; ok is false for a line removed by an edit.
func (v hdrView) at(i int) (name, value []byte, ok bool) {
	base := 0
	if v.h != nil {
		base = v.h.NumHeaders()
	}
	if i < base {
		if v.e != nil && v.e.Hidden(i) {
			return nil, nil, false
		}
		name, value = v.h.HeaderAt(i)
		return name, value, true
	}
	a := &v.e.added[i-base]
	return a.name, a.value, !a.dead
}

// nextHeaderValue returns the next comma-separated value of the headers
// named name, from the position it, and advances it. HAProxy's hdr()
// splits values on commas; hdr(host) has a single one in practice.
func nextHeaderValue(v hdrView, name []byte, it *iter) ([]byte, bool) {
	n := v.count()
	for ; it.i < n; it.i, it.j = it.i+1, 0 {
		hn, hv, ok := v.at(it.i)
		if !ok || (len(name) > 0 && !bytes.EqualFold(hn, name)) {
			continue
		}
		if it.j > len(hv) {
			continue
		}
		rest := hv[it.j:]
		if it.j == 0 && len(rest) == 0 {
			it.j = 1 // an empty header has one empty value
			return rest, true
		}
		if len(rest) == 0 {
			continue
		}
		val := rest
		if k := bytes.IndexByte(rest, ','); k >= 0 {
			val = rest[:k]
			it.j += k + 1
		} else {
			it.j = len(hv) + 1
		}
		return trimSpace(val), true
	}
	return nil, false
}

// fetchHdr returns the values of a header: every one in turn (occurrence
// 0), or only the n-th (n > 0), or the n-th from the end (n < 0).
func fetchHdr(r *Request, f *fetch, it *iter) (sample, bool) {
	v := r.headers(f.def.res)
	switch {
	case f.occ == 0:
		val, ok := nextHeaderValue(v, f.name, it)
		return sample{t: typeStr, s: val}, ok
	case it.n > 0:
		return sample{}, false
	case f.occ > 0:
		var local iter
		for k := 1; ; k++ {
			val, ok := nextHeaderValue(v, f.name, &local)
			if !ok {
				return sample{}, false
			}
			if k == f.occ {
				it.n++
				return sample{t: typeStr, s: val}, true
			}
		}
	default:
		// From the end: count, then walk again to the wanted one.
		var local iter
		total := 0
		for {
			if _, ok := nextHeaderValue(v, f.name, &local); !ok {
				break
			}
			total++
		}
		want := total + f.occ + 1
		if want < 1 {
			return sample{}, false
		}
		local = iter{}
		for k := 1; ; k++ {
			val, _ := nextHeaderValue(v, f.name, &local)
			if k == want {
				it.n++
				return sample{t: typeStr, s: val}, true
			}
		}
	}
}

var hostName = []byte("host")

func fetchHost(r *Request, _ *fetch, it *iter) (sample, bool) {
	if it.n > 0 {
		return sample{}, false
	}
	var local iter
	v, ok := nextHeaderValue(r.headers(false), hostName, &local)
	if ok {
		it.n++
	}
	return sample{t: typeStr, s: v}, ok
}

// fetchHdrCnt counts the values of a header (all header lines without a
// name), as HAProxy's req.hdr_cnt.
func fetchHdrCnt(r *Request, f *fetch, it *iter) (sample, bool) {
	if it.n > 0 {
		return sample{}, false
	}
	it.n++
	var local iter
	n := int64(0)
	v := r.headers(f.def.res)
	if len(f.name) == 0 {
		for i := range v.count() {
			if _, _, ok := v.at(i); ok {
				n++
			}
		}
		return sample{t: typeInt, n: n}, true
	}
	for {
		if _, ok := nextHeaderValue(v, f.name, &local); !ok {
			break
		}
		n++
	}
	return sample{t: typeInt, n: n}, true
}

var cookieName = []byte("cookie")

// fetchCook returns the value of every cookie named f.name in the Cookie
// headers, in turn. Cookies are separated by ';' (and ',' from the header
// split); names are case-sensitive.
func fetchCook(r *Request, f *fetch, it *iter) (sample, bool) {
	v := r.headers(false)
	n := v.count()
	for ; it.i < n; it.i, it.j = it.i+1, 0 {
		hn, hv, ok := v.at(it.i)
		if !ok || !bytes.EqualFold(hn, cookieName) {
			continue
		}
		for it.j < len(hv) {
			rest := hv[it.j:]
			c := rest
			if k := bytes.IndexAny(rest, ";,"); k >= 0 {
				c = rest[:k]
				it.j += k + 1
			} else {
				it.j = len(hv)
			}
			name, value, found := bytes.Cut(trimSpace(c), []byte("="))
			if found && bytes.Equal(trimSpace(name), f.name) {
				return sample{t: typeStr, s: trimSpace(value)}, true
			}
		}
	}
	return sample{}, false
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t') {
		b = b[:len(b)-1]
	}
	return b
}

package logformat

import (
	"net/netip"
	"strings"
	"testing"
	"time"
)

func date(s string) time.Time {
	t, err := time.Parse("02/Jan/2006:15:04:05.000", s)
	if err != nil {
		panic(err)
	}
	return t
}

func ap(s string) netip.AddrPort { return netip.MustParseAddrPort(s) }

// httpEntry is the request behind HAProxy 2.6's first line in
// testdata/log/haproxy-2.6-syslog.txt.
func httpEntry() Entry {
	return Entry{
		HTTP: true, Client: ap("127.0.0.1:45386"), Accept: date("01/Dec/2026:22:22:12.594"),
		Request: date("01/Dec/2026:22:22:12.594"), Frontend: "www", Backend: "web", Server: "s1",
		TR: 0, Tw: 0, Tc: 1, Tr: 0, Ta: 1, Tt: 1, Status: 200, BytesRead: 110,
		Termination: [4]byte{'-', '-', '-', '-'}, ActConn: 1, FeConn: 1,
		ReqHeaders: []string{"example.com"}, RespHeaders: []string{"text/plain"},
		Method: []byte("GET"), URI: []byte("/ok?x=1"), Version: []byte("HTTP/1.1"),
	}
}

// TestNamedFormatsAsHAProxy renders entries of known requests with the
// predefined formats and compares with the lines HAProxy 2.6 logged for
// them (captured on loopback; see testdata/log/).
func TestNamedFormatsAsHAProxy(t *testing.T) {
	sc := httpEntry()
	sc.Client, sc.Accept, sc.Request = ap("127.0.0.1:45394"), date("01/Dec/2026:22:22:12.665"), date("01/Dec/2026:22:22:12.665")
	sc.Server, sc.Tc, sc.Tr, sc.Ta, sc.Tt, sc.Status, sc.BytesRead = "s2", -1, -1, 2002, 2002, 503, 217
	sc.Termination, sc.Retries = [4]byte{'S', 'C', '-', '-'}, 2
	sc.ReqHeaders, sc.RespHeaders = []string{"127.0.0.1:41880"}, []string{""}
	sc.URI = []byte("/again")
	bad := Entry{HTTP: true, Client: ap("127.0.0.1:45410"), Accept: date("01/Dec/2026:22:22:14.762"),
		Request: date("01/Dec/2026:22:22:14.762"), Frontend: "www", Backend: "www", Server: "<NOSRV>",
		TR: -1, Tw: -1, Tc: -1, Tr: -1, Ta: 0, Tt: 0, Status: 400, Termination: [4]byte{'P', 'R', '-', '-'},
		ActConn: 1, FeConn: 1, BadRequest: true, ReqHeaders: []string{""}, RespHeaders: []string{""}}
	tcp := Entry{Client: ap("127.0.0.1:59360"), Accept: date("01/Dec/2026:22:22:14.812"), Frontend: "tcpfe",
		Backend: "tcpbe", Server: "t1", Tw: 1, Tc: 0, Tt: 1, BytesRead: 103, Termination: [4]byte{'-', '-'},
		ActConn: 1, FeConn: 1}
	for _, tc := range []struct {
		name, format string
		e            Entry
		want         string
	}{
		{"httplog 200", "httplog", httpEntry(),
			`127.0.0.1:45386 [01/Dec/2026:22:22:12.594] www web/s1 0/0/1/0/1 200 110 - - ---- 1/1/0/0/0 0/0 {example.com} {text/plain} "GET /ok?x=1 HTTP/1.1"`},
		{"httplog 503 SC", "httplog", sc,
			`127.0.0.1:45394 [01/Dec/2026:22:22:12.665] www web/s2 0/0/-1/-1/2002 503 217 - - SC-- 1/1/0/0/2 0/0 {127.0.0.1:41880} {} "GET /again HTTP/1.1"`},
		{"httplog badreq", "httplog", bad,
			`127.0.0.1:45410 [01/Dec/2026:22:22:14.762] www www/<NOSRV> -1/-1/-1/-1/0 400 0 - - PR-- 1/1/0/0/0 0/0 "<BADREQ>"`},
		{"tcplog", "tcplog", tcp,
			`127.0.0.1:59360 [01/Dec/2026:22:22:14.812] tcpfe tcpbe/t1 1/0/1 103 -- 1/1/0/0/0 0/0`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text, _ := Named(tc.format)
			f, err := Parse(text, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := string(f.Append(nil, &tc.e)); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

// TestCustomFormatAsHAProxy renders HAProxy variables with their flags and
// compares with lines HAProxy 2.6 logged for the same requests (the
// formats and requests of the captures, values copied from them).
func TestCustomFormatAsHAProxy(t *testing.T) {
	e := Entry{HTTP: true, Client: ap("127.0.0.1:53962"), FrontendAddr: ap("127.0.0.1:41880"),
		ServerAddr: ap("127.0.0.1:19001"), BackendSource: ap("127.0.0.1:51592"),
		Accept: date("01/Dec/2026:22:29:08.744"), Request: date("01/Dec/2026:22:29:08.748"),
		Frontend: "www", Backend: "web", Server: "s1", Ti: 4, TR: 0, Tw: 0, Tc: 15, Tr: 1, Ta: 16, Tt: 20,
		Status: 200, BytesRead: 110, BytesUploaded: 98, Termination: [4]byte{'-', '-', '-', '-'},
		ActConn: 1, FeConn: 1, ReqHeaders: []string{"examplee", ""}, RespHeaders: []string{"text/plain"},
		Method: []byte("GET"), URI: []byte("/a/b?x=1&y=%22"), Version: []byte("HTTP/1.1")}
	const formatA = `A %{+Q}CC %{+Q}hr %{+Q}hs %hrl %hsl %{+Q}r %{+X}ci:%{+X}cp %{+Q}b %{+Q}s %{+Q}ft ` +
		`%HM|%HU|%HP|%HPO|%HQ|%HV %ID %{+Q}ID %bi:%bp %si:%sp %fi:%fp %sslv %{+E}r %rt %lc ` +
		`%Th/%Ti/%Tq/%TR/%Tw/%Tc/%Tr/%Ta/%Td/%Tt/%Tu %U %B %ST %ts %tsc %rc %ac/%fc/%bc/%sc %sq/%bq %ms %{+Q}HM`
	bad := Entry{HTTP: true, BadRequest: true, Client: ap("127.0.0.1:53154"), FrontendAddr: ap("127.0.0.1:41880"),
		Accept: date("01/Dec/2026:22:29:08.678"), Request: date("01/Dec/2026:22:29:08.680"), Frontend: "www",
		Backend: "www", Server: "<NOSRV>", Ti: 2, TR: -1, Tw: -1, Tc: -1, Tr: -1, Ta: 0, Tt: 2, Status: 400,
		Termination: [4]byte{'P', 'R', '-', '-'}, ActConn: 1, FeConn: 1, ReqCounter: 2, LogCounter: 2,
		ReqHeaders: []string{"", ""}, RespHeaders: []string{""}}
	b := e
	b.Accept, b.Request = date("01/Dec/2026:22:29:55.191"), date("01/Dec/2026:22:29:55.191")
	b.ReqHeaders = []string{`ex"am]pl`}
	b.URI, b.Status, b.Hostname, b.Pid = []byte(`/a"b`), 400, "vm", 6394
	for _, tc := range []struct {
		name, format string
		e            Entry
		want         string
	}{
		{"A", formatA, e,
			`A "" "{examplee|}" "{text/plain}" examplee - text/plain "GET /a/b?x=1&y=%22 HTTP/1.1" 7F000001:D2CA "web" "s1" "www" ` +
				`GET|/a/b?x=1&y=%22|/a/b|/a/b|?x=1&y=%22|HTTP/1.1 - "" 127.0.0.1:51592 127.0.0.1:19001 127.0.0.1:41880 - GET /a/b?x=1&y=%22 HTTP/1.1 0 0 ` +
				`0/4/4/0/0/15/1/16/0/20/16 98 110 200 -- ---- 0 1/1/0/0 0/0 744 "GET"`},
		{"A badreq", formatA, bad,
			`A "" "<BADREQ>" 7F000001:CFA2 "www" "<NOSRV>" "www" <BADREQ>|<BADREQ>|<BADREQ>|<BADREQ>|<BADREQ>|<BADREQ> - "" -:- -:- ` +
				`127.0.0.1:41880 - <BADREQ> 2 2 0/2/-1/-1/-1/-1/-1/0/-1/2/0 0 0 400 PR PR-- 0 1/1/0/0 0/0 678 "<BADREQ>"`},
		{"B", `B [%t] [%tr] [%T] [%Tl] [%trg] [%trl] %Ts %{+X}Ts %pid %{+Q}H %{+E}hr %{+Q,+E}r %{+Q}o %b %s %r %ST %{-Q}b %% %{+X}pid %{+X}rt %{+X}ST %{+Q}ST`, b,
			`B [01/Dec/2026:22:29:55.191] [01/Dec/2026:22:29:55.191] [01/Dec/2026:22:29:55 +0000] [01/Dec/2026:22:29:55 +0000] ` +
				`[01/Dec/2026:22:29:55 +0000] [01/Dec/2026:22:29:55 +0000] 1796164195 6B0F4A63 6394 "vm" {ex#22am\]pl} "GET /a#22b HTTP/1.1" ` +
				`"web" "s1" "GET /a#22b HTTP/1.1" 400 web % 18FA 0000 400 400`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "A badreq" {
				tc.e.Client = ap("127.0.0.1:53154")
			}
			f, err := Parse(tc.format, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := string(f.Append(nil, &tc.e)); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

// TestParseErrors checks the errors of bad formats.
func TestParseErrors(t *testing.T) {
	for _, tc := range []struct{ format, want string }{
		{"", "empty log format"},
		{"%ci %zz", "no such format variable 'zz' at position 4"},
		{"100% sure", "'%' at position 3 is not followed by a variable name"},
		{"%{+Z}ci", "unknown flag \"Z\""},
		{"%{+Q", "missing '}'"},
		{"%[src", "missing ']'"},
		{"%[src]", "not supported here"},
	} {
		_, err := Parse(tc.format, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: got error %v, want one containing %q", tc.format, err, tc.want)
		}
	}
	f, err := Parse("%ci %{+Q}r %tsc %Tw", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(f.HTTPVariables(), ","); got != "r,tsc" {
		t.Errorf("http variables: got %q, want r,tsc", got)
	}
}

// TestSamples: %[expr] is fetched through Entry.Samples.
func TestSamples(t *testing.T) {
	var exprs []string
	f, err := Parse(`%[req.hdr(x)] %{+Q}[src] %[nothing]`, func(expr string) (int, error) {
		exprs = append(exprs, expr)
		return len(exprs) - 1, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	e := Entry{Samples: func(i int, dst []byte) ([]byte, bool) {
		switch exprs[i] {
		case "req.hdr(x)":
			return append(dst, "v1"...), true
		case "src":
			return append(dst, "10.0.0.1"...), true
		}
		return dst, false
	}}
	if got := string(f.Append(nil, &e)); got != `v1 "10.0.0.1" -` {
		t.Errorf("got %q", got)
	}
}

// BenchmarkAppendHTTPLog is the cost of one httplog line.
func BenchmarkAppendHTTPLog(b *testing.B) {
	text, _ := Named("httplog")
	f, _ := Parse(text, nil)
	e := httpEntry()
	buf := make([]byte, 0, 512)
	b.ReportAllocs()
	for b.Loop() {
		buf = f.Append(buf[:0], &e)
	}
}

// FuzzParse: any format string compiles or fails with an error, never a
// panic, and a compiled one renders entries, good or bad.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"httplog", named["httplog"], named["clf"], "%{+Q,+E}o %[src] %% \\ x", "%{", "%[", "%"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		fm, err := Parse(text, func(string) (int, error) { return 0, nil })
		if err != nil {
			return
		}
		e := httpEntry()
		fm.Append(nil, &e)
		e = Entry{BadRequest: true, Status: -1, Samples: func(int, []byte) ([]byte, bool) { return nil, false }}
		fm.Append(nil, &e)
	})
}

// TestSSLVariables: %sslv and %sslc are the client connection's TLS
// version and cipher, "-" (or "" quoted) on a plain connection.
func TestSSLVariables(t *testing.T) {
	f, err := Parse(`%sslv %sslc %{+Q}sslv`, nil)
	if err != nil {
		t.Fatal(err)
	}
	e := Entry{SSLVersion: "TLSv1.3", SSLCipher: "TLS_AES_128_GCM_SHA256"}
	if got := string(f.Append(nil, &e)); got != `TLSv1.3 TLS_AES_128_GCM_SHA256 "TLSv1.3"` {
		t.Errorf("TLS: got %q", got)
	}
	if got := string(f.Append(nil, &Entry{})); got != `- - ""` {
		t.Errorf("plain: got %q", got)
	}
}

// TestFrontendTransport: %ft is the frontend's name with '~' on a TLS
// connection, as HAProxy's (a fresh-user trial: "www~ web/s1" there,
// "www web/s1" here); %f never has it.
func TestFrontendTransport(t *testing.T) {
	f, err := Parse(`%ft %f %{+Q}ft`, nil)
	if err != nil {
		t.Fatal(err)
	}
	e := Entry{Frontend: "www", SSLVersion: "TLSv1.3"}
	if got := string(f.Append(nil, &e)); got != `www~ www "www~"` {
		t.Errorf("TLS: got %q", got)
	}
	if got := string(f.Append(nil, &Entry{Frontend: "www"})); got != `www www "www"` {
		t.Errorf("plain: got %q", got)
	}
}

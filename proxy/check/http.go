package check

import (
	"bufio"
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// httpProbe is the http health check (HAProxy's option httpchk with
// http-check expect status): it sends one request and judges the status
// code of the response.
//
//   - connect fails: L4CON / L4TOUT (as tcp);
//   - no complete status line within the read timeout: L7TOUT;
//   - a status line that does not parse, or a closed connection: L7RSP;
//   - a status in expect: L7OK with the code; any other status: L7STS with
//     the code and the reason phrase as detail (last_chk).
//
// Only the status line is read; the connection is then closed, so a large
// or slow body costs nothing.
type httpProbe struct {
	request []byte   // the whole request, built once
	expect  []span   // passing status codes
	prep    ConnPrep // the server's PROXY header and TLS, nil for none
}

// span is an inclusive range of status codes.
type span struct{ lo, hi int }

// newHTTPProbe builds the probe's request. host "" sends HTTP/1.0 without a
// Host header (HAProxy's default httpchk request); otherwise HTTP/1.1 with
// Host. expect is a list of codes and ranges, "200-399" or "200,204".
func newHTTPProbe(method, path, host, expect string) (*httpProbe, error) {
	spans, err := parseExpect(expect)
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	if host == "" {
		fmt.Fprintf(&b, "%s %s HTTP/1.0\r\n", method, path)
	} else {
		fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: %s\r\n", method, path, host)
	}
	b.WriteString("User-Agent: fulcrum-check\r\nConnection: close\r\n\r\n")
	return &httpProbe{request: []byte(b.String()), expect: spans}, nil
}

// parseExpect parses "200", "200-399" or a comma-separated list of them.
func parseExpect(v string) ([]span, error) {
	var spans []span
	for _, item := range strings.Split(v, ",") {
		lo, hi, isRange := strings.Cut(strings.TrimSpace(item), "-")
		if !isRange {
			hi = lo
		}
		a, err1 := strconv.Atoi(lo)
		b, err2 := strconv.Atoi(hi)
		if err1 != nil || err2 != nil || a > b {
			return nil, fmt.Errorf("expect_status: bad status or range %q", item)
		}
		spans = append(spans, span{a, b})
	}
	return spans, nil
}

// passes reports whether code is one of the expected statuses.
func (p *httpProbe) passes(code int) bool {
	for _, s := range p.expect {
		if code >= s.lo && code <= s.hi {
			return true
		}
	}
	return false
}

// Run sends the request to addr and reads the status line.
func (p *httpProbe) Run(ctx context.Context, addr string, connect, read time.Duration) Result {
	c, _, fail := dialPrep(ctx, addr, connect, p.prep)
	if fail != nil {
		return *fail
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	c.SetDeadline(time.Now().Add(read))
	if _, err := c.Write(p.request); err != nil {
		if isTimeout(err) {
			return Result{Status: StatusL7TOUT}
		}
		return Result{Status: StatusSOCKERR, Info: errText(err)}
	}
	line, err := bufio.NewReaderSize(c, 512).ReadSlice('\n')
	if err != nil {
		if isTimeout(err) {
			return Result{Status: StatusL7TOUT}
		}
		// A server that closes without answering: HAProxy 2.6 reports
		// L7RSP with no info ("reason: Layer7 invalid response, check
		// duration: 3ms", a fresh-user trial's transcript).
		return Result{Status: StatusL7RSP}
	}
	code, reason, ok := parseStatusLine(string(line))
	if !ok {
		return Result{Status: StatusL7RSP, Info: "Invalid HTTP response status line"}
	}
	if !p.passes(code) {
		return Result{Status: StatusL7STS, Code: code, Info: reason}
	}
	return Result{Status: StatusL7OK, Code: code}
}

// parseStatusLine parses "HTTP/1.x NNN reason\r\n".
func parseStatusLine(line string) (code int, reason string, ok bool) {
	line = strings.TrimRight(line, "\r\n")
	proto, rest, _ := strings.Cut(line, " ")
	if !strings.HasPrefix(proto, "HTTP/1.") || len(rest) < 3 {
		return 0, "", false
	}
	code, err := strconv.Atoi(rest[:3])
	if err != nil || code < 100 || code > 999 || (len(rest) > 3 && rest[3] != ' ') {
		return 0, "", false
	}
	return code, strings.TrimSpace(rest[3:]), true
}

var _ Probe = (*httpProbe)(nil)

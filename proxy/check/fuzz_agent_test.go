package check

import (
	"bytes"
	"strings"
	"testing"
)

// FuzzAgentReply feeds arbitrary agent replies to ParseAgentReply and checks
// what the parser promises (agent_reply.go, agent-check.md section 3):
//
//   - it never panics and is deterministic;
//   - only the first line counts, whatever ends it (CR or LF) and whatever
//     follows it; a reply without CR or LF is Incomplete and nothing else;
//   - each field holds what the grammar allows: Admin is a lower-case admin
//     word, State a state word as written, Weight a word that starts with a
//     digit and holds '%', words hold no separator, the comment is trimmed;
//   - a weight word that parses gives a weight in 0..256 for every initial
//     weight 0..256, a maxconn that parses is >= 0;
//   - writing the parsed reply back as a line (formatAgentReply) and parsing
//     that gives the same reply.
func FuzzAgentReply(f *testing.F) {
	// The replies of agent-check.md and golden/agent-extra.txt, plus edges.
	for _, seed := range []string{
		"up\n", "down\n", "stopped\n", "fail\n", "75%\n", "0%\n", "200%\n", "400%\n",
		"drain\n", "MAINT\n", "ready\n", "Drain 25%\n", "up\tdrain\n", "  ready  \n",
		"#just a comment\n", "up 100%,maxconn:0\n", "UP 100%,maxconn:0\r\n",
		"50% maxconn:10 ready\n", "fail # bad disk\n", "down #maintenance window\n",
		"down#going away\n", "hello world\n", "hello 50%\n", "50% hello\n", "50\n", "\n",
		"down", "ready up 100% maxconn:25\n", "stopped\nup\n", "up ready 73%\n",
		"up drain #cpu 97% over threshold 90%\n", "down #process nginx not running\n",
		"5x%\n", "maxconn:\n", "maxconn:-1\n", "maxconn:99999999999999999999\n",
		"92233720368547758%\n", "36028797018963968%\n", "9223372036854775807%\n",
		"up\r", ",,, ,\t\n", "# \t\n", "\x00up\n", "up\xff\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r := ParseAgentReply(data)
		if again := ParseAgentReply(bytes.Clone(data)); again != r {
			t.Fatalf("not deterministic: %+v then %+v", r, again)
		}
		end := bytes.IndexAny(data, "\r\n")
		if end < 0 {
			if r != (AgentReply{Incomplete: true}) {
				t.Fatalf("no line end: got %+v, want only Incomplete", r)
			}
			return
		}
		if r.Incomplete {
			t.Fatalf("a reply with a line end is Incomplete: %+v", r)
		}
		// Only the first line counts, however it ends.
		line := data[:end]
		for _, other := range [][]byte{
			append(bytes.Clone(line), '\n'),
			append(bytes.Clone(line), '\r'),
			append(bytes.Clone(line), "\r\nmaint 1%\n"...),
		} {
			if got := ParseAgentReply(other); got != r {
				t.Fatalf("%q parses as %+v, but %q as %+v: only the first line should count", data, r, other, got)
			}
		}
		checkAgentFields(t, r)
		// Whatever a weight or maxconn word says, the applied value is in range.
		if r.Weight != "" {
			for _, iw := range []int{0, 1, 2, 80, 100, 255, 256} {
				if w, msg := agentWeight(r.Weight, iw); msg == "" && (w < 0 || w > 256) {
					t.Fatalf("weight %q of initial weight %d gives %d, want 0..256", r.Weight, iw, w)
				}
			}
		}
		if r.MaxConn != "" {
			if n, msg := agentMaxConn(r.MaxConn); msg == "" && n < 0 {
				t.Fatalf("maxconn:%s gives %d", r.MaxConn, n)
			}
		}
		// parse -> format -> parse.
		text := formatAgentReply(r)
		if strings.ContainsAny(text[:len(text)-1], "\r\n") {
			t.Fatalf("formatted reply %q holds a line end before its last byte", text)
		}
		if back := ParseAgentReply([]byte(text)); back != r {
			t.Fatalf("%q parses as %+v; written back as %q it parses as %+v", data, r, text, back)
		}
	})
}

// checkAgentFields checks that each field of r is what the grammar allows.
func checkAgentFields(t *testing.T, r AgentReply) {
	t.Helper()
	switch r.Admin {
	case "", "ready", "drain", "maint":
	default:
		t.Fatalf("admin %q", r.Admin)
	}
	switch strings.ToLower(r.State) {
	case "", "up", "down", "stopped", "fail":
	default:
		t.Fatalf("state %q", r.State)
	}
	if r.Weight != "" && (r.Weight[0] < '0' || r.Weight[0] > '9' || !strings.Contains(r.Weight, "%")) {
		t.Fatalf("weight word %q", r.Weight)
	}
	for _, w := range []string{r.Admin, r.State, r.Weight, r.MaxConn, r.Unknown} {
		if strings.ContainsAny(w, " \t,\r\n") {
			t.Fatalf("word %q holds a separator or line end", w)
		}
	}
	if r.Unknown != "" && strings.HasPrefix(r.Unknown, "#") {
		t.Fatalf("unknown word %q starts a comment", r.Unknown)
	}
	if strings.ContainsAny(r.Comment, "\r\n") || strings.Trim(r.Comment, " \t") != r.Comment {
		t.Fatalf("comment %q is not one trimmed line", r.Comment)
	}
}

// formatAgentReply writes r back as an agent line, in an order that parses
// to the same reply: the first unknown word first (so that it stays the
// first), then the known words (one each, so none is overridden), then the
// comment, which must come last.
func formatAgentReply(r AgentReply) string {
	var words []string
	if r.Unknown != "" {
		words = append(words, r.Unknown)
	}
	if r.Admin != "" {
		words = append(words, r.Admin)
	}
	if r.State != "" {
		words = append(words, r.State)
	}
	if r.Weight != "" {
		words = append(words, r.Weight)
	}
	if r.MaxConn != "" {
		words = append(words, "maxconn:"+r.MaxConn)
	}
	if r.Comment != "" {
		words = append(words, "#"+r.Comment)
	}
	return strings.Join(words, " ") + "\n"
}

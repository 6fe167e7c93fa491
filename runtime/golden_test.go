package runtime

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the replies in ../testdata/runtime/*.txt from the current output")

// transcript is one golden case: a config, then commands and replies in
// the shape of the HAProxy reference transcripts:
//
//	$ echo "get weight web/s1" | socat stdio ./run/admin.sock
//	100 (initial 100)
//	<empty line>
//
// Each reply is the exact bytes received up to the close (a reply without
// its own line feed runs straight into the next "$ echo" line).
type transcript struct {
	config string
	steps  []step
}

type step struct {
	level Level
	cmd   string
	reply string
}

// stepLine is the line that introduces a command.
var stepLine = regexp.MustCompile(`^\$ echo "(.*)" \| socat stdio \./run/(admin|operator|user)\.sock$`)

// goldenSep separates the config from the transcript.
const goldenSep = "----------\n"

func parseTranscript(t *testing.T, data string) transcript {
	t.Helper()
	cfg, rest, ok := strings.Cut(data, "\n"+goldenSep)
	if !ok {
		t.Fatalf("no %q line between the config and the transcript", strings.TrimSpace(goldenSep))
	}
	tr := transcript{config: cfg + "\n"}
	var cur *step
	for _, line := range strings.SplitAfter(rest, "\n") {
		if m := stepLine.FindStringSubmatch(strings.TrimSuffix(line, "\n")); m != nil {
			l, _ := ParseLevel(m[2])
			tr.steps = append(tr.steps, step{level: l, cmd: m[1]})
			cur = &tr.steps[len(tr.steps)-1]
			continue
		}
		if cur == nil {
			if line != "" {
				t.Fatalf("transcript must start with a $ echo line, got %q", line)
			}
			continue
		}
		cur.reply += line
	}
	return tr
}

func (tr transcript) format() string {
	var b strings.Builder
	b.WriteString(strings.TrimSuffix(tr.config, "\n"))
	b.WriteString("\n" + goldenSep)
	for _, s := range tr.steps {
		fmt.Fprintf(&b, "$ echo \"%s\" | socat stdio ./run/%s.sock\n", s.cmd, s.level)
		b.WriteString(s.reply)
	}
	return b.String()
}

// Volatile parts of replies, masked before comparing: dates, the seconds
// since a server's last change, session ids and ages.
var (
	maskDate    = regexp.MustCompile(`\[\d\d/[A-Z][a-z]{2}/\d{4}:\d\d:\d\d:\d\d\.\d{3}\]`)
	maskSince   = regexp.MustCompile(`(?m)^(\d+ \S+ \d+ \S+ \S+ \d+ \d+ \d+ \d+ )\d+ `)
	maskSessID  = regexp.MustCompile(`0x[0-9a-f]{6,}`)
	maskSessAge = regexp.MustCompile(`age=\w+`)
	maskExp     = regexp.MustCompile(`(: key=\S+ use=\d+ exp=)[1-9]\d*`) // ms left in a stick table entry
)

func mask(s string) string {
	s = maskDate.ReplaceAllString(s, "[DATE]")
	s = maskSince.ReplaceAllString(s, "${1}T ")
	s = maskSessID.ReplaceAllString(s, "0xID")
	s = maskExp.ReplaceAllString(s, "${1}E")
	return maskSessAge.ReplaceAllString(s, "age=A")
}

// TestGolden runs every ../testdata/runtime/<case>.txt: the commands, in
// order, each on a fresh connection to the socket of its level, against a
// proxy built from the case's config; each reply must match (volatile
// fields masked). `go test ./runtime -run TestGolden -update` rewrites the
// replies; review the diff.
func TestGolden(t *testing.T) {
	files, err := filepath.Glob("../testdata/runtime/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden files: %v", err)
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".txt")
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			tr := parseTranscript(t, string(data))
			e := startEnv(t, tr.config)
			for i := range tr.steps {
				s := &tr.steps[i]
				got := strings.ReplaceAll(e.run(t, s.level, s.cmd), e.dir, "./run")
				if *update {
					s.reply = got
					continue
				}
				if mask(got) != mask(s.reply) {
					t.Errorf("%s: echo %q | socat ./run/%s.sock\ngot:\n%s\nwant:\n%s", name, s.cmd, s.level, got, s.reply)
				}
			}
			if *update {
				if err := os.WriteFile(file, []byte(tr.format()), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

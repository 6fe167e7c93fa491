package stick

import "testing"

// TestAppendText: string keys in show table as HAProxy's dump_text writes
// them (a fresh-user trial saw `key=a b"c=\x` where HAProxy prints
// `key=a\ b"c\=\\x`; raw 8-bit bytes where it prints \xC3\xA9).
func TestAppendText(t *testing.T) {
	for in, want := range map[string]string{
		`a b"c=\x`:            `a\ b"c\=\\x`,
		"\xc3\xa9t\xe9":       `\xC3\xA9t\xE9`,
		"t\tn\nr\re\x1bd\x7f": `t\tn\nr\re\ed\x7F`,
		"cut\x00here":         "cut",
		"plain-key_1.2:3":     "plain-key_1.2:3",
	} {
		if got := string(appendText(nil, in)); got != want {
			t.Errorf("%q: %s, want %s", in, got, want)
		}
	}
}

package haproxycfg

import (
	"strings"
	"testing"
)

// peersCfg has a peers section of two members and a table shared in it;
// global is the global section's lines.
func peersCfg(global string) string {
	return "global\n" + global + `
peers mesh
    peer lb1 127.0.0.1:10001
    peer lb2 127.0.0.1:10002

frontend www
    bind :80
    default_backend app

backend app
    stick-table type ip size 1k peers mesh
    stick on src
    server s1 10.0.0.1:80
`
}

// TestImportLocalPeer: for a given instance (check and run of an
// haproxy.cfg), a peers section without a peer of that instance's name
// is removed, as HAProxy 2.6 does, and its table is kept unshared; the
// name is --localpeer, else the global localpeer, else the host name. For
// fulcrum import (no instance), the section is kept as written.
func TestImportLocalPeer(t *testing.T) {
	const removed = `peers: ignored: HAProxy 2.6 removes this section too: no peer is named "vm"`
	for _, tc := range []struct {
		name, global string
		opt          Options
		kept         bool
		noteHas      string
	}{
		{"import keeps it", "", Options{}, true, ""},
		{"host name is a peer", "", Options{HostName: "lb1"}, true, ""},
		{"host name is not", "", Options{HostName: "vm"}, false, removed},
		{"global localpeer over the host name", "    localpeer lb2", Options{HostName: "vm"}, true, ""},
		{"--localpeer over the global localpeer", "    localpeer lb2", Options{LocalPeer: "vm", HostName: "lb1"}, false, removed},
		{"--localpeer a peer", "    localpeer vm", Options{LocalPeer: "lb1", HostName: "vm"}, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.opt.Name = "h.cfg"
			r, err := Import([]byte(peersCfg(tc.global)), tc.opt)
			if err != nil {
				t.Fatal(err)
			}
			text := string(r.TOML)
			notes := notesText("h.cfg", r)
			if got := strings.Contains(text, "\n[[peers]]\n"); got != tc.kept {
				t.Errorf("[[peers]] kept = %v, want %v:\n%s", got, tc.kept, text)
			}
			if got := strings.Contains(text, `peers = "mesh"`); got != tc.kept {
				t.Errorf("the table's peers kept = %v, want %v:\n%s", got, tc.kept, text)
			}
			if tc.kept {
				if strings.Contains(notes, "removes") {
					t.Errorf("notes: %s", notes)
				}
				return
			}
			for _, want := range []string{"h.cfg:3: " + removed, `h.cfg:12: stick-table: ignored: peers "mesh" is removed (line 3): this table is not shared`} {
				if !strings.Contains(notes, want) {
					t.Errorf("notes lack %q:\n%s", want, notes)
				}
			}
		})
	}
}

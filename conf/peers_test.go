package conf

import (
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
)

// TestPeersModel checks the model of testdata/conf/peers.toml: the section
// with its members in file order, and the tables that name it.
func TestPeersModel(t *testing.T) {
	data, err := os.ReadFile("../testdata/conf/peers.toml")
	if err != nil {
		t.Fatal(err)
	}
	text, _, _ := strings.Cut(string(data), "\n----------\n")
	cfg, err := Parse("peers.toml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	want := []*Peers{{Name: "mesh", Line: 27, LocalPeer: "lb1", Peers: []Peer{
		{Name: "lb1", Address: "10.0.0.1:10000", Line: 31},
		{Name: "lb2", Address: "10.0.0.2:10000", Line: 32},
		{Name: "hap", Address: "10.0.0.3:10000", Line: 33},
	}}}
	if !reflect.DeepEqual(cfg.Peers, want) {
		t.Errorf("peers:\ngot  %+v\nwant %+v", cfg.Peers[0], want[0])
	}
	if st := cfg.Backends[0].StickTable; st.Peers != "mesh" || st.PeersAggregate {
		t.Errorf("backend table: peers %q aggregate %v, want mesh false", st.Peers, st.PeersAggregate)
	}
	if st := cfg.Tables[0]; st.Peers != "mesh" || !st.PeersAggregate {
		t.Errorf("[[table]] limits: peers %q aggregate %v, want mesh true", st.Peers, st.PeersAggregate)
	}
	if n := len(cfg.AllTables()); n != 2 {
		t.Errorf("AllTables: %d, want 2", n)
	}
	if _, err := cfg.PeersSection("mesh").Local("lb9"); err == nil || !strings.Contains(err.Error(), `no peer named "lb9"`) {
		t.Errorf("Local(lb9): %v", err)
	}
}

// TestPeersSectionTableName: a [[table]] may be named "<peers>/<table>",
// HAProxy's name of a table declared in a peers section, when it is
// shared through that section or not shared (the section removed).
func TestPeersSectionTableName(t *testing.T) {
	base := `
[[peers]]
name = "mesh"
peer = [{ name = "lb1", address = "127.0.0.1:1" }]

[[table]]
name = %q
type = "ip"
size = 10
%s
`
	for _, tc := range []struct{ name, peers, err string }{
		{"mesh/limits", `peers = "mesh"`, ""},
		{"mesh/limits", "", ""}, // unshared: its peers section removed, as HAProxy keeps it
		{"other/limits", `peers = "mesh"`, `t.toml:7: table "other/limits": name: a name "<peers>/<table>" (HAProxy's table declared in a peers section) needs peers = "other" or none, got "mesh"`},
		{"mesh/a/b", `peers = "mesh"`, `may contain only letters`},
	} {
		_, err := Parse("t.toml", []byte(fmt.Sprintf(base, tc.name, tc.peers)))
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%s %s: %v", tc.name, tc.peers, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s %s: error %v, want one with %q", tc.name, tc.peers, err, tc.err)
		}
	}
}

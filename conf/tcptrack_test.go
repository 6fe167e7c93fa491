package conf

import (
	"testing"
)

// TestTCPRequestTrackTables: a tcp_request track-sc rule needs a table,
// its frontend's or one it names, reported on the rule's line.
func TestTCPRequestTrackTables(t *testing.T) {
	const head = "[[frontend]]\nname = \"www\"\nbind = [\"127.0.0.1:0\"]\n"
	tests := []struct{ extra, want string }{
		{"stick_table = { type = \"ip\", size = 10 }\ntcp_request = [\"connection track-sc0 src\"]\n", ""},
		{"tcp_request = [\"connection track-sc1 src table t\"]\n[[table]]\nname = \"t\"\ntype = \"ip\"\nsize = 10\n", ""},
		{"tcp_request = [\"connection accept\", \"connection track-sc0 src\"]\n",
			"t.toml:4: frontend \"www\": tcp_request #2: track-sc0: no stick table in this section (add stick_table or 'table <name>')"},
		{"stick_table = { type = \"ip\", size = 10 }\ntcp_request = [\"connection track-sc2 src table nosuch\"]\n",
			"t.toml:5: frontend \"www\": tcp_request #1: track-sc2: unknown stick table \"nosuch\""},
		{"stick_table = { type = \"ip\", size = 10 }\ntcp_request = [\"connection track-sc0 hdr(host)\"]\n",
			"t.toml:5: frontend \"www\": tcp_request #1: 'connection track-sc0': fetch 'hdr(host)' needs an HTTP request, which tcp_request connection rules cannot see (only src, src_port, dst, dst_port)"},
	}
	for _, tt := range tests {
		_, err := Parse("t.toml", []byte(head+tt.extra))
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tt.want {
			t.Errorf("%s\ngot  %q\nwant %q", tt.extra, got, tt.want)
		}
	}
}

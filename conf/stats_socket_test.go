package conf

import (
	"os"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestStatsSocketModel checks the model built from
// testdata/conf/stats_socket.toml field by field.
func TestStatsSocketModel(t *testing.T) {
	data, err := os.ReadFile("../testdata/conf/stats_socket.toml")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := Parse("stats_socket.toml", []byte(strings.Split(string(data), "\n----------\n")[0]))
	if err != nil {
		t.Fatal(err)
	}
	want := []StatsSocket{
		{Path: "/run/fulcrum/admin.sock", Line: 6, Level: "admin", Mode: 0o660, Group: "0", MaxConn: 10},
		{Path: "/run/fulcrum/user.sock", Line: 12, Level: "user", Mode: 0o600, MaxConn: 100},
		{TCP: "127.0.0.1:9999", Line: 17, Level: "operator", Mode: 0o600, MaxConn: 10},
		{TCP: "[::1]:9998", Line: 20, Level: "operator", Mode: 0o600, MaxConn: 10},
		{TCP: "0.0.0.0:9997", Line: 24, Level: "user", Mode: 0o600, AllowRemote: true, MaxConn: 10},
	}
	if !reflect.DeepEqual(cfg.Global.StatsSockets, want) {
		t.Errorf("got  %+v\nwant %+v", cfg.Global.StatsSockets, want)
	}
	if cfg.Global.StatsTimeout != 2*time.Minute {
		t.Errorf("stats_timeout: got %v, want 2m", cfg.Global.StatsTimeout)
	}
	empty, err := Parse("empty.toml", nil)
	if err != nil {
		t.Fatal(err)
	}
	if empty.Global.StatsTimeout != 10*time.Second || empty.Global.StatsSockets != nil {
		t.Errorf("defaults: timeout %v, sockets %v", empty.Global.StatsTimeout, empty.Global.StatsSockets)
	}
}

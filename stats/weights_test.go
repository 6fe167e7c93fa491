package stats

import (
	"bytes"
	"encoding/csv"
	"strings"
	"testing"

	"github.com/fulcrum-proxy/fulcrum/proxy"
)

// TestWeightColumns: the weight, uweight, throttle, act and bck columns
// print what the backend decided (proxy.ServerSnapshot and
// BackendSnapshot), not a sum of their own: a ramping server shows its
// effective weight and throttle (HAProxy 2.6 shows 13/100 and 12% 2 s into
// a 20 s slowstart), a DRAIN server its weight and no throttle, and a
// backend its servers in use, the one backup in use without allbackups
// (issue 16 point 11).
func TestWeightColumns(t *testing.T) {
	srv := func(id int, name string, w, uw, throttle int, backup bool) proxy.ServerSnapshot {
		return proxy.ServerSnapshot{Name: name, ID: id, InitialWeight: uw, UserWeight: uw, Weight: w,
			Throttle: throttle, Backup: backup, Admin: proxy.AdminReady, Op: proxy.OpUp}
	}
	ramp := []proxy.ServerSnapshot{srv(1, "s1", 13, 100, 12, false), srv(2, "s2", 10, 10, -1, false)}
	ramp[1].Admin = proxy.AdminDrain
	backups := []proxy.ServerSnapshot{srv(1, "act", 10, 10, -1, false), srv(2, "b1", 3, 3, -1, true), srv(3, "b2", 5, 5, -1, true)}
	backups[0].Op = proxy.OpDown
	snap := &proxy.Snapshot{Backends: []proxy.BackendSnapshot{
		{Name: "rr", ID: 1, Mode: "http", Balance: "roundrobin", Servers: ramp, Act: 1, Weight: 13, UserWeight: 100},
		{Name: "bk", ID: 2, Mode: "http", Balance: "roundrobin", Servers: backups, Bck: 2, Weight: 3, UserWeight: 3},
	}}
	var out bytes.Buffer
	if err := WriteCSV(&out, snap, AllRows()); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(strings.NewReader(strings.TrimPrefix(out.String(), "# "))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := map[string]int{}
	for i, name := range recs[0] {
		col[name] = i
	}
	want := map[string]string{ // weight uweight throttle act bck
		"rr/s1":      "13 100 12 1 0",
		"rr/s2":      "10 10  1 0",
		"rr/BACKEND": "13 100  1 0",
		"bk/act":     "10 10  1 0",
		"bk/b1":      "3 3  0 1",
		"bk/b2":      "5 5  0 1",
		"bk/BACKEND": "3 3  0 2",
	}
	for _, r := range recs[1:] {
		name := r[0] + "/" + r[1]
		got := strings.Join([]string{r[col["weight"]], r[col["uweight"]], r[col["throttle"]], r[col["act"]], r[col["bck"]]}, " ")
		if w, ok := want[name]; ok && got != w {
			t.Errorf("%s: got %q, want %q (weight uweight throttle act bck)", name, got, w)
		}
		delete(want, name)
	}
	if len(want) > 0 {
		t.Errorf("rows missing: %v", want)
	}
}

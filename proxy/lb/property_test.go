package lb

import (
	"fmt"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// TestPickProperty: under random sequences of set changes (servers going
// down, coming up, changing weight), maxconn changes, sessions starting and
// ending, and picks with or without a server to avoid, no algorithm ever
// returns a server outside the usable set or a full one; it returns nil
// only when every usable server is full; and it returns avoid only when
// every other usable server is full.
func TestPickProperty(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		ci := rapid.IntRange(0, len(every)-1).Draw(rt, "algorithm")
		n := rapid.IntRange(1, 8).Draw(rt, "servers")
		all := servers(make([]int, n)...)
		a := build(rt, ci)
		var set []*Server
		var inflight []*Server
		rebuild := func() {
			set = set[:0]
			for _, s := range all {
				if s.Weight > 0 {
					set = append(set, s)
				}
			}
			a.Rebuild(slices.Clone(set))
		}
		for _, s := range all {
			s.Weight = rapid.IntRange(0, 4).Draw(rt, "weight")
		}
		rebuild()
		rt.Repeat(map[string]func(*rapid.T){
			"state": func(rt *rapid.T) { // down, up, or a new weight
				s := all[rapid.IntRange(0, n-1).Draw(rt, "server")]
				s.Weight = rapid.IntRange(0, 4).Draw(rt, "weight")
				rebuild()
			},
			"maxconn": func(rt *rapid.T) {
				s := all[rapid.IntRange(0, n-1).Draw(rt, "server")]
				s.MaxConn.Store(int64(rapid.IntRange(0, 3).Draw(rt, "maxconn")))
				rebuild() // the backend rebuilds when slowstart changes it
			},
			"pick": func(rt *rapid.T) {
				r := sampleRequests[rapid.IntRange(0, len(sampleRequests)-1).Draw(rt, "request")]
				var avoid *Server
				if rapid.Bool().Draw(rt, "avoid") {
					avoid = all[rapid.IntRange(0, n-1).Draw(rt, "avoided")]
				}
				s := a.Pick(r, avoid)
				free := 0
				for _, u := range set {
					if !u.Full() && u != avoid {
						free++
					}
				}
				switch {
				case s == nil:
					if free > 0 || avoid != nil && slices.Contains(set, avoid) && !avoid.Full() {
						rt.Fatalf("nil with a free server in the set")
					}
					return
				case !slices.Contains(set, s):
					rt.Fatalf("picked %s, not in the usable set %v", s.Name, names(set))
				case s.Full():
					rt.Fatalf("picked %s, which is full (%d/%d)", s.Name, s.Cur.Load(), s.MaxConn.Load())
				case s == avoid && free > 0:
					rt.Fatalf("picked the avoided %s with %d other servers free", s.Name, free)
				}
				take(a, s)
				inflight = append(inflight, s)
			},
			"release": func(rt *rapid.T) {
				if len(inflight) == 0 {
					rt.Skip("nothing in flight")
				}
				i := rapid.IntRange(0, len(inflight)-1).Draw(rt, "session")
				release(a, inflight[i])
				inflight = slices.Delete(inflight, i, i+1)
			},
		})
	})
}

func names(ss []*Server) []string {
	var out []string
	for _, s := range ss {
		out = append(out, fmt.Sprintf("%s(w%d)", s.Name, s.Weight))
	}
	return out
}

package lb

import (
	"container/heap"
	"math/rand/v2"
	"testing"
)

// endHeap orders in-flight requests by end time.
type endHeap []struct {
	end int
	s   *Server
}

func (h endHeap) Len() int           { return len(h) }
func (h endHeap) Less(i, j int) bool { return h[i].end < h[j].end }
func (h endHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *endHeap) Push(x any) {
	*h = append(*h, x.(struct {
		end int
		s   *Server
	}))
}
func (h *endHeap) Pop() any { old := *h; x := old[len(old)-1]; *h = old[:len(old)-1]; return x }

// simulate sends 10,000 requests, one per tick, each lasting a random
// 1..199 ticks (about 100 in flight, 5 per server), to 20 servers, and
// returns the mean over arrivals of max(server load) / average load.
func simulate(t *testing.T, expr string) float64 {
	all := servers(make([]int, 20)...)
	for _, s := range all {
		s.Weight = 16
	}
	a := mustNew(t, expr, Config{Rand: seeded(42), RingWeight: 20})
	a.Rebuild(all)
	dur := rand.New(rand.NewPCG(3, 4))
	var live endHeap
	sum, n := 0.0, 0
	for tick := range 10000 {
		for live.Len() > 0 && live[0].end <= tick {
			release(a, heap.Pop(&live).(struct {
				end int
				s   *Server
			}).s)
		}
		s := a.Pick(nil, nil)
		take(a, s)
		heap.Push(&live, struct {
			end int
			s   *Server
		}{tick + 1 + dur.IntN(199), s})
		if tick < 500 {
			continue // warm-up
		}
		most := int64(0)
		for _, s := range all {
			most = max(most, s.Cur.Load())
		}
		sum += float64(most) / (float64(live.Len()) / 20)
		n++
	}
	return sum / float64(n)
}

// TestRandomTwoChoices: the least loaded of two random servers keeps the
// busiest server much closer to the average than one random choice.
func TestRandomTwoChoices(t *testing.T) {
	one, two := simulate(t, "random(1)"), simulate(t, "random(2)")
	t.Logf("mean max/average in-flight: random(1) %.2f, random(2) %.2f", one, two)
	if two > 1.6 || two > one*0.8 {
		t.Errorf("random(2) %.2f against random(1) %.2f: want random(2) below 1.6 and 20%% below random(1)", two, one)
	}
}

// TestRandomWeights: with one draw, picks follow the weights through the
// ring.
func TestRandomWeights(t *testing.T) {
	a := mustNew(t, "random(1)", Config{Rand: seeded(9), RingWeight: 6})
	a.Rebuild(servers(16, 32, 48))
	got := count(a, nil, 60000, 3)
	for i, want := range []int{10000, 20000, 30000} {
		if got[i] < want*85/100 || got[i] > want*115/100 {
			t.Errorf("got %v, want about [10000 20000 30000]", got)
		}
	}
}

package haproxycfg

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
)

// Rules left reading a tracking counter whose track-sc line was not
// converted: their condition never sees an entry, so a deny or a count
// on it never happens. A fresh-user trial converted a bot-protection
// example whose `track-sc1 url32+src` was not supported; the kept
// `sc-inc-gpc0(0) if { sc_http_req_rate(1) eq 1 }` silently never matched.

// trackSlot finds the counter number of a track-sc action.
var trackSlot = regexp.MustCompile(`\btrack-sc([0-2])\b`)

// readsSlot finds the counters a line reads: sc_*(N), scN_*,
// sc-inc-gpcX(N), sc-set-gpt0(N).
var readsSlot = regexp.MustCompile(`\bsc(?:_[a-z0-9_]+\(\s*([0-2])|([0-2])_[a-z]|-(?:inc-gpc[01]|set-gpt0)\(\s*([0-2]))`)

// orphanedCounters returns a note for each converted line of a section
// that reads a tracking counter only lines not converted (notes) track in
// that section.
func (f *file) orphanedCounters(notes []Note) []Note {
	dropped := map[int]bool{}
	for _, n := range notes {
		if n.Kind.Blocking() {
			dropped[n.Line] = true
		}
	}
	var out []Note
	for _, s := range f.sections {
		switch s.kind {
		case "frontend", "backend", "listen":
		default:
			continue
		}
		lost, kept := map[int]int{}, map[int]bool{}
		for _, ln := range s.lines {
			if m := trackSlot.FindStringSubmatch(ln.text); m != nil {
				n, _ := strconv.Atoi(m[1])
				if dropped[ln.num] {
					if _, seen := lost[n]; !seen {
						lost[n] = ln.num
					}
				} else {
					kept[n] = true
				}
			}
		}
		for slot := range kept {
			delete(lost, slot)
		}
		if len(lost) == 0 {
			continue
		}
		for _, ln := range s.lines {
			if dropped[ln.num] || trackSlot.MatchString(ln.text) {
				continue
			}
			var slots []int
			for _, m := range readsSlot.FindAllStringSubmatch(ln.text, -1) {
				for _, g := range m[1:] {
					if n, err := strconv.Atoi(g); err == nil {
						if _, ok := lost[n]; ok && !slices.Contains(slots, n) {
							slots = append(slots, n)
						}
					}
				}
			}
			for _, n := range slots {
				out = append(out, Note{Line: ln.num, Keyword: ln.kw(0), Kind: Differs,
					Why: fmt.Sprintf("reads tracking counter %d, which only line %d tracks, not converted: this rule never sees an entry", n, lost[n])})
			}
		}
	}
	return out
}

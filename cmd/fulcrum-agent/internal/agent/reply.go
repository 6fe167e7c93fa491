package agent

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Reply is what the agent answers, before it is written as a line. It uses
// only words of the agent-check grammar (reference/agent-check.md §3):
// up, down, ready, drain, maint, N% and a "#" comment.
type Reply struct {
	// State is "ready", "drain", "maint" or "down".
	State string
	// Weight is the percentage sent with "ready"; unused otherwise.
	Weight int
	// Reason is the comment after "#", empty for ready.
	Reason string
	// Up prefixes a non-down reply with "up" (Config.ReportUp).
	Up bool
}

// String returns the reply line without its line feed, e.g. "up ready 73%",
// "up drain #cpu 97% over threshold 90%" or "down #process nginx not
// running". A comment always starts a word ("#..."), never touches one, so
// HAProxy reads it as a comment and not as an unknown word.
func (r Reply) String() string {
	var b strings.Builder
	if r.Up && r.State != "down" {
		b.WriteString("up ")
	}
	b.WriteString(r.State)
	if r.State == "ready" {
		b.WriteString(" " + strconv.Itoa(r.Weight) + "%")
	}
	if r.Reason != "" {
		// The reply is one line: a line break in a name from the
		// configuration must not end it early.
		b.WriteString(" #" + strings.Map(func(c rune) rune {
			if c == '\r' || c == '\n' {
				return ' '
			}
			return c
		}, r.Reason))
	}
	return b.String()
}

// manualReason is the comment of a state forced by `fulcrum-agent set`.
const manualReason = "manual"

// Decide computes the reply for reading r under cfg and the operator's
// override ov. It is a pure function: the weight formula, the thresholds
// and the precedence of the states are all here.
//
// Precedence: a forced maint or drain wins over everything; a forced ready
// skips the process check and the thresholds but keeps the computed weight;
// otherwise (auto) a missing required process gives process.action, any
// threshold crossed gives drain, and the rest is ready with Weight(cfg, r).
func Decide(cfg *Config, r Reading, ov Override) Reply {
	rep := Reply{Up: cfg.ReportUp}
	switch ov {
	case OverrideMaint, OverrideDrain:
		rep.State, rep.Reason = string(ov), manualReason
		return rep
	case OverrideReady:
		rep.State, rep.Weight = "ready", Weight(cfg, r)
		return rep
	}
	if p := cfg.Process; p.Enabled && !r.ProcessRunning {
		rep.State, rep.Reason = p.Action, p.missingReason()
		return rep
	}
	var over []string
	for _, s := range signals(cfg, r) {
		if s.Threshold == 0 || math.IsNaN(s.u) {
			continue
		}
		if u := math.Round(s.u); u > float64(s.Threshold) {
			over = append(over, fmt.Sprintf("%s %.0f%% over threshold %d%%", s.name, u, s.Threshold))
		}
	}
	if len(over) > 0 {
		rep.State, rep.Reason = "drain", strings.Join(over, ", ")
		return rep
	}
	rep.State, rep.Weight = "ready", Weight(cfg, r)
	return rep
}

// Weight is the weight formula, in percent of the server's configured
// weight:
//
//	weight = 100 − Σ importance × min(u / value, 1) × 100
//
// over the enabled signals with a known utilisation u, rounded to the
// nearest integer and kept within [min_weight, 100].
func Weight(cfg *Config, r Reading) int {
	w := 100.0
	for _, s := range signals(cfg, r) {
		if math.IsNaN(s.u) {
			continue
		}
		w -= s.Importance * math.Min(math.Max(s.u, 0)/float64(s.Value), 1) * 100
	}
	return min(max(int(math.Round(w)), cfg.MinWeight), 100)
}

// signal is one enabled Signal with its name and current utilisation.
type signal struct {
	Signal
	name string
	u    float64
}

// signals lists the enabled signals in reply order: cpu, memory, load.
func signals(cfg *Config, r Reading) []signal {
	all := [...]signal{
		{cfg.CPU, "cpu", r.CPU},
		{cfg.Memory, "memory", r.Memory},
		{cfg.Load, "load", r.Load},
	}
	out := make([]signal, 0, len(all))
	for _, s := range all {
		if s.Enabled {
			out = append(out, s)
		}
	}
	return out
}

// missingReason is the comment of the reply when the process is missing.
func (p Process) missingReason() string {
	switch {
	case p.Name != "" && p.Service != "":
		return fmt.Sprintf("process %s or service %s not running", p.Name, p.Service)
	case p.Service != "":
		return fmt.Sprintf("service %s not running", p.Service)
	}
	return fmt.Sprintf("process %s not running", p.Name)
}

package agent

import (
	"math"
	"testing"
)

// TestDecide is the weight formula and the state rules as a table: a
// configuration change, a reading and an override give one exact line.
func TestDecide(t *testing.T) {
	nan := math.NaN()
	tests := []struct {
		name string
		cfg  func(*Config)
		r    Reading
		ov   Override
		want string
	}{
		{"defaults: cpu and half of memory", nil, Reading{CPU: 27, Memory: 40}, OverrideAuto, "up ready 53%"},
		{"issue example ready", func(c *Config) { c.ReportUp = false }, Reading{CPU: 27}, OverrideAuto, "ready 73%"},
		{"issue example drain", func(c *Config) { c.ReportUp = false }, Reading{CPU: 97}, OverrideAuto, "drain #cpu 97% over threshold 90%"},
		{"idle machine", nil, Reading{}, OverrideAuto, "up ready 100%"},
		{"two thresholds crossed, listed in order", nil, Reading{CPU: 96.6, Memory: 96}, OverrideAuto,
			"up drain #cpu 97% over threshold 90%, memory 96% over threshold 95%"},
		{"threshold compares the rounded value", nil, Reading{CPU: 90.4}, OverrideAuto, "up ready 10%"},
		{"rounded above threshold", nil, Reading{CPU: 90.5}, OverrideAuto, "up drain #cpu 91% over threshold 90%"},
		{"floor", func(c *Config) { c.MinWeight = 25 }, Reading{CPU: 89, Memory: 50}, OverrideAuto, "up ready 25%"},
		{"floor 0 lets the weight reach 0", func(c *Config) { c.MinWeight = 0; c.CPU.Value = 50; c.CPU.Threshold = 0; c.Memory.Enabled = false },
			Reading{CPU: 60}, OverrideAuto, "up ready 0%"},
		{"value: 80% counts as full", func(c *Config) { c.CPU.Value = 80; c.Memory.Enabled = false }, Reading{CPU: 40}, OverrideAuto, "up ready 50%"},
		{"value caps the penalty", func(c *Config) { c.CPU.Value = 50; c.CPU.Importance = 0.4; c.CPU.Threshold = 0 }, Reading{CPU: 99}, OverrideAuto, "up ready 60%"},
		{"importance 0 keeps only the threshold", func(c *Config) { c.CPU.Importance = 0 }, Reading{CPU: 85}, OverrideAuto, "up ready 100%"},
		{"importance 0 still drains", func(c *Config) { c.CPU.Importance = 0 }, Reading{CPU: 95}, OverrideAuto, "up drain #cpu 95% over threshold 90%"},
		{"importance 2 doubles", func(c *Config) { c.CPU.Importance = 2; c.MinWeight = 0 }, Reading{CPU: 30}, OverrideAuto, "up ready 40%"},
		{"threshold 0 never drains", func(c *Config) { c.CPU.Threshold = 0 }, Reading{CPU: 100}, OverrideAuto, "up ready 10%"},
		{"disabled signal is ignored", func(c *Config) { c.CPU.Enabled = false }, Reading{CPU: 99, Memory: 20}, OverrideAuto, "up ready 90%"},
		{"load per cpu, rounded half up", func(c *Config) { c.Load = Signal{Enabled: true, Value: 200, Importance: 0.5} }, Reading{Load: 150}, OverrideAuto, "up ready 63%"},
		{"load over threshold", func(c *Config) { c.Load = Signal{Enabled: true, Value: 100, Importance: 1, Threshold: 200} }, Reading{Load: 250}, OverrideAuto,
			"up drain #load 250% over threshold 200%"},
		{"unknown signal costs nothing", nil, Reading{CPU: nan, Memory: 40}, OverrideAuto, "up ready 80%"},
		{"unknown signal crosses no threshold", nil, Reading{CPU: nan, Memory: nan}, OverrideAuto, "up ready 100%"},
		{"negative reading counts as 0", nil, Reading{CPU: -5}, OverrideAuto, "up ready 100%"},
		{"process missing: down", func(c *Config) { c.Process = Process{Enabled: true, Name: "nginx", Action: "down"} }, Reading{CPU: 10}, OverrideAuto,
			"down #process nginx not running"},
		{"process missing beats thresholds", func(c *Config) { c.Process = Process{Enabled: true, Name: "nginx", Action: "down"} }, Reading{CPU: 99}, OverrideAuto,
			"down #process nginx not running"},
		{"process missing: maint", func(c *Config) { c.Process = Process{Enabled: true, Name: "nginx", Action: "maint"} }, Reading{}, OverrideAuto,
			"up maint #process nginx not running"},
		{"process missing: maint without up", func(c *Config) {
			c.ReportUp = false
			c.Process = Process{Enabled: true, Name: "nginx", Action: "maint"}
		}, Reading{}, OverrideAuto, "maint #process nginx not running"},
		{"process running", func(c *Config) { c.Process = Process{Enabled: true, Name: "nginx", Action: "down"} }, Reading{CPU: 10, ProcessRunning: true}, OverrideAuto,
			"up ready 90%"},
		{"service missing", func(c *Config) { c.Process = Process{Enabled: true, Service: "W3SVC", Action: "down"} }, Reading{}, OverrideAuto,
			"down #service W3SVC not running"},
		{"line break in a name stays on one line", func(c *Config) { c.Process = Process{Enabled: true, Name: "a\r\nb", Action: "down"} }, Reading{}, OverrideAuto,
			"down #process a  b not running"},
		{"forced drain", nil, Reading{}, OverrideDrain, "up drain #manual"},
		{"forced maint", nil, Reading{}, OverrideMaint, "up maint #manual"},
		{"forced maint beats a missing process", func(c *Config) { c.Process = Process{Enabled: true, Name: "nginx", Action: "down"} }, Reading{}, OverrideMaint,
			"up maint #manual"},
		{"forced ready skips thresholds and process, keeps the weight", func(c *Config) { c.Process = Process{Enabled: true, Name: "nginx", Action: "down"} },
			Reading{CPU: 97, Memory: 20}, OverrideReady, "up ready 10%"},
		{"forced ready weight", nil, Reading{CPU: 20}, OverrideReady, "up ready 80%"},
		{"forced drain without up", func(c *Config) { c.ReportUp = false }, Reading{}, OverrideDrain, "drain #manual"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := Default()
			if tt.cfg != nil {
				tt.cfg(&cfg)
			}
			if got := Decide(&cfg, tt.r, tt.ov).String(); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

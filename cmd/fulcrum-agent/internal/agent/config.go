package agent

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
)

// Config is the whole fulcrum-agent configuration file. Every key is
// optional; Default() gives the value of a missing key. The doc comments of
// the fields are the configuration reference (README.md copies the
// defaults).
type Config struct {
	// Listen is the TCP address the agent answers on. Default ":9999" (all
	// addresses); bind it to one address, e.g. "10.0.0.5:9999", to keep it
	// off other networks.
	Listen string `toml:"listen"`
	// Allow lists the source networks ("10.0.0.0/8") or addresses
	// ("192.0.2.7") allowed to connect. Other sources are closed without a
	// reply and logged. Default empty: every source is answered.
	Allow []string `toml:"allow"`
	// StateFile is where `fulcrum-agent set` records the forced state
	// (drain, maint, ready; absent or "auto" for none). Default
	// "/var/lib/fulcrum-agent/state", on Windows
	// "%ProgramData%\fulcrum-agent\state".
	StateFile string `toml:"state_file"`
	// MinWeight is the floor of the weight in a ready reply, in percent
	// (0..100). Default 10: a busy server still gets a share; 0 lets the
	// weight reach 0%, which stops new traffic without draining.
	MinWeight int `toml:"min_weight"`
	// ReportUp starts every reply that is not "down" with "up". HAProxy keeps
	// the agent's last up/down verdict until the agent says otherwise, so
	// after a "down" (required process missing) a reply without "up" would
	// leave the server DOWN (agent) for good. Default true; false gives the
	// bare "ready 73%" form.
	ReportUp bool `toml:"report_up"`
	// SampleInterval is how often the load is sampled in the background.
	// Default "1s", minimum "10ms".
	SampleInterval Duration `toml:"sample_interval"`
	// CPUWindow is the window the CPU busy percentage is averaged over.
	// Default "5s"; at least sample_interval.
	CPUWindow Duration `toml:"cpu_window"`
	// Timeout bounds one connection: the reply is written and the
	// balancer's own bytes (agent-send) are read and discarded within it.
	// Default "2s".
	Timeout Duration `toml:"timeout"`
	// MaxConns is the number of connections served at once; more are
	// closed at once without a reply. Default 64.
	MaxConns int `toml:"max_conns"`
	// LogLevel is debug, info, warn or error. Default "info". At debug every
	// reply and what the balancer sent are logged.
	LogLevel string `toml:"log_level"`
	// LogFormat is console or json. Default "console".
	LogFormat string `toml:"log_format"`
	// LogFile receives the log instead of stderr (useful for a Windows
	// service). Default empty: stderr.
	LogFile string `toml:"log_file"`

	// CPU is the busy percentage of all CPUs over cpu_window. Default
	// enabled, value 100, importance 1, threshold 90.
	CPU Signal `toml:"cpu"`
	// Memory is the used percentage of physical memory (total minus
	// available). Default enabled, value 100, importance 0.5, threshold 95.
	Memory Signal `toml:"memory"`
	// Load is the 1-minute load average per logical CPU, in percent (a load
	// of 2.0 on 4 CPUs is 50%). Default disabled, value 100, importance 1,
	// threshold 0 (none).
	Load Signal `toml:"load"`
	// Process names a process (or, on Windows, a service) that must be
	// running. Default disabled.
	Process Process `toml:"process"`
}

// Signal configures one load signal. Its utilisation u (percent) costs
// importance × min(u/value, 1) × 100 points of weight; see Decide.
type Signal struct {
	// Enabled counts the signal in the weight and its threshold.
	Enabled bool `toml:"enabled"`
	// Value is the utilisation, in percent, counted as "full": at or above
	// it the signal costs its whole importance. 1..1000.
	Value int `toml:"value"`
	// Importance scales the signal's cost: 1 means a full signal alone takes
	// the weight to 0% (before the floor), 0.5 to 50%, 0 counts only the
	// threshold. 0..10.
	Importance float64 `toml:"importance"`
	// Threshold drains the server when the utilisation, rounded to a whole
	// percent, is above it. 0 disables the threshold. 0..1000.
	Threshold int `toml:"threshold"`
}

// Process configures the required process or service.
type Process struct {
	// Enabled turns the check on; name or service is then required.
	Enabled bool `toml:"enabled"`
	// Name is the executable name ("nginx"; ".exe" and case are ignored on
	// Windows and macOS).
	Name string `toml:"name"`
	// Service is a Windows service name ("W3SVC") that must be in the
	// Running state. Windows only.
	Service string `toml:"service"`
	// Action is the reply when it is missing: "down" (the balancer marks the
	// server DOWN (agent)) or "maint" (MAINT). Default "down".
	Action string `toml:"action"`
}

// DefaultConfigPath is where fulcrum-agent looks for its file when -c is
// not given.
func DefaultConfigPath() string {
	return filepath.Join(dataDir("/etc/fulcrum-agent"), "agent.toml")
}

// dataDir returns %ProgramData%\fulcrum-agent on Windows and unix otherwise.
func dataDir(unix string) string {
	if runtime.GOOS == "windows" {
		pd := os.Getenv("ProgramData")
		if pd == "" {
			pd = `C:\ProgramData`
		}
		return filepath.Join(pd, "fulcrum-agent")
	}
	return unix
}

// Default returns the configuration used when no file is given; a file
// overrides it key by key.
func Default() Config {
	var c Config
	c.setDefaults()
	return c
}

// setDefaults is the one place defaults are written down. It is called on
// an empty Config before the file is decoded over it.
func (c *Config) setDefaults() {
	c.Listen = ":9999"
	c.StateFile = filepath.Join(dataDir("/var/lib/fulcrum-agent"), "state")
	c.MinWeight = 10
	c.ReportUp = true
	c.SampleInterval = Duration(time.Second)
	c.CPUWindow = Duration(5 * time.Second)
	c.Timeout = Duration(2 * time.Second)
	c.MaxConns = 64
	c.LogLevel = "info"
	c.LogFormat = "console"
	c.CPU = Signal{Enabled: true, Value: 100, Importance: 1, Threshold: 90}
	c.Memory = Signal{Enabled: true, Value: 100, Importance: 0.5, Threshold: 95}
	c.Load = Signal{Enabled: false, Value: 100, Importance: 1, Threshold: 0}
	c.Process = Process{Action: "down"}
}

// ConfigError is one problem of a configuration file, with the line of the
// key it is about (0 when unknown).
type ConfigError struct {
	File string
	Line int
	Msg  string
}

func (e ConfigError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.File, e.Msg)
}

// ConfigErrors is every problem found in a file, in file order.
type ConfigErrors []ConfigError

func (es ConfigErrors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// LoadConfig reads, decodes and validates path. The error, if any, is a
// ConfigErrors listing every problem, or the file's read error.
func LoadConfig(path string) (Config, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return Config{}, err
	}
	return ParseConfig(path, string(src))
}

// ParseConfig is LoadConfig on a file already read; name is used in errors.
func ParseConfig(name, src string) (Config, error) {
	c := Default()
	md, err := toml.Decode(src, &c)
	if err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			msg := pe.Message
			if pe.LastKey != "" {
				msg = pe.LastKey + ": " + msg
			}
			return Config{}, ConfigErrors{{File: name, Line: pe.Position.Line, Msg: msg}}
		}
		return Config{}, ConfigErrors{typeError(name, err)}
	}
	lines := keyLines(src)
	var errs ConfigErrors
	for _, k := range md.Undecoded() {
		errs = append(errs, ConfigError{File: name, Line: lines[k.String()], Msg: fmt.Sprintf("%s: unknown key", k)})
	}
	for _, ke := range c.validate() {
		errs = append(errs, ConfigError{File: name, Line: lines[ke.key], Msg: ke.key + ": " + ke.msg})
	}
	if len(errs) > 0 {
		sortByLine(errs)
		return Config{}, errs
	}
	return c, nil
}

// tomlTypeError matches the decoder's type errors, which are plain errors
// ("toml: line 2 (last key \"cpu.value\"): incompatible types: ...").
var tomlTypeError = regexp.MustCompile(`^toml: (?:line (\d+) )?\(last key "([^"]*)"\): (.*)$`)

// typeError turns a decoder type error into a ConfigError naming the line
// and the key.
func typeError(name string, err error) ConfigError {
	m := tomlTypeError.FindStringSubmatch(err.Error())
	if m == nil {
		return ConfigError{File: name, Msg: err.Error()}
	}
	line, _ := strconv.Atoi(m[1])
	return ConfigError{File: name, Line: line, Msg: m[2] + ": " + m[3]}
}

// keyError is a validation problem about one dotted key.
type keyError struct{ key, msg string }

// validate checks every value and returns every problem, not the first.
func (c *Config) validate() []keyError {
	var errs []keyError
	add := func(key, format string, args ...any) {
		errs = append(errs, keyError{key, fmt.Sprintf(format, args...)})
	}
	if c.Listen == "" {
		add("listen", "must not be empty")
	}
	if _, err := ParseAllow(c.Allow); err != nil {
		add("allow", "%v", err)
	}
	if c.StateFile == "" {
		add("state_file", "must not be empty")
	}
	if c.MinWeight < 0 || c.MinWeight > 100 {
		add("min_weight", "must be 0..100, got %d", c.MinWeight)
	}
	if c.SampleInterval.D() < 10*time.Millisecond {
		add("sample_interval", "must be at least 10ms, got %s", c.SampleInterval.D())
	}
	if c.CPUWindow.D() < c.SampleInterval.D() {
		add("cpu_window", "must be at least sample_interval (%s), got %s", c.SampleInterval.D(), c.CPUWindow.D())
	}
	if c.Timeout.D() <= 0 {
		add("timeout", "must be positive, got %s", c.Timeout.D())
	}
	if c.MaxConns < 1 {
		add("max_conns", "must be at least 1, got %d", c.MaxConns)
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		add("log_level", "must be debug, info, warn or error, got %q", c.LogLevel)
	}
	switch c.LogFormat {
	case "console", "json":
	default:
		add("log_format", "must be console or json, got %q", c.LogFormat)
	}
	for _, s := range []struct {
		key string
		sig Signal
	}{{"cpu", c.CPU}, {"memory", c.Memory}, {"load", c.Load}} {
		if s.sig.Value < 1 || s.sig.Value > 1000 {
			add(s.key+".value", "must be 1..1000, got %d", s.sig.Value)
		}
		if s.sig.Importance < 0 || s.sig.Importance > 10 {
			add(s.key+".importance", "must be 0..10, got %g", s.sig.Importance)
		}
		if s.sig.Threshold < 0 || s.sig.Threshold > 1000 {
			add(s.key+".threshold", "must be 0..1000, got %d", s.sig.Threshold)
		}
	}
	p := c.Process
	switch p.Action {
	case "down", "maint":
	default:
		add("process.action", "must be down or maint, got %q", p.Action)
	}
	if p.Enabled && p.Name == "" && p.Service == "" {
		add("process.enabled", "needs process.name or process.service")
	}
	if p.Service != "" && runtime.GOOS != "windows" {
		add("process.service", "Windows services exist only on Windows, got %q", p.Service)
	}
	return errs
}

// ParseAllow parses the allow list: CIDR prefixes or single addresses.
// An empty list gives nil, meaning every source is allowed.
func ParseAllow(list []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, s := range list {
		if p, err := netip.ParsePrefix(s); err == nil {
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(s)
		if err != nil {
			return nil, fmt.Errorf("%q is neither a network (10.0.0.0/8) nor an address", s)
		}
		out = append(out, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
	}
	return out, nil
}

// keyLines maps each dotted key of a small TOML file ("cpu.threshold") to
// the line where it is set. It knows [table] headers and key = value lines,
// which is all this file's schema has; keys it cannot place get line 0.
func keyLines(src string) map[string]int {
	lines := map[string]int{}
	table := ""
	for i, l := range strings.Split(src, "\n") {
		l = strings.TrimSpace(l)
		switch {
		case l == "" || l[0] == '#':
		case l[0] == '[':
			name := strings.Trim(strings.SplitN(l, "]", 2)[0], "[ ")
			table = name
			if _, ok := lines[name]; !ok {
				lines[name] = i + 1
			}
		default:
			k, _, ok := strings.Cut(l, "=")
			if !ok {
				continue
			}
			k = strings.Trim(strings.TrimSpace(k), `"`)
			if table != "" {
				k = table + "." + k
			}
			if _, seen := lines[k]; !seen {
				lines[k] = i + 1
			}
		}
	}
	return lines
}

// sortByLine orders errors by line, keeping the order of equal lines.
func sortByLine(es ConfigErrors) {
	slices.SortStableFunc(es, func(a, b ConfigError) int { return a.Line - b.Line })
}

package conf

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Duration is a length of time, written in the configuration as a string with
// a unit: "500ms", "5s", "2m", "1h30m", "1d". The units are those of Go's
// time.ParseDuration ("ns", "us", "ms", "s", "m", "h") plus HAProxy's "d"
// (days), which may only lead ("1d12h"). A bare number, "5000" or 5000, is
// an error and not milliseconds (HAProxy's reading) nor seconds: the unit is
// always written. Negative durations are errors.
type Duration time.Duration

// errNoUnit is returned by ParseDuration for a number without a unit.
var errNoUnit = errors.New("duration needs a unit")

// ParseDuration reads s as a Duration. The error says what is wrong and
// quotes s: `duration needs a unit, got "5000"`.
func ParseDuration(s string) (Duration, error) {
	t := strings.TrimSpace(s)
	if _, err := strconv.ParseFloat(t, 64); err == nil {
		return 0, fmt.Errorf("%w, got %q", errNoUnit, s)
	}
	var days time.Duration
	hasDays := false
	if i := strings.IndexByte(t, 'd'); i > 0 && isDigits(t[:i]) {
		n, err := strconv.ParseInt(t[:i], 10, 64)
		if err != nil || n > int64(1<<63-1)/int64(24*time.Hour) {
			return 0, fmt.Errorf("duration out of range, got %q", s)
		}
		days, t, hasDays = time.Duration(n)*24*time.Hour, t[i+1:], true
	}
	var rest time.Duration
	if t != "" || !hasDays {
		var err error
		if rest, err = time.ParseDuration(t); err != nil {
			return 0, fmt.Errorf("not a duration (a number with a unit: ms, s, m, h, d), got %q", s)
		}
	}
	d := days + rest
	if rest < 0 {
		return 0, fmt.Errorf("must not be negative, got %q", s)
	}
	if d < 0 { // days + rest overflowed
		return 0, fmt.Errorf("duration out of range, got %q", s)
	}
	return Duration(d), nil
}

// isDigits reports whether s is one or more ASCII digits.
func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// Std returns d as a time.Duration.
func (d Duration) Std() time.Duration { return time.Duration(d) }

// String returns d the short way an operator writes it: "2m" rather than
// time.Duration's "2m0s", "1h" rather than "1h0m0s".
func (d Duration) String() string {
	s := time.Duration(d).String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}

// MarshalText returns d as String does.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText reads a duration string, as ParseDuration does. It lets
// Duration be decoded by other TOML, JSON or flag code too.
func (d *Duration) UnmarshalText(text []byte) error {
	v, err := ParseDuration(string(text))
	if err != nil {
		return err
	}
	*d = v
	return nil
}

package agent

import (
	"fmt"
	"time"
)

// Duration is a time.Duration read from a TOML string with units ("500ms",
// "2s"). A bare number is rejected: TOML integers never reach UnmarshalText.
type Duration time.Duration

// UnmarshalText parses a Go duration string.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("invalid duration %q (want a number with a unit, e.g. \"2s\")", string(b))
	}
	*d = Duration(v)
	return nil
}

// MarshalText prints the duration the way it is written in the file.
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// D returns the value as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

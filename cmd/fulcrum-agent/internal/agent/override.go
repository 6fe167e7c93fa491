package agent

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Override is a state forced by the operator with `fulcrum-agent set`.
type Override string

// The overrides. OverrideAuto lets the load decide.
const (
	OverrideAuto  Override = "auto"
	OverrideReady Override = "ready"
	OverrideDrain Override = "drain"
	OverrideMaint Override = "maint"
)

// ParseOverride accepts auto, ready, drain or maint, in any case.
func ParseOverride(s string) (Override, error) {
	switch o := Override(strings.ToLower(strings.TrimSpace(s))); o {
	case OverrideAuto, OverrideReady, OverrideDrain, OverrideMaint:
		return o, nil
	}
	return "", fmt.Errorf("unknown state %q (want drain, maint, ready or auto)", s)
}

// Control is the local control file holding the Override: one word and a
// line feed. Only local users who may write the file (root, or
// Administrators on Windows, with the default path) can force a state; the
// agent never accepts one over the network. A missing file means auto.
type Control struct {
	Path string
}

// Get returns the current override. It is called once per agent
// connection; a missing file is OverrideAuto, an unreadable or garbled one is
// OverrideAuto with an error for the log.
func (c Control) Get() (Override, error) {
	b, err := os.ReadFile(c.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return OverrideAuto, nil
	}
	if err != nil {
		return OverrideAuto, fmt.Errorf("state file: %w", err)
	}
	o, err := ParseOverride(string(b))
	if err != nil {
		return OverrideAuto, fmt.Errorf("state file %s: %w", c.Path, err)
	}
	return o, nil
}

// Set records o, creating the file's directory if needed. The file is
// replaced by a rename, so a concurrent Get sees the old or the new word,
// never half of one. Setting auto removes the file.
func (c Control) Set(o Override) error {
	if o == OverrideAuto {
		if err := os.Remove(c.Path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	}
	dir := filepath.Dir(c.Path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".state-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.WriteString(string(o) + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		// Readable by the agent when it runs as another user (systemd
		// DynamicUser); writable only by the one who set it.
		err = os.Chmod(tmp, 0o644)
	}
	if err == nil {
		err = os.Rename(tmp, c.Path)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}

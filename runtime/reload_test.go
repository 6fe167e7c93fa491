package runtime

import (
	"errors"
	"strings"
	"sync/atomic"
	"testing"
)

// TestReloadCommand: `reload` is listed and runs only where the daemon can
// reload, at admin level; its reply is HAProxy's master CLI one.
func TestReloadCommand(t *testing.T) {
	t.Run("absent without Options.Reload", func(t *testing.T) {
		e := startEnv(t, fuzzConfig)
		if got := e.run(t, LevelAdmin, "reload"); !strings.HasPrefix(got, "Unknown command") {
			t.Errorf("reload: got %q, want an unknown command", got)
		}
		if got := e.run(t, LevelAdmin, "help"); strings.Contains(got, "reload") {
			t.Errorf("help lists reload without Options.Reload:\n%s", got)
		}
	})
	var fail atomic.Pointer[error]
	var calls atomic.Int32
	e := startEnvOpts(t, fuzzConfig, Options{Version: "0.0.0-test", Reload: func() error {
		calls.Add(1)
		if err := fail.Load(); err != nil {
			return *err
		}
		return nil
	}})
	tests := []struct {
		name  string
		level Level
		fail  error
		want  string
		calls int32
	}{
		{"operator is refused", LevelOperator, nil, "Permission denied\n\n", 0},
		{"invalid file", LevelAdmin, errors.New("f.toml:3: unknown key \"x\"\nf.toml:9: weight: must be 0..256, got 300"),
			"Success=0\n--\nf.toml:3: unknown key \"x\"\nf.toml:9: weight: must be 0..256, got 300\n\n", 1},
		{"valid file", LevelAdmin, nil, "Success=1\n--\n\n", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fail.Store(nil)
			if tt.fail != nil {
				fail.Store(&tt.fail)
			}
			if got := e.run(t, tt.level, "reload"); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
			if n := calls.Load(); n != tt.calls {
				t.Errorf("Reload called %d times, want %d", n, tt.calls)
			}
		})
	}
	if got := e.run(t, LevelAdmin, "help"); !strings.Contains(got, "  reload ") {
		t.Errorf("help does not list reload:\n%s", got)
	}
}

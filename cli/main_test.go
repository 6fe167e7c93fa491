package cli

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package when a test leaves a goroutine behind.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// Not ours: the first readline instance of a process (cli.Shell)
		// starts a SIGWINCH watcher that lives as long as the process
		// (chzyer/readline utils_unix.go DefaultOnWidthChanged, a
		// sync.Once, never stopped) and that readline's Close leaves.
		goleak.IgnoreTopFunction("github.com/chzyer/readline.DefaultOnWidthChanged.func1.1"),
	)
}

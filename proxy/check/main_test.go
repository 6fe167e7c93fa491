package check

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package when a test leaves a goroutine behind: every
// checker loop and probe must end with Stop.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

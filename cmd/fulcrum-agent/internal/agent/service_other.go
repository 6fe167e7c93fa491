//go:build !windows

package agent

// serviceHandle is empty where there are no Windows services.
type serviceHandle struct{}

func (*serviceHandle) running(string) (bool, error) { return false, errNoServices }

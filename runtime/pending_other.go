//go:build !linux

package runtime

import "net"

// pendingInput cannot look into the kernel here: the session waits
// pipelineGrace instead when it may matter (session.more).
func pendingInput(net.Conn) inputState { return inputUnknown }

// peerClosed cannot look into the kernel here: a wait runs to its end.
func peerClosed(net.Conn) bool { return false }

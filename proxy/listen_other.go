//go:build !unix

package proxy

import (
	"errors"
	"net"
)

// suspendListener is not supported outside Unix.
func suspendListener(net.Listener) error { return errors.ErrUnsupported }

// resumeListener is not supported outside Unix.
func resumeListener(net.Listener) error { return errors.ErrUnsupported }

package netio

import (
	"errors"
	"net"
	"os"
)

// IsTimeout reports whether err is a deadline expiry.
func IsTimeout(err error) bool {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	return errors.Is(err, os.ErrDeadlineExceeded)
}

// IsConnReset reports whether err is a network error other than a
// timeout: a connection reset or a broken pipe.
func IsConnReset(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && !op.Timeout()
}

// IsWriteErr reports whether err came from writing to a connection (or
// splicing into it) rather than from reading.
func IsWriteErr(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && (op.Op == "write" || op.Op == "readfrom")
}

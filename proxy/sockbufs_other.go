//go:build !unix

package proxy

import (
	"syscall"

	"github.com/fulcrum-proxy/fulcrum/conf"
)

// sockBufsControl sets nothing outside Unix: tune_sndbuf_* and
// tune_rcvbuf_* are ignored there.
func sockBufsControl(conf.SocketBufs) func(network, address string, c syscall.RawConn) error {
	return nil
}

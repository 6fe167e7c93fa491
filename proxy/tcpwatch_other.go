//go:build !linux

package proxy

import (
	"net"

	"github.com/fulcrum-proxy/fulcrum/proxy/queue"
)

// peerCloseWait: without POLLRDHUP a queued client with unread bytes is not
// watched; it waits until served or timeout queue.
func peerCloseWait(net.Conn) (queue.Waker, waitFunc) { return nil, chanWait }

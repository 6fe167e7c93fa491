//go:build !linux

package netio

import (
	"net"

	"github.com/fulcrum-proxy/fulcrum/proxy/queue"
)

// PeerCloseWait: without POLLRDHUP a queued client with unread bytes is not
// watched; it waits until served or timeout queue.
func PeerCloseWait(net.Conn) (queue.Waker, queue.WaitFunc) { return nil, queue.ChanWait }

//go:build !linux

package conf

// DefaultNetIO is tune_netio's default: Go's poller where fulcrum's epoll
// layer does not exist (not Linux).
const DefaultNetIO = "go"

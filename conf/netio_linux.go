package conf

// DefaultNetIO is tune_netio's default: on Linux, fulcrum's epoll layer
// (proxy/netio/epoll).
const DefaultNetIO = "epoll"

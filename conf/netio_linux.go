package conf

// DefaultNetIO is tune_netio's default: on Linux, fulcrum's epoll layer
// (proxy/netio/epoll) with mode tcp sessions relayed on io_uring
// (proxy/netio/uring) where the kernel allows it, on the epoll layer
// where it does not.
const DefaultNetIO = "uring"

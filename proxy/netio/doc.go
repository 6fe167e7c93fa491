// Package netio moves bytes between connections for the proxy's engines:
// pooled buffered readers and writers, inactivity deadlines that re-arm
// cheaply, the relay that copies small messages through a buffer and bulk
// flows with splice(2), and the watch on a queued client that must not be
// read. It knows nothing of HTTP, frontends or servers; proxy (the core)
// and proxy/http1 (the HTTP/1 engine) both use it.
package netio

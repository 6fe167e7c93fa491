// Package lb holds fulcrum's balance algorithms, one file each, behind the
// small Algorithm interface.
//
// An algorithm sees servers only through *Server, the view it needs: an
// index, the effective weight and the current load. The backend (package
// proxy) decides which servers are usable and hands the algorithm that set
// whenever it changes (Rebuild); the algorithm never decides usability and
// never sees the HTTP path. All calls into an Algorithm are made by the
// backend; Rebuild and the optional hooks are called with the backend's lock
// held, Pick may be called concurrently and synchronises itself.
//
// The list of algorithm names is written once, in registry.go: configuration
// validation, `fulcrum check` and the docs all read it.
package lb

// Package resolve resolves the host names of servers at runtime through the
// name servers of [[resolvers]] sections, as HAProxy's resolvers
// (configuration.txt section 5.3; src/resolvers.c), and applies the answers
// to the servers: their addresses, maintenance by resolution ("MAINT
// (resolution)") and, for the slots of a server_template filled from SRV
// records, their port and weight.
//
// Main types:
//   - Manager runs the resolutions of one proxy: New builds them from the
//     configuration, Init gives servers their address at start (init_addr),
//     Start runs them, Stop ends them, Inherit carries the state of the
//     manager a reload replaces.
//   - a section is one [[resolvers]]: its name servers (one UDP socket
//     each, read by one goroutine that hands answers to the waiting query
//     by id) and its resolutions.
//   - a resolution is one name and query type (A/AAAA, or SRV), shared by
//     every server that resolves that name; one goroutine queries it every
//     timeout_resolve and applies the outcome.
//   - a server is the resolution state of one proxy server: the record it
//     holds, its address, port, weight and maintenance; a template is a
//     server_template's slots.
//
// Invariants:
//   - Nothing here runs on the request path. The pick never waits for a
//     lock of this package and allocates nothing for it: answers reach the
//     servers through proxy.Backend.ApplyDNS, a state change like any
//     other, and a slow or dead name server only delays the next answer
//     (servers keep their address for the hold periods).
//   - A section's mu guards every resolution, server and template state
//     of the section, and is held while an outcome is applied (so answers
//     apply in order); lock order: section.mu, then the backend's lock.
//     idMu guards only the query ids in flight.
//   - Answers are untrusted: every message goes through miekg/dns's
//     parser, and the record to server mapping (records.go, slots.go)
//     bounds what it keeps (maxRecords) and never panics on input.
package resolve

// Package check decides whether servers are alive, the way HAProxy does:
// active health checks (tcp, http), agent checks, the rise/fall counter and
// passive observation of live traffic (observe, error_limit, on_error).
//
// Main types:
//
//   - Probe is one check type (tcpProbe, httpProbe, agentProbe: one file
//     each); it runs one probe and returns a Result whose Status is a row
//     of the statuses table (L4OK, L4CON, L7STS, ...).
//   - Server is one proxy.Server's check state: the health counter, the
//     agent verdict, the last results and the counters stats print. It is
//     the only code that changes a server's operational state, through the
//     small Backend interface, and it logs every transition.
//   - Checker runs the probes of every server of a proxy on their own
//     schedule (inter, fastinter, downinter, with jitter) on a Clock that
//     tests replace.
//
// Invariants (HAProxy's src/check.c): the health counter stays in
// [0, rise+fall-1]; the server is up by health checks when health >= rise;
// a passing check raises it by one and jumps to the maximum once it reaches
// rise; a failing check lowers it by one and drops it to 0 once it falls
// below rise. An agent that cannot be reached never changes a server.
//
// Lock order: Server.mu, then the backend's lock (through Backend). Nothing
// calls into a Server while holding a backend lock.
package check

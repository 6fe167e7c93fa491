// Package peers shares stick tables between fulcrum instances, and with
// HAProxy 2.6, over HAProxy's peers protocol (version 2.1: doc/peers.txt,
// doc/peers-v2.0.txt and src/peers.c of HAProxy, read as a protocol
// reference).
//
// The main types:
//
//   - Mesh runs one [[peers]] section: it listens at the local member's
//     address, keeps one session with each other member (whichever side
//     connected; a second connection replaces the first, as in HAProxy),
//     reconnects with a jittered backoff, and runs the resync of a process
//     that starts (it asks a connected member for a lesson: everything
//     that member knows). Status is its state for `show peers` and the
//     stats.
//   - table (table.go) is a shared stick table and the log of its local
//     changes: stick.Table queues every entry changed locally, lock-free
//     (stick/share.go); the mesh's sync loop drains the queue every 1 to
//     16 ms, giving each entry the next update id, and wakes the sessions.
//   - session (session.go) is one connection: a reader that decodes the
//     peer's messages and stores its updates (stick.Table.Learn, never
//     queued back), and a writer that sends acknowledgements, the log
//     after the last id the peer acknowledged, lessons, heartbeats.
//   - The wire format is in varint.go, wire.go, handshake.go, define.go
//     and update.go.
//
// Invariants:
//
//   - The request path never waits on replication: a change costs the
//     stick table an atomic load, or two compare-and-swaps the first time
//     an entry changes between two drains. Encoding, sending and receiving
//     happen on the mesh's goroutines.
//   - Every live entry changed locally is in its table's log once, at its
//     latest change, so a session resumed from the id its peer
//     acknowledged sends exactly what the peer missed; an entry changed
//     many times between two drains is sent once, with its latest data.
//   - A message from a peer is decoded whole before anything of it is
//     stored; one that does not decode closes the session with a protocol
//     error message and a log line, and leaves the tables as they were.
//   - conn_cur is never learned (HAProxy's is_local).
//   - Aggregate tables (fulcrum's own, stick.Config.Origins): with a peer
//     that said it is fulcrum in the handshake, each instance sends its
//     own counts and stores the others' in their slots, so that counters
//     and rates add up across the cluster; HAProxy peers get the sums and
//     their counts are ignored.
package peers

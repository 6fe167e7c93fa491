// Package agent is the library behind fulcrum-agent: a load-feedback agent
// that answers the agent-check protocol of HAProxy and fulcrum with one line
// computed from the load of the machine it runs on.
//
// The pieces, one file each:
//
//   - Config (config.go): the TOML file, its defaults and validation.
//   - Reading and Source (source.go): what the machine's load is right now.
//     SystemSource (system.go) samples it in the background through gopsutil;
//     ManualSource is set by hand (tests, --once experiments).
//   - Decide (reply.go): the pure function from a Reading, the configured
//     signals and the operator's Override to the reply line, e.g.
//     "up ready 73%" or "up drain #cpu 97% over threshold 90%".
//   - Override and Control (override.go): the state forced by
//     `fulcrum-agent set drain|maint|ready|auto`, kept in a local file.
//   - Server (server.go): the TCP listener. One line per connection, then
//     close; the allow-list of source networks is checked before anything is
//     read; nothing the balancer sends is ever interpreted.
//
// Invariant: answering a connection never blocks on the machine. The reply
// is computed from the last background sample and one small file read.
package agent

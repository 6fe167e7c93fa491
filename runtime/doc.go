// Package runtime is fulcrum's Runtime API: HAProxy's command language on
// Unix (and loopback TCP) sockets, reading and changing the live proxy
// through package proxy's API, as `socat`, hatop, the Prometheus haproxy
// exporter and fulcrumctl expect it.
//
// The main types:
//   - API serves the configured sockets (api.go): creation with mode and
//     ownership, stale-file replacement, removal at Close;
//   - session is one client connection (session.go): it reads lines, splits
//     them into commands (parse.go), checks each command's level, runs it
//     and frames the reply: the empty line, `prompt` mode, `quit`;
//   - Command is one row of the command table; the table is the only list
//     of commands (commands.go lists the per-file tables), and help and
//     the unknown-command reply are generated from it (help.go). A row's
//     Level is the least level that may run it; LevelOf raises it for the
//     subcommands that need more (`set server`);
//   - the API yields to the data path (budget.go): each socket serves at
//     most Socket.MaxConn sessions at once, and commands draw on a CPU
//     budget that paces a flood of clients.
//
// Invariants: replies keep HAProxy 2.6's exact texts, including the few
// that lack their own line feed; handlers never check the level (the
// dispatcher does, before Run) and never write the empty line that ends a
// reply; every change is logged at info level with the command, the
// socket and the previous value.
package runtime

package runtime

// commandTable is the one list of Runtime API commands: the dispatcher
// finds commands in it and help is generated from it. Each file that holds
// handlers holds their table; adding a command is one row there.
//
// A command arrives with the state it touches: queues and stick tables add
// their rows (show table, show queue, ...) when they exist in the proxy.
var commandTable *cmdTable

// reloadCommands (reload.go) are added by New to the table of an API whose
// Options.Reload is set: a process that cannot reload does not list them,
// and the help transcripts stay HAProxy's.
func init() {
	commandTable = newTable(
		cliCommands,        // cli.go: help, prompt, quit, levels, timeouts
		serverCommands,     // server.go: weights, server states and addresses
		checkCommands,      // check.go: health and agent checks
		aclCommands,        // acl.go: ACL pattern sets
		proxyCommands,      // proxy.go: backends, frontends, maxconn
		statCommands,       // stat.go: show info, show stat
		processCommands,    // process.go: env, errors, activity
		sessionCommands,    // sess.go: sessions
		tableCommands,      // table.go: stick tables
		queueCommands,      // queue.go: show queue
		sslCommands,        // ssl.go: certificates and crt-lists
		peersCommands,      // peers.go: show peers
		histogramCommands,  // histogram.go: show histogram
		dynServerCommands,  // dynserver.go: add server, del server, wait
		configDiffCommands, // configdiff.go: show config-diff
		resolversCommands,  // resolvers.go: show resolvers
	)
}

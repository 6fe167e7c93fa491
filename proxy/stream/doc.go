// Package stream is what the proxy's engines (HTTP/1, HTTP/2, TCP) and its
// core (proxy: rules, balancing, queues, stick tables, counters, logs)
// share about one stream, a request or a TCP session: how it can end
// (Outcome, and the one table that says for each way what the client is
// answered, which termination flags are logged and which counters move),
// the request view an engine hands the core, and the interfaces through
// which an engine drives the core's phases. It holds no state.
package stream

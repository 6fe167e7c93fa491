// Package runtime is fulcrum's Runtime API: HAProxy's command language on a
// Unix socket (command table, parser, prompt mode, levels), reading and
// changing the live proxy through package proxy's API.
//
// The command table arrives with the Runtime API capability; today the
// package holds only this description.
package runtime

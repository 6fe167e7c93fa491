// Package haproxycfg converts an HAProxy configuration (haproxy.cfg) into
// fulcrum's TOML: `fulcrum import` and `fulcrum check` of an haproxy.cfg.
//
// The conversion goes line by line, as HAProxy reads the file:
//
//   - lex.go splits each line into words with HAProxy's quoting and
//     escaping, keeping each word's place in the line (rules are passed on
//     as written, for fulcrum's own rule parser) and its trailing comment;
//   - parse.go groups the lines into sections (global, defaults, frontend,
//     backend, listen, peers...) and attaches comment lines to the line
//     they precede;
//   - keywords.go is the keyword table: one row per HAProxy keyword (and
//     one per bind, server, stick-table and cookie option) saying where it
//     may appear and how it converts, or why it is not converted: "not
//     supported yet" (a feature being built), "not supported", "built in"
//     (fulcrum does it without a setting) or "ignored". Supporting a
//     keyword later is a change of its row;
//   - convert.go resolves HAProxy's defaults (named defaults, `from`,
//     default-server, per-server check settings), splits listen sections
//     into a frontend and a backend, and fills TOML tables (toml.go), each
//     value remembering the line it came from;
//   - import.go writes the TOML, checks it with conf.Parse, and turns
//     every problem fulcrum's check finds back into the line that caused
//     it: that line is commented out with the reason and the conversion
//     runs again, until the output passes. So the output always passes
//     `fulcrum check`, and nothing is dropped silently: every line that is
//     not converted is in Result.Notes with its line number and why, and in
//     the output as a comment.
//
// Invariants: Import never panics on any input; the TOML returned parses
// with conf.Parse; comments of the input are kept next to what their line
// became.
package haproxycfg

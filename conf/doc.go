// Package conf reads fulcrum's TOML configuration and turns it into a
// checked, fully defaulted model (Config) that the proxy builds itself from.
//
// The schema is DESIGN.md's: keys are HAProxy's keywords in snake_case, and
// each TOML table has one struct here (globalSection, defaultsSection,
// frontendSection, backendSection, serverSection, checkSection...) whose
// field comments are the operator's reference: meaning, unit, default,
// allowed values. Durations are strings with a unit (Duration); a bare
// number is an error.
//
// Loading a file (Load, Parse) goes: TOML parsing by BurntSushi/toml into a
// generic tree; the line of every key (positions.go, because the toml
// package exposes no key positions); decoding into the section structs by
// their toml tags, where unknown keys and wrong types are problems
// (decode.go); one validate method per section; one setDefaults method per
// section, the only place defaults are written, with frontends and backends
// inheriting from [defaults] and servers from [backend.default_server];
// checks between sections (default_backend, use_backend, modes); and last,
// the keys that the proxy does not implement yet, listed in support.go,
// which are accepted by the schema but reported as "not supported yet".
//
// Invariants: every problem of a file is reported, not only the first, each
// as an Error `FILE:LINE: message` where the message names the key path,
// the problem and the value, e.g.
//
//	fulcrum.toml:41: backend "web": server "s2": weight: must be 0..256, got 300
//
// A value that has one problem gets no second one. A Config returned without
// error has every inheritance applied and every value in range.
package conf

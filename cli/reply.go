package cli

import (
	"regexp"
	"strings"
)

// errorPrefixes are the beginnings of the Runtime API's error replies
// (HAProxy doc/management.txt §9.3 and the messages fulcrum copies from
// it). A reply is an error when its first line starts with one of them;
// data dumps never do. This is a list of messages, not of commands: the
// commands themselves are only known to the server (`help`).
var errorPrefixes = []string{
	"Unknown command",
	"Permission denied",
	"No such ",
	"Require ",
	"Require:",
	"Required arguments",
	"Can't find ",
	"Can't ",
	"Invalid ",
	"invalid ",
	"Integer value expected",
	"Value out of range",
	"Empty weight string",
	"Trailing garbage",
	"maxconn string empty",
	"provided port is",
	"health checks are not enabled",
	"agent checks are not enabled",
	"Health check was not configured",
	"Agent was not configured",
	"cannot change",
	"Key not found",
	"entry not found",
	"Unknown ACL identifier",
	"Unknown map identifier",
	"Session not found",
	"Variable not found",
	"Filter entry #",
	"content-based lookup is only supported",
	"one of 'none', 'number', 'string'",
	"'set timeout' only supports",
	"'set server <srv> ",
	"set server <b>/<s> ",
	"All sockets are already",
	"Missing ",
	"Failed to ",
	"Unable to ",
	// The certificate commands' (ssl_ckch.c, ssl_crtlist.c).
	"No ongoing transaction",
	"The ongoing transaction is about",
	"The transaction must contain",
	"inconsistencies between private key",
	"unable to load certificate",
	"didn't find the specified filename",
	"'set ssl cert expects",
	"'commit ssl cert expects",
	"'abort ssl cert' expects",
	"'new ssl cert' expects",
	"'del ssl cert' expects",
	"'show ssl crt-list -n' expects",
	"'add ssl crtlist' expects",
	"'del ssl crtlist' expects",
	"usage: ",                      // a command given without its subcommand
	"no need to change the addr, ", // set server addr with a bad port
	"Success=0",                    // reload refused (HAProxy's master CLI)
	// add server, del server and wait (HAProxy 2.6 and 3.0).
	"Backend must use a dynamic",
	"Already exists a server",
	"weight of server ",
	"unknown keyword ",
	"unexpected character ",
	"character '",
	"error-limit has to be",
	"Only servers in maintenance mode",
	"Server still has connections",
	"This server cannot be removed",
	"Expects a duration",
	"Usage: wait",
	"Wait delay expired.",
	"Failed. ",
	"Interrupted.",
}

// keywordError matches the server-line replies that start with the
// keyword they are about: "'rise' has to be > 0..", "'inter' expects a
// delay as argument..", "'id' : custom id has to be > 0.", "'ssl' option
// is not supported yet.".
var keywordError = regexp.MustCompile(`^'[a-z-]+' (expects |has to be |option is |: )|^server \S+ does not have agent port`)

// IsError reports whether reply is one of the Runtime API's error
// messages. With `set severity-output`, the prefix decides: "[0]:" to
// "[3]:" (emerg to err) and "[emerg]:" ... "[err]:" are errors.
func IsError(reply string) bool {
	first, _, _ := strings.Cut(reply, "\n")
	if strings.HasPrefix(first, "[") {
		sev, rest, ok := strings.Cut(first[1:], "]: ")
		if ok {
			switch sev {
			case "0", "1", "2", "3", "emerg", "alert", "crit", "err":
				return true
			}
			first = rest
		}
	}
	for _, p := range errorPrefixes {
		if strings.HasPrefix(first, p) {
			return true
		}
	}
	return keywordError.MatchString(first)
}

// Format selects how a reply is printed.
type Format int

const (
	FormatAuto Format = iota // tables for the replies it recognises, else as is
	FormatRaw                // the server's reply untouched
	FormatJSON               // machine-readable
	FormatCSV                // tables as CSV (HAProxy's columns, then "instance" on a fleet)
)

// cutFlags removes the client-side options --raw, --json, --csv and --yes
// from the end of a command, so that `show stat --json` and `set server web/s1
// state maint --yes` work in the shell and in one-shot mode alike. f is
// the format asked for on the command line; an option on the command wins.
func cutFlags(cmd string, f Format) (string, Format, bool) {
	words := strings.Fields(cmd)
	yes := false
	for len(words) > 0 {
		switch words[len(words)-1] {
		case "--raw":
			f = FormatRaw
		case "--json":
			f = FormatJSON
		case "--csv":
			f = FormatCSV
		case "--yes", "-y":
			yes = true
		default:
			return strings.Join(words, " "), f, yes
		}
		words = words[:len(words)-1]
	}
	return "", f, yes
}

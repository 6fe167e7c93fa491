package check

import (
	"strconv"
	"strings"
)

// The agent's reply grammar (agent-check.md section 3, HAProxy
// src/tcpcheck.c tcpcheck_agent_expect_reply):
//
//	reply   = *sep [ word *( 1*sep word ) ] *sep [ comment ] ( CR | LF )
//	sep     = SP | TAB | ","
//	word    = state | admin | weight | maxconn        ; case-insensitive
//	state   = "up" | "down" | "stopped" | "fail"
//	admin   = "ready" | "drain" | "maint"
//	weight  = 1*DIGIT "%"
//	maxconn = "maxconn:" 1*DIGIT
//	comment = "#" *any                                ; only where a word starts
//
// Words come in any order; when one kind appears twice the last one wins.
// An unknown word is reported but does not stop the others from applying.

// AgentReply is one parsed agent reply.
type AgentReply struct {
	Admin   string // "ready", "drain", "maint" (lower case), "" = none
	State   string // "up", "down", "stopped", "fail" as written ("UP"), "" = none
	Weight  string // the weight word, "75%", "" = none
	MaxConn string // the digits after "maxconn:", "" = none
	Comment string // the text after '#', trimmed, "" = none
	Unknown string // the first unknown word, "" = none

	// Incomplete is true when the reply had no CR or LF: it is ignored
	// entirely, as HAProxy does.
	Incomplete bool
}

// ParseAgentReply parses the bytes an agent sent, up to the first CR or LF.
func ParseAgentReply(data []byte) AgentReply {
	end := strings.IndexAny(string(data), "\r\n")
	if end < 0 {
		return AgentReply{Incomplete: true}
	}
	var r AgentReply
	line := string(data[:end])
	for len(line) > 0 {
		line = strings.TrimLeft(line, " \t,")
		if line == "" {
			break
		}
		if line[0] == '#' {
			r.Comment = strings.Trim(line[1:], " \t")
			break
		}
		n := strings.IndexAny(line, " \t,")
		if n < 0 {
			n = len(line)
		}
		word := line[:n]
		line = line[n:]
		lower := strings.ToLower(word)
		switch {
		case lower == "ready" || lower == "drain" || lower == "maint":
			r.Admin = lower
		case lower == "up" || lower == "down" || lower == "stopped" || lower == "fail":
			r.State = word
		case word[0] >= '0' && word[0] <= '9' && strings.Contains(word, "%"):
			r.Weight = word
		case strings.HasPrefix(lower, "maxconn:"):
			r.MaxConn = word[len("maxconn:"):]
		default:
			if r.Unknown == "" {
				r.Unknown = word
			}
		}
	}
	return r
}

// agentWeight returns the user weight that a weight word sets for a server
// of initial weight iw: iw * N / 100, at most 256. The message is
// HAProxy's warning when the word does not parse (server.c
// server_parse_weight_change_request).
func agentWeight(word string, iw int) (int, string) {
	digits := strings.TrimSuffix(word, "%")
	if digits == word || digits == "" {
		return 0, "Trailing garbage in weight string"
	}
	n, err := strconv.Atoi(digits)
	if err != nil {
		return 0, "Trailing garbage in weight string"
	}
	// Past 25600% every initial weight from 1 gives the cap: clamping
	// first keeps iw * n from overflowing.
	w := iw * min(n, 25600) / 100
	return min(w, 256), ""
}

// agentMaxConn parses the digits of maxconn:N (server.c
// server_parse_maxconn_change_request).
func agentMaxConn(digits string) (int, string) {
	if digits == "" {
		return 0, "maxconn string empty"
	}
	n, err := strconv.Atoi(digits)
	if err != nil || n < 0 {
		return 0, "Trailing garbage in maxconn string"
	}
	return n, ""
}

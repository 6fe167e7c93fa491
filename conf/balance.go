package conf

// The balance expression: HAProxy's "balance <algorithm> [<arguments>]".
//
// This table knows every HAProxy 2.6 algorithm by name so that a backend can
// name any of them: the ones fulcrum does not run yet are "not supported
// yet" (see support.go), a name HAProxy does not know is an error. When
// proxy/lb's registry exists and conf can read it without an import cycle,
// the names should come from there (STYLE.md §2: one list of names).

import (
	"slices"
	"strconv"
	"strings"
)

// balanceAlgorithm is one HAProxy algorithm and the check of its arguments.
type balanceAlgorithm struct {
	name string
	// paren is "" when the algorithm takes no "(ARG)", "optional" or
	// "required".
	paren string
	// args checks the words after the name; nil means none are allowed.
	// It returns a problem, or "".
	args func(words []string) string
}

// balanceAlgorithms lists HAProxy's algorithms (configuration.txt, "balance").
var balanceAlgorithms = []balanceAlgorithm{
	{name: "roundrobin"},
	{name: "static-rr"},
	{name: "leastconn"},
	{name: "first"},
	{name: "source"},
	{name: "uri", args: uriArgs},
	{name: "url_param", args: urlParamArgs},
	{name: "hdr", paren: "required", args: optionalWord("use_domain_only")},
	{name: "random", paren: "optional"},
	{name: "rdp-cookie", paren: "optional"},
	{name: "hash", args: hashArgs},
}

// balanceNames returns the algorithm names, sorted, for messages.
func balanceNames() []string {
	names := make([]string, len(balanceAlgorithms))
	for i, a := range balanceAlgorithms {
		names[i] = a.name
	}
	slices.Sort(names)
	return names
}

// parseBalance splits a balance expression into its algorithm name, its
// "(ARG)" if any, and the words after. ok is false when the parentheses do
// not close.
func parseBalance(expr string) (name, paren string, hasParen bool, words []string, ok bool) {
	fields := strings.Fields(expr)
	if len(fields) == 0 {
		return "", "", false, nil, true
	}
	name, words = fields[0], fields[1:]
	if open := strings.IndexByte(name, '('); open >= 0 {
		if !strings.HasSuffix(name, ")") {
			return name[:open], "", true, words, false
		}
		name, paren, hasParen = name[:open], name[open+1:len(name)-1], true
	}
	return name, paren, hasParen, words, true
}

// balanceName returns the algorithm name of a balance expression.
func balanceName(expr string) string {
	name, _, _, _, _ := parseBalance(expr)
	return name
}

// findBalance returns the algorithm called name, or nil.
func findBalance(name string) *balanceAlgorithm {
	for i := range balanceAlgorithms {
		if balanceAlgorithms[i].name == name {
			return &balanceAlgorithms[i]
		}
	}
	return nil
}

// checkBalance checks a balance expression: a known algorithm with the
// arguments it takes. An unknown name gets the sorted list of valid ones.
func checkBalance(s scope, v *string) {
	if v == nil {
		return
	}
	name, paren, hasParen, words, ok := parseBalance(*v)
	if name == "" {
		s.errorf("needs an algorithm, one of %s", quoteList(balanceNames()))
		return
	}
	alg := findBalance(name)
	if alg == nil {
		s.errorf("unknown algorithm %q, must be one of %s", name, quoteList(balanceNames()))
		return
	}
	problem := ""
	switch {
	case !ok:
		problem = "unclosed parenthesis"
	case hasParen && alg.paren == "":
		problem = name + " takes no (argument)"
	case !hasParen && alg.paren == "required":
		problem = name + " needs an argument: " + name + "(NAME)"
	case hasParen && paren == "":
		problem = "empty (argument)"
	case hasParen && name == "random" && !positiveInt(paren):
		problem = "random(N) needs a number N of at least 1"
	case alg.args == nil && len(words) > 0:
		problem = name + " takes no arguments"
	case alg.args != nil:
		problem = alg.args(words)
	}
	if problem != "" {
		s.errorf("%s, got %q", problem, *v)
	}
}

// uriArgs checks "uri [len N] [depth N] [whole] [path-only]".
func uriArgs(words []string) string {
	for i := 0; i < len(words); i++ {
		switch words[i] {
		case "whole", "path-only":
		case "len", "depth":
			if i+1 >= len(words) || !positiveInt(words[i+1]) {
				return "uri " + words[i] + " needs a number of at least 1"
			}
			i++
		default:
			return "uri takes len N, depth N, whole and path-only, not " + strconv.Quote(words[i])
		}
	}
	return ""
}

// urlParamArgs checks "url_param NAME [check_post]".
func urlParamArgs(words []string) string {
	if len(words) == 0 {
		return "url_param needs a parameter name"
	}
	if len(words) > 2 || len(words) == 2 && words[1] != "check_post" {
		return "url_param takes a name and optionally check_post"
	}
	return ""
}

// hashArgs checks "hash EXPR": the sample expression is checked once sample
// fetches exist (proxy/acl); here it must only be present.
func hashArgs(words []string) string {
	if len(words) == 0 {
		return "hash needs a sample expression, e.g. \"hash req.cook(SRV)\""
	}
	return ""
}

// optionalWord returns an args check allowing only word, once.
func optionalWord(word string) func([]string) string {
	return func(words []string) string {
		if len(words) > 1 || len(words) == 1 && words[0] != word {
			return "only " + strconv.Quote(word) + " may follow"
		}
		return ""
	}
}

// positiveInt reports whether s is an integer of at least 1.
func positiveInt(s string) bool {
	n, err := strconv.Atoi(s)
	return err == nil && n >= 1
}

package check

// Check statuses: the codes HAProxy prints in check_status and
// agent_status, with their result and description (HAProxy src/check.c
// check_statuses[]). Logs, stats and the Runtime API use them as they are.

// Status is the outcome of one check, one row of the statuses table. Its
// numeric value is HAProxy's HCHK_STATUS_* number, as `show servers state`
// prints it.
type Status int

// The statuses, in HAProxy's order (include/haproxy/check-t.h).
const (
	StatusUNK      Status = iota // nothing known yet
	StatusINI                    // check configured, first result pending
	statusStart                  // a probe started (HAProxy internal)
	StatusCHECKED                // agent answered without an up/down word
	StatusHANA                   // observe saw error_limit errors in a row
	StatusSOCKERR                // local socket error
	StatusL4OK                   // TCP connect passed
	StatusL4TOUT                 // TCP connect timed out
	StatusL4CON                  // TCP connect failed (refused, unreachable)
	StatusL6OK                   // SSL handshake passed
	StatusL6TOUT                 // SSL handshake timed out
	StatusL6RSP                  // SSL protocol error
	StatusL7TOUT                 // no L7 response in time
	StatusL7RSP                  // unparsable L7 response
	statusL57Data                // boundary: statuses from here on carry L5-7 data
	StatusL7OK                   // L7 check passed (agent: reported up)
	StatusL7OKC                  // L7 check conditionally passed
	StatusL7STS                  // wrong L7 status (agent: down, stopped, fail)
	StatusPROCERR                // external check error
	StatusPROCTOUT               // external check timed out
	StatusPROCOK                 // external check passed
)

// Verdict is what a status means for the health counter (HAProxy's
// CHK_RES_*); its value is what `show servers state` prints as
// srv_check_result.
type Verdict int

// Verdicts.
const (
	VerdictUnknown  Verdict = iota // no result yet: the counter does not move
	VerdictNeutral                 // valid answer without a verdict: nothing changes
	VerdictFailed                  // counts as a failed check
	VerdictPassed                  // counts as a passing check
	VerdictCondPass                // passing, but the server asks to stop (NOLB)
)

// statusInfo is one row of the statuses table.
type statusInfo struct {
	code    string // check_status / agent_status
	verdict Verdict
	desc    string // check_desc / agent_desc
}

// statuses is the table: code, result, description (stats-csv.md
// section 4).
var statuses = [...]statusInfo{
	StatusUNK:      {"UNK", VerdictUnknown, "Unknown"},
	StatusINI:      {"INI", VerdictUnknown, "Initializing"},
	statusStart:    {"", VerdictUnknown, ""},
	StatusCHECKED:  {"CHECKED", VerdictNeutral, "No status change"},
	StatusHANA:     {"HANA", VerdictFailed, "Health analyze"},
	StatusSOCKERR:  {"SOCKERR", VerdictFailed, "Socket error"},
	StatusL4OK:     {"L4OK", VerdictPassed, "Layer4 check passed"},
	StatusL4TOUT:   {"L4TOUT", VerdictFailed, "Layer4 timeout"},
	StatusL4CON:    {"L4CON", VerdictFailed, "Layer4 connection problem"},
	StatusL6OK:     {"L6OK", VerdictPassed, "Layer6 check passed"},
	StatusL6TOUT:   {"L6TOUT", VerdictFailed, "Layer6 timeout"},
	StatusL6RSP:    {"L6RSP", VerdictFailed, "Layer6 invalid response"},
	StatusL7TOUT:   {"L7TOUT", VerdictFailed, "Layer7 timeout"},
	StatusL7RSP:    {"L7RSP", VerdictFailed, "Layer7 invalid response"},
	statusL57Data:  {"", VerdictUnknown, ""},
	StatusL7OK:     {"L7OK", VerdictPassed, "Layer7 check passed"},
	StatusL7OKC:    {"L7OKC", VerdictCondPass, "Layer7 check conditionally passed"},
	StatusL7STS:    {"L7STS", VerdictFailed, "Layer7 wrong status"},
	StatusPROCERR:  {"PROCERR", VerdictFailed, "External check error"},
	StatusPROCTOUT: {"PROCTOUT", VerdictFailed, "External check timeout"},
	StatusPROCOK:   {"PROCOK", VerdictPassed, "External check passed"},
}

// String returns the status code as check_status prints it ("L4OK").
func (s Status) String() string { return s.info().code }

// Desc returns the status description as check_desc prints it
// ("Layer4 check passed").
func (s Status) Desc() string { return s.info().desc }

// Verdict returns what the status means for the health counter.
func (s Status) Verdict() Verdict { return s.info().verdict }

// hasL7Data reports whether the status carries an upper-layer verdict: only
// those move the agent's counter (an agent that cannot be reached never
// changes the server) and print a code in the transition log.
func (s Status) hasL7Data() bool { return s >= statusL57Data }

func (s Status) info() statusInfo {
	if s < 0 || int(s) >= len(statuses) {
		return statuses[StatusUNK]
	}
	return statuses[s]
}

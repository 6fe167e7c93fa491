package runtime

import "fmt"

// Level is what a Runtime API session may do, as HAProxy's ACCESS_LVL_*:
// each level may run the commands of the levels below it.
//
// One departure from HAProxy 2.6, which the Runtime API issue asks for:
// operator may also change weights and server states (set weight, set
// server <b>/<s> weight|state|health|agent, enable|disable server), which
// 2.6 keeps for admin; and ACL edits need operator (2.6 does not check
// their level at all).
type Level int

// Levels, lowest first. The zero Level is invalid.
const (
	LevelUser     Level = iota + 1 // read non-sensitive state: show info, show stat, get weight
	LevelOperator                  // also weights, server states, ACL edits, show sess, show env, show errors
	LevelAdmin                     // everything: addresses, maxconn, checks, shutdowns, reload
)

// String returns the level's name as `show cli level` prints it.
func (l Level) String() string {
	switch l {
	case LevelUser:
		return "user"
	case LevelOperator:
		return "operator"
	case LevelAdmin:
		return "admin"
	}
	return fmt.Sprintf("Level(%d)", int(l))
}

// ParseLevel returns the level named s: "user", "operator" or "admin".
func ParseLevel(s string) (Level, error) {
	switch s {
	case "user":
		return LevelUser, nil
	case "operator":
		return LevelOperator, nil
	case "admin":
		return LevelAdmin, nil
	}
	return 0, fmt.Errorf("unknown level %q, expected user, operator or admin", s)
}

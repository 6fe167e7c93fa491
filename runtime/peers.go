package runtime

import (
	"fmt"
	"time"

	"github.com/fulcrum-proxy/fulcrum/proxy/peers"
)

// Peers commands: `show peers`, in HAProxy 2.6's format (src/peers.c
// cli_parse_show_peers, peers_dump_head and peers_dump_peer), from the
// state of the daemon's [[peers]] sections (Options.Peers).
//
// Pointers are fulcrum's objects' addresses, as HAProxy prints its own.
// fulcrum adds one field, at the end of each shared table's cursor line:
// lag=<ms>, how long ago the oldest local change of the table that the
// peer has not acknowledged was made (0 when it has them all).
var peersCommands = []Command{
	{Words: []string{"show", "peers"}, Level: LevelUser, Usage: "show peers [dict|-] [section]", Help: "dump some information about all the peers or this peers section", Run: showPeers},
}

// showPeers dumps every section, or the one named.
func showPeers(c *Context, args []string) error {
	dict := false
	switch arg(args, 0) {
	case "dict":
		dict = true
		args = args[1:]
	case "-": // allows a section called "dict"
		args = args[1:]
	}
	var all []peers.Status
	if c.api.opts.Peers != nil {
		all = c.api.opts.Peers()
	}
	if name := arg(args, 0); name != "" {
		var one []peers.Status
		for _, st := range all {
			if st.Name == name {
				one = append(one, st)
				break
			}
		}
		if len(one) == 0 {
			return reply("No such peers")
		}
		all = one
	}
	var b []byte
	for i, st := range all {
		if i > 0 {
			b = append(b, '\n')
		}
		b = appendPeersHead(b, &st)
		for j := range st.Peers {
			b = appendPeer(b, &st.Peers[j], st.Now, dict)
		}
	}
	_, err := c.Write(b)
	return err
}

// appendPeersHead appends a section's line.
func appendPeersHead(b []byte, st *peers.Status) []byte {
	lc := st.LastChange.Local()
	return fmt.Appendf(b, "%#x: [%02d/%s/%04d:%02d:%02d:%02d] id=%s disabled=0 flags=%#x resync_timeout=%s task_calls=%d\n",
		st.Ptr, lc.Day(), lc.Month().String()[:3], lc.Year(), lc.Hour(), lc.Minute(), lc.Second(),
		st.Name, st.Flags, timer(st.ResyncTimeout, st.Now), uint32(st.TaskCalls))
}

// appendPeer appends a peer's lines.
func appendPeer(b []byte, ps *peers.PeerStatus, now time.Time, dict bool) []byte {
	role, active := "remote", "inactive"
	if ps.Local {
		role = "local"
	}
	if ps.Active {
		active = "active"
	}
	hdshk := "<NEVER>"
	if !ps.LastHdshk.IsZero() {
		hdshk = humanTime(now.Sub(ps.LastHdshk))
	}
	b = fmt.Appendf(b, "  %#x: id=%s(%s,%s) addr=%s last_status=%s last_hdshk=%s\n",
		ps.Ptr, ps.Name, role, active, ps.Addr, ps.Status, hdshk)
	b = fmt.Appendf(b, "        reconnect=%s heartbeat=%s confirm=%d tx_hbt=%d rx_hbt=%d no_hbt=%d new_conn=%d proto_err=%d coll=%d\n",
		timer(ps.Reconnect, now), timer(ps.Heartbeat, now), ps.Confirm, ps.TxHbt, ps.RxHbt, ps.NoHbt, ps.NewConn, ps.ProtoErr, ps.Coll)
	b = fmt.Appendf(b, "        flags=%#x", ps.Flags)
	if s := ps.Session; s != nil {
		b = fmt.Appendf(b, " appctx:%#x st0=%d st1=0 task_calls=%d state=%s", s.Ptr, s.St0, uint32(s.TaskCalls), s.State)
		if s.Incoming {
			b = fmt.Appendf(b, "\n        xprt=RAW src=%s addr=%s", s.Src, s.Dst)
		}
	}
	if t := ps.RemoteTable; t != nil {
		b = fmt.Appendf(b, "\n        remote_table:%#x id=%s local_id=%d remote_id=%d", t.Ptr, t.Name, t.LocalID, t.RemoteID)
	}
	if t := ps.LastLocalTable; t != nil {
		b = fmt.Appendf(b, "\n        last_local_table:%#x id=%s local_id=%d remote_id=%d", t.Ptr, t.Name, t.LocalID, t.RemoteID)
	}
	if len(ps.Tables) > 0 {
		b = append(b, "\n        shared tables:"...)
		for i := range ps.Tables {
			t := &ps.Tables[i]
			b = fmt.Appendf(b, "\n          %#x local_id=%d remote_id=%d flags=%#x remote_data=%#x",
				t.Ptr, t.LocalID, t.RemoteID, t.Flags, t.RemoteData)
			b = fmt.Appendf(b, "\n              last_acked=%d last_pushed=%d last_get=%d teaching_origin=%d update=%d lag=%d",
				t.LastAcked, t.LastPushed, t.LastGet, t.TeachingOrigin, t.Update, t.Lag.Milliseconds())
			b = fmt.Appendf(b, "\n              table:%#x id=%s update=%d localupdate=%d commitupdate=%d refcnt=1",
				t.TablePtr, t.Name, t.TableUpdate, t.LocalUpdate, t.CommitUpdate)
			if dict {
				b = appendDict(b, "TX", ps.DictTX[:], true)
				b = appendDict(b, "RX", ps.DictRX[:], false)
			} else {
				b = append(b, "\n        Dictionary cache not dumped (use \"show peers dict\")"...)
			}
		}
	}
	return append(b, '\n')
}

// appendDict appends a dictionary cache as HAProxy's show peers dict: four
// entries a line; the TX cache up to its first unused entry, the RX cache
// whole with "-" for unused ones.
func appendDict(b []byte, name string, values []string, tx bool) []byte {
	b = fmt.Appendf(b, "\n        %s dictionary cache:", name)
	count := 0
	for i, v := range values {
		if v == "" {
			if tx {
				break
			}
			v = "-"
		}
		if count == 0 {
			b = append(b, "\n        "...)
		}
		count++
		b = fmt.Appendf(b, "  %3d -> %s", i, v)
		count &= 3
	}
	return b
}

// timer prints a timer as HAProxy: <NEVER> when unset, <PAST> when
// expired, else the time left.
func timer(t, now time.Time) string {
	switch {
	case t.IsZero():
		return "<NEVER>"
	case !t.After(now):
		return "<PAST>"
	}
	return humanTime(t.Sub(now))
}

// humanTime prints a duration as HAProxy's human_time, in whole seconds:
// at most two units among d, h, m, s, and "0s" for zero ("5s", "1m",
// "1m5s", "2h3m", "1d2h").
func humanTime(d time.Duration) string {
	t := int64(d / time.Second)
	if t < 0 {
		return "?"
	}
	var b []byte
	n := 2
	if t >= 86400 {
		b = fmt.Appendf(b, "%dd", t/86400)
		n--
	}
	if n > 0 && t%86400/3600 != 0 {
		b = fmt.Appendf(b, "%dh", t%86400/3600)
		n--
	}
	if n > 0 && t%3600/60 != 0 {
		b = fmt.Appendf(b, "%dm", t%3600/60)
		n--
	}
	if n > 0 && t%60 != 0 || t == 0 {
		b = fmt.Appendf(b, "%ds", t%60)
	}
	return string(b)
}

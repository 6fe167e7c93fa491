package stats

// The [[peers]] sections in the stats: per-peer Prometheus metrics and the
// page's "peers" tables. HAProxy 2.6's exporter has no peers metrics, so
// these are fulcrum's own, named fulcrum_peer_*.

import (
	"fmt"
	"html/template"
	"strconv"
	"time"

	"github.com/fulcrum-proxy/fulcrum/proxy/peers"
	"github.com/prometheus/client_golang/prometheus"
)

// PeersCollector exports the state of every peer of the [[peers]]
// sections, with the labels section and peer (the local peer is left out:
// it has no session).
type PeersCollector struct {
	status func() []peers.Status
	descs  [len(peerMetrics)]*prometheus.Desc
}

// peerMetrics are the per-peer metrics: name, help, whether a counter, and
// the value.
var peerMetrics = [...]struct {
	name, help string
	counter    bool
	get        func(ps *peers.PeerStatus, now time.Time) (float64, bool)
}{
	{"fulcrum_peer_connected", "1 when the session with the peer is established, else 0.", false,
		func(ps *peers.PeerStatus, _ time.Time) (float64, bool) { return boolf(ps.Connected), true }},
	{"fulcrum_peer_last_heartbeat_seconds", "Seconds since the peer's last message (any message is a sign of life, as in HAProxy); absent before the first.", false,
		func(ps *peers.PeerStatus, now time.Time) (float64, bool) {
			if ps.LastMessage.IsZero() {
				return 0, false
			}
			return max(now.Sub(ps.LastMessage).Seconds(), 0), true
		}},
	{"fulcrum_peer_updates_sent_total", "Stick-table updates sent to the peer, resync lessons included.", true,
		func(ps *peers.PeerStatus, _ time.Time) (float64, bool) { return float64(ps.UpdatesSent), true }},
	{"fulcrum_peer_updates_received_total", "Stick-table updates received from the peer.", true,
		func(ps *peers.PeerStatus, _ time.Time) (float64, bool) { return float64(ps.UpdatesReceived), true }},
	{"fulcrum_peer_bytes_sent_total", "Bytes sent to the peer after the handshakes.", true,
		func(ps *peers.PeerStatus, _ time.Time) (float64, bool) { return float64(ps.BytesSent), true }},
	{"fulcrum_peer_bytes_received_total", "Bytes received from the peer after the handshakes.", true,
		func(ps *peers.PeerStatus, _ time.Time) (float64, bool) { return float64(ps.BytesReceived), true }},
	{"fulcrum_peer_replication_lag_seconds", "Age of the oldest local change the peer has not acknowledged, 0 when none.", false,
		func(ps *peers.PeerStatus, _ time.Time) (float64, bool) { return ps.Lag.Seconds(), true }},
	{"fulcrum_peer_protocol_errors_total", "Sessions with the peer closed for a protocol error.", true,
		func(ps *peers.PeerStatus, _ time.Time) (float64, bool) { return float64(ps.ProtoErr), true }},
	{"fulcrum_peer_connections_total", "Connections tried to the peer.", true,
		func(ps *peers.PeerStatus, _ time.Time) (float64, bool) { return float64(ps.NewConn), true }},
}

// NewPeersCollector returns the collector of status; status may be nil
// (no metrics).
func NewPeersCollector(status func() []peers.Status) *PeersCollector {
	c := &PeersCollector{status: status}
	for i, m := range peerMetrics {
		c.descs[i] = prometheus.NewDesc(m.name, m.help, []string{"section", "peer"}, nil)
	}
	return c
}

// Describe sends every metric's description.
func (c *PeersCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

// Collect sends every remote peer's metrics.
func (c *PeersCollector) Collect(ch chan<- prometheus.Metric) {
	if c.status == nil {
		return
	}
	for _, st := range c.status() {
		for i := range st.Peers {
			ps := &st.Peers[i]
			if ps.Local {
				continue
			}
			for j, m := range peerMetrics {
				v, ok := m.get(ps, st.Now)
				if !ok {
					continue
				}
				vt := prometheus.GaugeValue
				if m.counter {
					vt = prometheus.CounterValue
				}
				ch <- prometheus.MustNewConstMetric(c.descs[j], vt, v, st.Name, ps.Name)
			}
		}
	}
}

// peersHTML renders the page's peers tables: one per section, a row per
// member, in configuration order. Every text is escaped.
func peersHTML(status func() []peers.Status) template.HTML {
	if status == nil {
		return ""
	}
	var b []byte
	for _, st := range status() {
		b = append(b, `<div class="scroll" id="peers-`...)
		b = appendEscaped(b, st.Name)
		b = append(b, `"><table>`+"\n<caption>peers "...)
		b = appendEscaped(b, st.Name)
		resync := "in progress"
		if st.Flags&0x3 == 0x3 {
			resync = "done"
		}
		b = fmt.Appendf(b, " (resync %s)</caption>\n<tr><th class=\"name\">peer</th><th>address</th><th>status</th>"+
			"<th>last handshake</th><th>last message</th><th>sent</th><th>received</th><th>lag</th><th>errors</th><th>reconnects</th></tr>\n", resync)
		for i := len(st.Peers) - 1; i >= 0; i-- {
			ps := &st.Peers[i]
			class, state := "down", ps.Status
			switch {
			case ps.Local:
				class, state = "nocheck", "local"
			case ps.Connected:
				class = "up"
			}
			b = append(b, `<tr class="`...)
			b = append(b, class...)
			b = append(b, `"><td class="name">`...)
			b = appendEscaped(b, ps.Name)
			b = append(b, "</td><td>"...)
			b = appendEscaped(b, ps.Addr)
			b = append(b, "</td><td>"...)
			b = appendEscaped(b, state)
			if ps.Local {
				b = append(b, "</td><td></td><td></td><td></td><td></td><td></td><td></td><td></td></tr>\n"...)
				continue
			}
			b = fmt.Appendf(b, "</td><td>%s</td><td>%s</td><td>%d</td><td>%d</td><td>%s</td><td>%d</td><td>%d</td></tr>\n",
				ago(ps.LastHdshk, st.Now), ago(ps.LastMessage, st.Now), ps.UpdatesSent, ps.UpdatesReceived,
				ps.Lag.Round(time.Millisecond), ps.ProtoErr, ps.NewConn)
		}
		b = append(b, "</table>\n</div>\n"...)
	}
	return template.HTML(b)
}

// ago prints how long before now t was, "-" for never.
func ago(t, now time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := max(now.Sub(t), 0)
	if d < time.Second {
		return strconv.FormatInt(d.Milliseconds(), 10) + "ms"
	}
	if d < time.Minute {
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Truncate(time.Second).String()
}

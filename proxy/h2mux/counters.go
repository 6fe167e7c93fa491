package h2mux

import "sync/atomic"

// Counters are HAProxy 2.6's h2 statistics module counters, one set per
// frontend (frames received from clients) and per backend (frames
// received from servers), with fulcrum's own counts of the protections
// that refused a connection. All are updated with atomics.
type Counters struct {
	HeadersRcvd   atomic.Int64 // h2_headers_rcvd: HEADERS frames received
	DataRcvd      atomic.Int64 // h2_data_rcvd: DATA frames received
	SettingsRcvd  atomic.Int64 // h2_settings_rcvd: SETTINGS frames received
	RstStreamRcvd atomic.Int64 // h2_rst_stream_rcvd: RST_STREAM frames received
	GoawayRcvd    atomic.Int64 // h2_goaway_rcvd: GOAWAY frames received
	// ConnProtoErr and StrmProtoErr are the connection and stream errors
	// detected (h2_detected_conn_protocol_errors,
	// h2_detected_strm_protocol_errors): a GOAWAY or RST_STREAM sent with
	// an error code.
	ConnProtoErr atomic.Int64
	StrmProtoErr atomic.Int64
	// RstStreamResp and GoawayResp are the RST_STREAM and GOAWAY frames
	// sent on a detected error (h2_rst_stream_resp, h2_goaway_resp).
	RstStreamResp atomic.Int64
	GoawayResp    atomic.Int64
	OpenConns     atomic.Int64 // h2_open_connections (gauge)
	OpenStreams   atomic.Int64 // h2_backend_open_streams (gauge)
	TotalConns    atomic.Int64 // h2_total_connections
	TotalStreams  atomic.Int64 // h2_backend_total_streams

	// The protections (fulcrum's; each also counts as a connection
	// error): connections cut for rapid reset (CVE-2023-44487), for a
	// header block too large on the wire or once decoded (an HPACK bomb)
	// or split in too many CONTINUATION frames,
	// and for SETTINGS or PING frames sent faster than their
	// acknowledgements are read.
	RapidReset   atomic.Int64
	HeaderFlood  atomic.Int64
	ControlFlood atomic.Int64
}

// Cumulative returns the counters that only grow, in a fixed order (a
// reload carries them to the next configuration's counters).
func (c *Counters) Cumulative() []*atomic.Int64 {
	return []*atomic.Int64{
		&c.HeadersRcvd, &c.DataRcvd, &c.SettingsRcvd, &c.RstStreamRcvd, &c.GoawayRcvd,
		&c.ConnProtoErr, &c.StrmProtoErr, &c.RstStreamResp, &c.GoawayResp,
		&c.TotalConns, &c.TotalStreams, &c.RapidReset, &c.HeaderFlood, &c.ControlFlood,
	}
}

// Clear zeroes the totals ("clear counters all"); the gauges of open
// connections and streams keep their values.
func (c *Counters) Clear() {
	for _, v := range []*atomic.Int64{&c.HeadersRcvd, &c.DataRcvd, &c.SettingsRcvd, &c.RstStreamRcvd, &c.GoawayRcvd,
		&c.ConnProtoErr, &c.StrmProtoErr, &c.RstStreamResp, &c.GoawayResp, &c.TotalConns, &c.TotalStreams,
		&c.RapidReset, &c.HeaderFlood, &c.ControlFlood} {
		v.Store(0)
	}
}

package stream

// Outcome is one way a stream can end. Every exit of every engine is one
// of these, and Outcomes says what each means: adding an exit path is one
// new constant and one new row (issue 17, point 1). The counters and flags
// are HAProxy 2.6's for the same case, as measured on loopback (see
// proxy/faults_test.go); where engines differ (TCP counts aborts on the
// backend and server only), they have rows of their own.
type Outcome uint8

// The outcomes, in the order of a request's phases.
const (
	// Served: the response was relayed whole (or the tunnel started).
	Served Outcome = iota
	// IdleTimeout: the first request of a connection never came.
	IdleTimeout
	// RequestTimeout: the request head was not complete in time.
	RequestTimeout
	// ClientGoneHead: the client closed before its request head ended.
	ClientGoneHead
	// BadRequest: the request head could not be parsed, or was refused.
	BadRequest
	// Denied: an http_request deny rule answered.
	Denied
	// Answered: an http_request return or redirect rule answered.
	Answered
	// Local: the frontend answered itself (stats page, /metrics).
	Local
	// LocalClientGone: the client went away during a local answer.
	LocalClientGone
	// NoServer: no backend took the request, or it has no usable server.
	NoServer
	// QueueAbort: the client went away while the request was queued.
	QueueAbort
	// QueueTimeout: timeout queue expired.
	QueueTimeout
	// QueueFull: the pinned server's queue was at maxqueue, no redispatch.
	QueueFull
	// ConnectFailed: no connection to a server after the retries.
	ConnectFailed
	// ClientGoneExpect: the client left when told to send its body (100).
	ClientGoneExpect
	// BadRequestBody: the request body's framing broke (chunked).
	BadRequestBody
	// ClientAbortUpload: the client stopped sending its body (closed).
	ClientAbortUpload
	// ClientTimeoutUpload: the client's body stopped coming (timeout).
	ClientTimeoutUpload
	// ServerGoneUpload: the server went away while the body was sent.
	ServerGoneUpload
	// SendFailed: the request could not be written to a server.
	SendFailed
	// ServerTimeoutHead: the server did not answer within timeout server.
	ServerTimeoutHead
	// BadResponse: the server's response head was invalid (or a 101
	// nobody asked for).
	BadResponse
	// ServerGoneHead: the server closed before its response head.
	ServerGoneHead
	// BadResponseBody: the server's body framing broke before any byte
	// of the response reached the client.
	BadResponseBody
	// ResponseDenied: an http_response deny rule refused the server's
	// response; the client got the rule's error page instead.
	ResponseDenied
	// ClientTimeoutData: the client stopped reading the response.
	ClientTimeoutData
	// ClientAbortData: the client closed during the response.
	ClientAbortData
	// ServerTimeoutData: the server stopped sending the response.
	ServerTimeoutData
	// ServerAbortData: the server closed or broke framing mid-response.
	ServerAbortData
	// TCPDone: a TCP session ended cleanly.
	TCPDone
	// TCPClientAbort, TCPClientTimeout, TCPServerAbort, TCPServerTimeout:
	// a TCP session ended by one side, or its inactivity timeout.
	TCPClientAbort
	TCPClientTimeout
	TCPServerAbort
	TCPServerTimeout
	// ClientReset: an HTTP/2 client reset its stream (RST_STREAM), or
	// lost its connection, before the response head: a client abort (the
	// server side is freed at once).
	ClientReset
	// ServerProtocolError: an HTTP/2 server reset the stream or the
	// connection with PROTOCOL_ERROR before its response head.
	ServerProtocolError
	// ServerReset: an HTTP/2 server reset the stream (RST_STREAM, any
	// code) before its response head, for an HTTP/2 client: the client's
	// stream is reset with REFUSED_STREAM (it may retry), no error page,
	// no log line, as HAProxy 2.6 does.
	ServerReset
	// MalformedReset: an HTTP/2 request head refused before it became a
	// request: one that may not be forwarded (RFC 9113 8.3; a :path or
	// :method an HTTP/1 request line could not carry) or whose block did
	// not decode (a field not valid in HTTP/2, a pseudo-header out of
	// place: its stream is reset with PROTOCOL_ERROR; an HPACK error: the
	// connection ends with GOAWAY). No page; logged PR-- "<BADREQ>" and
	// no counter moves (not ereq, not req_tot), as HAProxy 2.6.12
	// (measured).
	MalformedReset
	// Killed: an operator (`shutdown session`, `shutdown sessions server`)
	// or the stop's hard_stop_after ended an HTTP request while its
	// response head was awaited: HAProxy 2.6 answers 502 and logs KH,
	// counting eresp on the backend and the server (measured).
	Killed
	// KilledData: Killed after the server's response head was relayed
	// (the log keeps the server's status): KD, srv_abrt on the backend
	// and the server (HAProxy 2.6, measured).
	KilledData
	// KilledTCP: a TCP session killed; HAProxy 2.6 logs it K- and counts
	// no abort (measured).
	KilledTCP
	// KilledQueue, KilledConnect, KilledRequest, KilledUpload: killed in
	// the queue (KQ), while connecting (KC), while its request head was
	// read (KR), or while its body was sent (KD, srv_abrt as KilledData):
	// the phase letter of HAProxy's termination state.
	KilledQueue
	KilledConnect
	KilledRequest
	KilledUpload
	// TunnelClientAbort, TunnelClientTimeout, TunnelServerAbort,
	// TunnelServerTimeout: an HTTP/1 tunnel (after a 101: a WebSocket)
	// ended by a side's failure or by its idle timeout (timeout_tunnel,
	// else the client's or server's). The log keeps the 101 and its
	// flags say who ended it (HAProxy 2.6: "101 ... cD--" for an idle
	// WebSocket); the counters are mode tcp's, as HAProxy ends both in
	// the same place once its HTTP analyzers are gone. A clean end of
	// the tunnel is Served.
	TunnelClientAbort
	TunnelClientTimeout
	TunnelServerAbort
	TunnelServerTimeout

	numOutcomes
)

// Counts says which error counters an outcome moves, each on the
// frontend (Fe), backend (Be) or server (Srv) of the stream, as HAProxy's
// `show stat` names them.
type Counts uint32

// The counters an outcome may move.
const (
	FeEreq Counts = 1 << iota
	FeDreq
	BeDreq
	FeCliAbrt
	BeCliAbrt
	SrvCliAbrt
	FeSrvAbrt
	BeSrvAbrt
	SrvSrvAbrt
	BeEresp
	SrvEresp
	BeEcon
	SrvEcon
	FeDresp
	BeDresp
	SrvDresp
)

// Row is what an outcome means.
type Row struct {
	Name string
	// Status is the status the proxy answers with itself (an error page),
	// 0 when it sends nothing of its own: the server's response was
	// relayed, a rule or a local handler answered (the stream knows the
	// status), or nobody is listening.
	Status int
	// Flags are the first two characters of HAProxy's termination state.
	Flags string
	// Counts are the error counters moved.
	Counts Counts
	// Observe is the status reported to passive health checks (observe
	// layer7) for a response that could not be read: 502 or 504; 0 when
	// the server's own status was reported, or none.
	Observe int
	// Relayed says the server's status and bytes were sent: the log and
	// the hrsp_* counters carry the server's status.
	Relayed bool
	// Timed says the stream ran its course: its total time goes into the
	// backend's and server's ttime average.
	Timed bool
	// Silent says no access-log line is written (HAProxy's logwait 0, as
	// for a request it aborts so that the client retries it).
	Silent bool
	// LogStatus is the status the log line shows, and the frontend's
	// hrsp counts, when no reply was sent (0: -1, none): HAProxy 2.6 logs
	// and counts 400 for a connection closed before its request was
	// whole, though nothing is answered (measured).
	LogStatus int
}

// Outcomes is the table of outcomes, indexed by Outcome.
var Outcomes = [numOutcomes]Row{
	Served:              {Name: "served", Flags: "--", Relayed: true, Timed: true},
	IdleTimeout:         {Name: "idle timeout", Status: 408, Flags: "cR", Counts: FeEreq},
	RequestTimeout:      {Name: "request timeout", Status: 408, Flags: "cR", Counts: FeEreq},
	ClientGoneHead:      {Name: "client gone (head)", Flags: "CR", Counts: FeEreq, LogStatus: 400},
	BadRequest:          {Name: "bad request", Status: 400, Flags: "PR", Counts: FeEreq},
	Denied:              {Name: "denied", Flags: "PR", Counts: FeDreq | BeDreq},
	Answered:            {Name: "answered by a rule", Flags: "LR"},
	Local:               {Name: "local", Flags: "LR"},
	LocalClientGone:     {Name: "local, client gone", Flags: "CD"},
	NoServer:            {Name: "no server", Status: 503, Flags: "SC", Counts: BeEcon},
	QueueAbort:          {Name: "client gone (queue)", Flags: "CQ"},
	QueueTimeout:        {Name: "queue timeout", Status: 503, Flags: "sQ"},
	QueueFull:           {Name: "queue full", Status: 503, Flags: "SQ"},
	ConnectFailed:       {Name: "connect failed", Status: 503, Flags: "SC"},
	ClientGoneExpect:    {Name: "client gone (100-continue)", Flags: "CR"},
	BadRequestBody:      {Name: "bad request body", Status: 400, Flags: "PH", Counts: FeEreq},
	ClientAbortUpload:   {Name: "client abort (upload)", Flags: "CD", Counts: FeCliAbrt | BeCliAbrt | SrvCliAbrt},
	ClientTimeoutUpload: {Name: "client timeout (upload)", Flags: "cD", Counts: FeCliAbrt | BeCliAbrt | SrvCliAbrt},
	ServerGoneUpload:    {Name: "server gone (upload)", Status: 502, Flags: "SD", Counts: FeSrvAbrt | BeSrvAbrt | SrvSrvAbrt},
	SendFailed:          {Name: "send failed", Status: 503, Flags: "SC", Counts: BeEcon | SrvEcon},
	ServerTimeoutHead:   {Name: "server timeout (head)", Status: 504, Flags: "sH", Counts: BeEresp | SrvEresp, Observe: 504},
	BadResponse:         {Name: "bad response", Status: 502, Flags: "PH", Counts: BeEresp | SrvEresp, Observe: 502},
	ServerGoneHead:      {Name: "server gone (head)", Status: 502, Flags: "SH", Counts: BeEresp | SrvEresp, Observe: 502},
	BadResponseBody:     {Name: "bad response body", Status: 502, Flags: "PH", Counts: BeEresp | SrvEresp},
	ResponseDenied:      {Name: "response denied", Flags: "PH", Counts: FeDresp | BeDresp | SrvDresp},
	ClientTimeoutData:   {Name: "client timeout (data)", Flags: "cD", Relayed: true},
	ClientAbortData:     {Name: "client abort (data)", Flags: "CD", Counts: FeCliAbrt | BeCliAbrt | SrvCliAbrt, Relayed: true},
	ServerTimeoutData:   {Name: "server timeout (data)", Flags: "sD", Counts: BeSrvAbrt | SrvSrvAbrt, Relayed: true},
	ServerAbortData:     {Name: "server abort (data)", Flags: "SD", Counts: BeSrvAbrt | SrvSrvAbrt | BeEresp | SrvEresp, Relayed: true},
	TCPDone:             {Name: "tcp done", Flags: "--", Timed: true},
	TCPClientAbort:      {Name: "tcp client abort", Flags: "CD", Counts: BeCliAbrt | SrvCliAbrt, Timed: true},
	TCPClientTimeout:    {Name: "tcp client timeout", Flags: "cD", Counts: BeCliAbrt | SrvCliAbrt, Timed: true},
	TCPServerAbort:      {Name: "tcp server abort", Flags: "SD", Counts: BeSrvAbrt | SrvSrvAbrt, Timed: true},
	TCPServerTimeout:    {Name: "tcp server timeout", Flags: "sD", Counts: BeSrvAbrt | SrvSrvAbrt, Timed: true},
	ClientReset:         {Name: "client reset (h2)", Flags: "CD", Counts: FeCliAbrt | BeCliAbrt | SrvCliAbrt},
	ServerProtocolError: {Name: "server protocol error (h2)", Status: 502, Flags: "PH", Counts: BeEresp | SrvEresp, Observe: 502},
	ServerReset:         {Name: "server reset (h2)", Flags: "SH", Counts: BeEresp | SrvEresp | BeSrvAbrt | SrvSrvAbrt, Silent: true},
	MalformedReset:      {Name: "malformed request (h2)", Flags: "PR"},
	Killed:              {Name: "killed (head)", Flags: "KH", Counts: BeEresp | SrvEresp, Timed: true},
	KilledData:          {Name: "killed (data)", Flags: "KD", Counts: BeSrvAbrt | SrvSrvAbrt, Relayed: true, Timed: true},
	KilledTCP:           {Name: "killed (tcp)", Flags: "K-", Timed: true},
	KilledQueue:         {Name: "killed (queue)", Flags: "KQ"},
	KilledConnect:       {Name: "killed (connect)", Flags: "KC", Timed: true},
	KilledRequest:       {Name: "killed (request)", Flags: "KR"},
	KilledUpload:        {Name: "killed (upload)", Flags: "KD", Counts: BeSrvAbrt | SrvSrvAbrt, Timed: true},
	TunnelClientAbort:   {Name: "tunnel client abort", Flags: "CD", Counts: BeCliAbrt | SrvCliAbrt, Relayed: true, Timed: true},
	TunnelClientTimeout: {Name: "tunnel client timeout", Flags: "cD", Counts: BeCliAbrt | SrvCliAbrt, Relayed: true, Timed: true},
	TunnelServerAbort:   {Name: "tunnel server abort", Flags: "SD", Counts: BeSrvAbrt | SrvSrvAbrt, Relayed: true, Timed: true},
	TunnelServerTimeout: {Name: "tunnel server timeout", Flags: "sD", Counts: BeSrvAbrt | SrvSrvAbrt, Relayed: true, Timed: true},
}

// AsKilled is how an outcome reads when the stream was killed (Killed):
// the ends a kill causes (the connections closed under the engine: an
// abort, a failed read or write, a timeout) become Killed or KilledData;
// the others (the stream had ended, or answered) stay.
func (o Outcome) AsKilled() Outcome {
	switch o {
	case ClientAbortData, ClientTimeoutData, ServerAbortData, ServerTimeoutData,
		TunnelClientAbort, TunnelClientTimeout, TunnelServerAbort, TunnelServerTimeout:
		return KilledData
	case TCPClientAbort, TCPClientTimeout, TCPServerAbort, TCPServerTimeout:
		return KilledTCP
	case ClientGoneHead, ClientGoneExpect:
		return KilledRequest
	case ClientAbortUpload, ClientTimeoutUpload, ServerGoneUpload:
		return KilledUpload
	case SendFailed:
		return KilledConnect
	case QueueAbort:
		return KilledQueue
	case ServerTimeoutHead, ServerGoneHead, ClientReset:
		return Killed
	}
	return o
}

// Row returns o's row.
func (o Outcome) Row() *Row { return &Outcomes[o] }

// String returns o's name.
func (o Outcome) String() string {
	if o >= numOutcomes {
		return "outcome?"
	}
	return Outcomes[o].Name
}

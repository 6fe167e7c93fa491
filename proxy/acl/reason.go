package acl

// Reason phrases: HAProxy 2.6's http_get_reason (src/http.c), which
// set-status without a reason and the return action use. Checked against
// HAProxy 2.6.12 on loopback (set-status 302, 422, 506, 599; return 413).

// Reason returns HAProxy's reason phrase for status code: the phrase of
// a known code, else that of its class ("Server Error" for 599), else
// "Other".
func Reason(code int) string {
	if s, ok := reasonPhrases[code]; ok {
		return s
	}
	switch {
	case code >= 100 && code <= 199:
		return "Informational"
	case code >= 200 && code <= 299:
		return "Success"
	case code >= 300 && code <= 399:
		return "Redirection"
	case code >= 400 && code <= 499:
		return "Client Error"
	case code >= 500 && code <= 599:
		return "Server Error"
	}
	return "Other"
}

var reasonPhrases = map[int]string{
	100: "Continue", 101: "Switching Protocols", 102: "Processing",
	200: "OK", 201: "Created", 202: "Accepted", 203: "Non-Authoritative Information", 204: "No Content",
	205: "Reset Content", 206: "Partial Content", 207: "Multi-Status", 210: "Content Different", 226: "IM Used",
	300: "Multiple Choices", 301: "Moved Permanently", 302: "Moved Temporarily", 303: "See Other",
	304: "Not Modified", 305: "Use Proxy", 307: "Temporary Redirect", 308: "Permanent Redirect",
	310: "Too many Redirects",
	400: "Bad Request", 401: "Unauthorized", 402: "Payment Required", 403: "Forbidden", 404: "Not Found",
	405: "Method Not Allowed", 406: "Not Acceptable", 407: "Proxy Authentication Required",
	408: "Request Time-out", 409: "Conflict", 410: "Gone", 411: "Length Required", 412: "Precondition Failed",
	413: "Request Entity Too Large", 414: "Request-URI Too Long", 415: "Unsupported Media Type",
	416: "Requested range unsatisfiable", 417: "Expectation failed", 418: "I'm a teapot",
	421: "Misdirected Request", 422: "Unprocessable Content", 423: "Locked", 424: "Method failure",
	425: "Too Early", 426: "Upgrade Required", 428: "Precondition Required", 429: "Too Many Requests",
	431: "Request Header Fields Too Large", 449: "Retry With", 450: "Blocked by Windows Parental Controls",
	451: "Unavailable For Legal Reasons", 456: "Unrecoverable Error", 499: "client has closed connection",
	500: "Internal Server Error", 501: "Not Implemented", 502: "Bad Gateway or Proxy Error",
	503: "Service Unavailable", 504: "Gateway Time-out", 505: "HTTP Version not supported",
	506: "Variant also negotiate", 507: "Insufficient storage", 508: "Loop detected",
	509: "Bandwidth Limit Exceeded", 510: "Not extended", 511: "Network authentication required",
	520: "Web server is returning an unknown error",
}

package http1

import "strconv"

// errorPages are HAProxy 2.6's built-in error responses (src/http_htx.c,
// http_err_msgs), sent with "cache-control: no-cache", "content-type:
// text/html" and "connection: close" as HAProxy does.
var errorPages = map[int]string{
	400: "<html><body><h1>400 Bad request</h1>\nYour browser sent an invalid request.\n</body></html>\n",
	403: "<html><body><h1>403 Forbidden</h1>\nRequest forbidden by administrative rules.\n</body></html>\n",
	408: "<html><body><h1>408 Request Time-out</h1>\nYour browser didn't send a complete request in time.\n</body></html>\n",
	500: "<html><body><h1>500 Internal Server Error</h1>\nAn internal server error occurred.\n</body></html>\n",
	502: "<html><body><h1>502 Bad Gateway</h1>\nThe server returned an invalid or incomplete response.\n</body></html>\n",
	503: "<html><body><h1>503 Service Unavailable</h1>\nNo server is available to handle this request.\n</body></html>\n",
	504: "<html><body><h1>504 Gateway Time-out</h1>\nThe server didn't respond in time.\n</body></html>\n",

	// The other codes http_request deny_status may use (acl.DenyStatuses).
	200: "<html><body><h1>200 OK</h1>\nService ready.\n</body></html>\n",
	401: "<html><body><h1>401 Unauthorized</h1>\nYou need a valid user and password to access this content.\n</body></html>\n",
	404: "<html><body><h1>404 Not Found</h1>\nThe resource could not be found.\n</body></html>\n",
	405: "<html><body><h1>405 Method Not Allowed</h1>\nA request was made of a resource using a request method not supported by that resource\n</body></html>\n",
	407: "<html><body><h1>407 Unauthorized</h1>\nYou need a valid user and password to access this content.\n</body></html>\n",
	410: "<html><body><h1>410 Gone</h1>\nThe resource is no longer available and will not be available again.\n</body></html>\n",
	413: "<html><body><h1>413 Payload Too Large</h1>\nThe request entity exceeds the maximum allowed.\n</body></html>\n",
	421: "<html><body><h1>421 Misdirected Request</h1>\nRequest sent to a non-authoritative server.\n</body></html>\n",
	425: "<html><body><h1>425 Too Early</h1>\nYour browser sent early data.\n</body></html>\n",
	429: "<html><body><h1>429 Too Many Requests</h1>\nYou have sent too many requests in a given amount of time.\n</body></html>\n",
	// HAProxy's page has the stray '.' too.
	501: "<html><body><h1>501 Not Implemented</h1>\n.The server does not support the functionality required to fulfill the request.\n</body></html>\n",
}

var statusText = map[int]string{
	400: "Bad request", 403: "Forbidden", 408: "Request Time-out", 500: "Internal Server Error",
	502: "Bad Gateway", 503: "Service Unavailable", 504: "Gateway Time-out",
	200: "OK", 401: "Unauthorized", 404: "Not Found", 405: "Method Not Allowed",
	407: "Unauthorized", 410: "Gone", 413: "Payload Too Large", 421: "Misdirected Request",
	425: "Too Early", 429: "Too Many Requests", 501: "Not Implemented",
}

// DenyResponse returns the whole response of http_request deny with
// deny_status code, byte for byte as HAProxy 2.6 sends it (nil for a code
// it has none for).
func DenyResponse(code int) []byte { return denyResponses[code] }

// ErrorPage returns HAProxy 2.6's built-in page for code (the body of its
// error response, HTML), and false for a code it has none for. The stats
// page answers its own refusals with them.
func ErrorPage(code int) (string, bool) {
	body, ok := errorPages[code]
	return body, ok
}

// errorResponse returns the full HTTP/1.1 response HAProxy sends for code.
func errorResponse(code int) []byte {
	body := errorPages[code]
	return []byte("HTTP/1.1 " + strconv.Itoa(code) + " " + statusText[code] + "\r\n" +
		"content-length: " + strconv.Itoa(len(body)) + "\r\n" +
		"cache-control: no-cache\r\n" +
		"content-type: text/html\r\n" +
		"connection: close\r\n\r\n" + body)
}

// prebuilt error responses, built once.
var errorResponses = func() map[int][]byte {
	m := make(map[int][]byte, len(errorPages))
	for code := range errorPages {
		m[code] = errorResponse(code)
	}
	return m
}()

// denyResponses are the responses of http_request deny, byte for byte as
// HAProxy 2.6 sends them: the error page without "connection: close" (the
// client connection stays open), except 400 and 408, which close it.
var denyResponses = func() map[int][]byte {
	m := make(map[int][]byte, len(errorPages))
	for code, body := range errorPages {
		conn := ""
		if code == 400 || code == 408 {
			conn = "connection: close\r\n"
		}
		m[code] = []byte("HTTP/1.1 " + strconv.Itoa(code) + " " + statusText[code] + "\r\n" +
			"content-length: " + strconv.Itoa(len(body)) + "\r\n" +
			"cache-control: no-cache\r\n" +
			"content-type: text/html\r\n" + conn + "\r\n" + body)
	}
	return m
}()

// AppendAuthResponse appends to dst the response of http_request auth:
// the 401 page with a Basic challenge for realm, byte for byte as HAProxy
// 2.6 sends it (http_act.c, http_action_auth: the error page, then
// "www-authenticate: Basic realm=\"REALM\""; the connection stays open).
func AppendAuthResponse(dst []byte, realm string) []byte {
	body := errorPages[401]
	dst = append(dst, "HTTP/1.1 401 Unauthorized\r\ncontent-length: "...)
	dst = strconv.AppendInt(dst, int64(len(body)), 10)
	dst = append(dst, "\r\ncache-control: no-cache\r\ncontent-type: text/html\r\nwww-authenticate: Basic realm=\""...)
	dst = append(dst, realm...)
	dst = append(dst, "\"\r\n\r\n"...)
	return append(dst, body...)
}

package proxy

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
}

var statusText = map[int]string{
	400: "Bad request", 403: "Forbidden", 408: "Request Time-out", 500: "Internal Server Error",
	502: "Bad Gateway", 503: "Service Unavailable", 504: "Gateway Time-out",
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

package http2

import "net/http"

// commonKeys maps the field names sent most (responses, and requests of
// HTTP/2 clients, gRPC's among them), in lower case (HTTP/2, and HTTP/1.1
// peers that write them so) and in canonical form, to their canonical
// form: read only.
var commonKeys = func() map[string]string {
	m := map[string]string{}
	for _, k := range []string{
		"Accept-Ranges", "Age", "Cache-Control", "Connection", "Content-Disposition",
		"Content-Encoding", "Content-Language", "Content-Length", "Content-Location",
		"Content-Range", "Content-Security-Policy", "Content-Type", "Date", "Etag",
		"Expires", "Grpc-Encoding", "Grpc-Message", "Grpc-Status", "Keep-Alive",
		"Last-Modified", "Link", "Location", "Pragma", "Retry-After", "Server",
		"Set-Cookie", "Strict-Transport-Security", "Trailer", "Vary", "Via",
		"Www-Authenticate", "X-Content-Type-Options", "X-Frame-Options",
		"X-Request-Id", "X-Xss-Protection",
		"Accept", "Accept-Encoding", "Accept-Language", "Authorization", "Cookie",
		"Grpc-Accept-Encoding", "Grpc-Timeout", "If-Modified-Since", "If-None-Match",
		"Origin", "Referer", "Te", "User-Agent", "X-Forwarded-For", "X-Forwarded-Proto",
	} {
		m[k] = k
		m[lower(k)] = k
	}
	m["etag"], m["ETag"] = "Etag", "Etag"
	return m
}()

// lower returns s in ASCII lower case.
func lower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// headerKey returns http.CanonicalHeaderKey of name, without allocating
// for the names of commonKeys.
func headerKey(name []byte) string {
	if k, ok := commonKeys[string(name)]; ok {
		return k
	}
	return http.CanonicalHeaderKey(string(name))
}

// headerKeyString is headerKey for a name held as a string.
func headerKeyString(name string) string {
	if k, ok := commonKeys[name]; ok {
		return k
	}
	return http.CanonicalHeaderKey(name)
}

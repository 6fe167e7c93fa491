package proxy

import (
	"io"
	"net/http"
	"net/http/httptrace"
	"net/textproto"
	"testing"
)

// A server's 103 Early Hints reach the client before the final response,
// with their fields, as HAProxy 2.6 relays them, whatever either side
// speaks (a fresh-user trial saw them dropped towards HTTP/2 clients and
// from HTTP/2 servers); a 100 Continue the proxy answered itself does
// not.
func TestEarlyHints(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Link", "</s.css>; rel=preload")
		w.WriteHeader(http.StatusEarlyHints)
		w.Header().Del("Link")
		io.WriteString(w, "final")
	})
	for _, tc := range []struct{ server, client string }{{"", "h1"}, {"", "h2"}, {"h2", "h1"}, {"h2", "h2"}} {
		up := h2cUpstream(t, h)
		cfg := h2Config([]string{up.Listener.Addr().String()}, tc.server)
		if tc.client == "h1" {
			cfg.Frontends[0].BindOptions = nil
		}
		_, addr := startProxy(t, cfg)
		var rt http.RoundTripper = &http.Transport{}
		if tc.client == "h2" {
			rt = h2cTransport()
		}
		var got []string
		trace := &httptrace.ClientTrace{Got1xxResponse: func(code int, h textproto.MIMEHeader) error {
			got = append(got, http.StatusText(code)+" "+h.Get("Link"))
			return nil
		}}
		req := mustReq(t, "http://"+addr+"/")
		req = req.WithContext(httptrace.WithClientTrace(req.Context(), trace))
		resp, err := rt.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || string(b) != "final" {
			t.Fatalf("server %q, client %s: final response %d %q", tc.server, tc.client, resp.StatusCode, b)
		}
		if len(got) != 1 || got[0] != "Early Hints </s.css>; rel=preload" {
			t.Errorf("server %q, client %s: interim responses %q, want one 103 with its Link", tc.server, tc.client, got)
		}
	}
}

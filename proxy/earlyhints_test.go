package proxy

import (
	"io"
	"net/http"
	"net/http/httptrace"
	"net/textproto"
	"testing"
	"time"
)

// A server's 103 Early Hints reach the client before the final response,
// with their fields, as HAProxy 2.6 relays them, whatever either side
// speaks (a fresh-user trial saw them dropped towards HTTP/2 clients and
// from HTTP/2 servers); a 100 Continue the proxy answered itself does
// not. Every interim head counts in the server's hrsp_1xx, 100 included
// (HAProxy's http_wait_for_response counts each head it reads; a trial
// found them uncounted on the HTTP/2 paths).
func TestEarlyHints(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusContinue)
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
		p, addr := startProxy(t, cfg)
		var rt http.RoundTripper = &http.Transport{}
		if tc.client == "h2" {
			rt = h2cTransport()
		}
		var got []string
		trace := &httptrace.ClientTrace{Got1xxResponse: func(code int, h textproto.MIMEHeader) error {
			if code == http.StatusContinue {
				return nil // relayed between HTTP/1 sides (as HAProxy's), not towards HTTP/2
			}
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
		fe, srv := &p.Frontends[0].Counters, &p.Backends[0].Servers()[0].Counters
		waitFor(t, 5*time.Second, "the final response counted", func() bool { return srv.Hrsp[2].Load() == 1 })
		if a, b := fe.Hrsp[1].Load(), srv.Hrsp[1].Load(); a != 0 || b != 2 {
			t.Errorf("server %q, client %s: hrsp_1xx frontend %d server %d, want 0 and 2 (the 100 and the 103)", tc.server, tc.client, a, b)
		}
	}
}

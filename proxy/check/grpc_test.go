package check

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/fulcrum-proxy/fulcrum/internal/testcert"
)

// TestGRPCProbe runs the gRPC health check against google.golang.org/grpc
// servers: serving, not serving, without the health service, an HTTP/1
// server and a closed port.
func TestGRPCProbe(t *testing.T) {
	start := func(t *testing.T, withHealth bool, st healthpb.HealthCheckResponse_ServingStatus) string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		gs := grpc.NewServer()
		if withHealth {
			hs := health.NewServer()
			hs.SetServingStatus("", st)
			healthpb.RegisterHealthServer(gs, hs)
		}
		done := make(chan struct{})
		go func() { defer close(done); gs.Serve(l) }()
		t.Cleanup(func() { gs.Stop(); <-done })
		return l.Addr().String()
	}
	h1 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer h1.Close()
	closed, _ := net.Listen("tcp", "127.0.0.1:0")
	closedAddr := closed.Addr().String()
	closed.Close()
	for _, tc := range []struct {
		name   string
		addr   func(t *testing.T) string
		status Status
		code   int
		info   string
	}{
		{"serving", func(t *testing.T) string { return start(t, true, healthpb.HealthCheckResponse_SERVING) }, StatusL7OK, 200, ""},
		{"not serving", func(t *testing.T) string { return start(t, true, healthpb.HealthCheckResponse_NOT_SERVING) }, StatusL7STS, 200, "NOT_SERVING"},
		{"no health service", func(t *testing.T) string { return start(t, false, 0) }, StatusL7STS, 12, "grpc-status 12 unknown service grpc.health.v1.Health"},
		{"http/1 server", func(t *testing.T) string { return h1.Listener.Addr().String() }, StatusL7RSP, 0, ""},
		{"closed port", func(t *testing.T) string { return closedAddr }, StatusL4CON, 0, "Connection refused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := grpcProbe{}.Run(context.Background(), tc.addr(t), 2*time.Second, 5*time.Second)
			if r.Status != tc.status || r.Code != tc.code || (tc.info != "" && !strings.HasPrefix(r.Info, tc.info)) {
				t.Errorf("got %v %d %q, want %v %d %q", r.Status, r.Code, r.Info, tc.status, tc.code, tc.info)
			}
		})
	}
}

// TestHealthStatus decodes HealthCheckResponse frames.
func TestHealthStatus(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []byte
		st   uint64
		ok   bool
	}{
		{"serving", []byte{0, 0, 0, 0, 2, 0x08, 1}, 1, true},
		{"empty is unknown", []byte{0, 0, 0, 0, 0}, 0, true},
		{"unknown field skipped", []byte{0, 0, 0, 0, 5, 0x12, 1, 'x', 0x08, 2}, 2, true},
		{"compressed", []byte{1, 0, 0, 0, 2, 0x08, 1}, 0, false},
		{"short", []byte{0, 0, 0}, 0, false},
		{"length mismatch", []byte{0, 0, 0, 0, 3, 0x08, 1}, 0, false},
		{"bad varint", []byte{0, 0, 0, 0, 2, 0x08, 0x80}, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, ok := healthStatus(tc.in)
			if st != tc.st || ok != tc.ok {
				t.Errorf("got %d, %v; want %d, %v", st, ok, tc.st, tc.ok)
			}
		})
	}
}

// TestGRPCProbeTLS: under check_ssl the gRPC health check runs over the
// connection its ConnPrep made, a TLS one offering ALPN h2 (grpc-go's
// server closes a connection without it): L7OK.
func TestGRPCProbeTLS(t *testing.T) {
	ca := testcert.NewCA(t, "Test CA", testcert.Options{})
	cert := ca.Server(t, testcert.Options{}, "s.test").TLS()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer(grpc.Creds(credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{cert}})))
	hs := health.NewServer()
	hs.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	healthpb.RegisterHealthServer(gs, hs)
	done := make(chan struct{})
	go func() { defer close(done); gs.Serve(l) }()
	t.Cleanup(func() { gs.Stop(); <-done })
	prep := func(alpn string) ConnPrep {
		return func(c net.Conn, deadline time.Time) (net.Conn, bool, error) {
			tc := tls.Client(c, &tls.Config{RootCAs: ca.Pool(), ServerName: "s.test", NextProtos: []string{alpn}})
			tc.SetDeadline(deadline)
			return tc, true, tc.Handshake()
		}
	}
	if r := (grpcProbe{prep: prep("h2")}).Run(context.Background(), l.Addr().String(), 2*time.Second, 5*time.Second); r.Status != StatusL7OK {
		t.Errorf("over TLS: got %v %d %q, want L7OK", r.Status, r.Code, r.Info)
	}
	// Without h2 grpc-go closes the connection after the handshake.
	if r := (grpcProbe{prep: prep("http/1.1")}).Run(context.Background(), l.Addr().String(), 2*time.Second, 5*time.Second); r.Status != StatusL7RSP {
		t.Errorf("ALPN http/1.1: got %v %d %q, want L7RSP", r.Status, r.Code, r.Info)
	}
	// In clear against the TLS server: no gRPC answer.
	if r := (grpcProbe{}).Run(context.Background(), l.Addr().String(), 2*time.Second, 5*time.Second); r.Status == StatusL7OK {
		t.Errorf("h2c against a TLS server: got %v", r.Status)
	}
}

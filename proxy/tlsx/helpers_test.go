package tlsx

import (
	"crypto/tls"
	"net"
	"testing"

	"github.com/fulcrum-proxy/fulcrum/internal/testcert"
)

// fixture is a directory of certificates for one test, signed by ca.
type fixture struct {
	t   *testing.T
	dir string
	ca  *testcert.CA
}

func newFixture(t *testing.T) *fixture {
	return &fixture{t: t, dir: t.TempDir(), ca: testcert.NewCA(t, "Test CA", testcert.Options{})}
}

// cert writes a server certificate for names to file and returns it.
func (f *fixture) cert(file string, o testcert.Options, names ...string) *testcert.Leaf {
	l := f.ca.Server(f.t, o, names...)
	testcert.Write(f.t, f.dir, file, l.PEM(true))
	return l
}

// write writes a file of the fixture.
func (f *fixture) write(file, content string) {
	testcert.Write(f.t, f.dir, file, []byte(content))
}

// bind builds a store and one bind from bind options applied by setup.
func (f *fixture) bind(setup func(l *Loader, bc *BindConfig) error) (*Store, *Bind) {
	f.t.Helper()
	l := NewLoader(f.dir)
	bc := &BindConfig{Where: "test.toml:1"}
	if err := setup(l, bc); err != nil {
		f.t.Fatalf("setup: %v", err)
	}
	if err := l.Check(bc); err != nil {
		f.t.Fatalf("check: %v", err)
	}
	s := NewStore(l, nil)
	return s, s.NewBind(bc)
}

// handshake connects to b with cfg (ServerName etc.) and returns the
// state, or the error of the client side.
func handshake(t *testing.T, b *Bind, cfg *tls.Config) (tls.ConnectionState, error) {
	t.Helper()
	c1, c2 := net.Pipe()
	defer c1.Close()
	defer c2.Close()
	srv := b.Server(c2)
	done := make(chan error, 1)
	go func() { done <- srv.Handshake() }()
	cl := tls.Client(c1, cfg)
	err := cl.Handshake()
	if err != nil {
		c1.Close()
	} else {
		// Read what the server sends after the client's handshake ended
		// (TLS 1.3 tickets, or the alert refusing a client certificate):
		// net.Pipe has no buffer to hold it.
		go func() {
			var buf [64]byte
			for {
				if _, err := cl.Read(buf[:]); err != nil {
					return
				}
			}
		}()
	}
	serr := <-done
	c1.Close()
	if err == nil && serr != nil {
		err = serr
	}
	return cl.ConnectionState(), err
}

// clientConfig trusts the fixture's CA and asks for name.
func (f *fixture) client(name string) *tls.Config {
	return &tls.Config{RootCAs: f.ca.Pool(), ServerName: name}
}

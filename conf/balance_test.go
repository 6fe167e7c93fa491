package conf

import (
	"strings"
	"testing"

	"github.com/fulcrum-proxy/fulcrum/proxy/lb"
)

// TestBalanceFromRegistry: conf accepts exactly the algorithms of proxy/lb's
// registry, each in an http backend, and reports the one it does not run
// yet as not supported.
func TestBalanceFromRegistry(t *testing.T) {
	examples := map[string]string{
		"roundrobin": "roundrobin", "static-rr": "static-rr", "leastconn": "leastconn",
		"first": "first", "source": "source", "uri": "uri depth 2", "url_param": "url_param id",
		"hdr": "hdr(Host) use_domain_only", "random": "random(3)", "hash": "hash path",
		"rdp-cookie": "rdp-cookie",
	}
	for _, e := range lb.Entries() {
		expr, ok := examples[e.Name]
		if !ok {
			t.Errorf("no example for %s: add one", e.Name)
			continue
		}
		toml := "[[backend]]\nname = \"b\"\nbalance = \"" + expr + "\"\n[[backend.server]]\nname = \"s\"\naddress = \"127.0.0.1:1\"\n"
		_, err := Parse("t.toml", []byte(toml))
		switch {
		case e.Name == "rdp-cookie":
			if err == nil || !strings.Contains(err.Error(), "not supported yet") {
				t.Errorf("%s: got %v, want not supported yet", expr, err)
			}
		case err != nil:
			t.Errorf("%s: %v", expr, err)
		}
	}
}

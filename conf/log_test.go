package conf

import (
	"testing"

	"github.com/fulcrum-proxy/fulcrum/proxy/syslog"
)

// TestLogModel checks the access log keys as the proxy gets them: the
// "global" entries replaced by [[global.log]], [defaults] inherited, the
// format by mode, the captures.
func TestLogModel(t *testing.T) {
	cfg, err := Parse("log.toml", []byte(`
[global]
log_tag = "lb1"
stats_history_interval = "30s"
[[global.log]]
target = "/dev/log"
facility = "local2"
[[global.log]]
target = "tcp@10.0.0.1:601"
format = "rfc5424"
level = "notice"
len = 4096

[defaults]
log = [{ target = "global" }]
dontlognull = true

[[frontend]]
name = "www"
bind = ["127.0.0.1:0"]
capture_request_header = [{ name = "Host", len = 32 }]

[[frontend]]
name = "tcpfe"
mode = "tcp"
bind = ["127.0.0.1:0"]
log_format = "httplog"
log = [{ target = "global" }, { target = "127.0.0.1", format = "raw" }]

[[frontend]]
name = "quiet"
bind = ["127.0.0.1:0"]
log = []
log_format = "%ci %[src]"
`))
	if err != nil {
		t.Fatal(err)
	}
	g := cfg.Global
	if g.LogTag != "lb1" || g.StatsHistoryInterval.Seconds() != 30 || len(g.Log) != 2 {
		t.Fatalf("global: %+v", g)
	}
	dev := syslog.Target{Network: "unixgram", Address: "/dev/log", Format: "rfc3164", Facility: 18, MaxLevel: 7, MinLevel: 0, Len: 1024}
	tcp := syslog.Target{Network: "tcp", Address: "10.0.0.1:601", Format: "rfc5424", Facility: 16, MaxLevel: 5, MinLevel: 0, Len: 4096}
	if g.Log[0].Target != dev || g.Log[1].Target != tcp {
		t.Errorf("global targets: got %+v", g.Log)
	}
	www, tcpfe, quiet := cfg.Frontends[0], cfg.Frontends[1], cfg.Frontends[2]
	if len(www.Log) != 2 || www.Log[0].Target != dev || !www.DontLogNull {
		t.Errorf("www inherits log global and dontlognull: %+v", www.Log)
	}
	if www.LogFormat == nil || len(www.LogFormat.HTTPVariables()) == 0 || len(www.CaptureRequest) != 1 || www.CaptureRequest[0] != (Capture{"Host", 32}) {
		t.Errorf("www: httplog and one capture, got %v %v", www.LogFormat, www.CaptureRequest)
	}
	if len(tcpfe.Log) != 3 || tcpfe.Log[2].Target.Format != "raw" || tcpfe.Log[2].Target.Address != "127.0.0.1:514" {
		t.Errorf("tcpfe: got %+v", tcpfe.Log)
	}
	if len(tcpfe.LogFormat.HTTPVariables()) != 0 {
		t.Errorf("tcpfe: httplog in mode tcp is tcplog, got %s", tcpfe.LogFormat)
	}
	if len(quiet.Log) != 0 || len(quiet.LogSamples) != 1 {
		t.Errorf("quiet: no targets and one sample fetch, got %+v %v", quiet.Log, quiet.LogSamples)
	}
}

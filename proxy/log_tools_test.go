package proxy

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-proxy/fulcrum/conf"
	"github.com/fulcrum-proxy/fulcrum/internal/testutil"
)

// toolsConfig is a frontend whose access log goes to the targets given
// (TOML), in front of web (an upstream answering 404 for /missing) and
// dead (a refused address).
const toolsConfig = `
[defaults]
retries = 0
log_format = "httplog"

[[frontend]]
name = "www"
bind = ["127.0.0.1:0"]
default_backend = "web"
use_backend = [{ backend = "dead", if = "{ path_beg /dead }" }]
log = [%s]

[[backend]]
name = "web"
[[backend.server]]
name = "s1"
address = %q

[[backend]]
name = "dead"
[[backend.server]]
name = "d1"
address = %q
`

// toolsTraffic sends 5 requests answered 200, 3 answered 404, 2 refused
// (503) and a bad request (400), one connection each.
func toolsTraffic(t *testing.T, addr string) {
	t.Helper()
	for _, path := range []string{"/", "/", "/", "/", "/", "/missing", "/missing", "/missing", "/dead/1", "/dead/2"} {
		exchangeStatus(t, addr, "GET "+path+" HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n", false)
	}
	exchangeStatus(t, addr, "BROKEN\r\n\r\n", false)
}

func startToolsProxy(t *testing.T, targets string) string {
	t.Helper()
	u := newUpstream(t, "s1")
	u.handler = func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/missing" {
			http.NotFound(w, r)
			return
		}
		w.Write([]byte("ok\n"))
	}
	cfg, err := conf.Parse("tools.toml", []byte(fmt.Sprintf(toolsConfig, targets, u.addr(), freeAddr(t))))
	if err != nil {
		t.Fatal(err)
	}
	_, addr := startProxy(t, cfg)
	return addr
}

// syslogFileLine turns a received RFC 3164 message into the line a syslog
// daemon writes to a file: the date, the host, then tag[pid]: and the
// text (what halog reads).
var syslogHeader = regexp.MustCompile(`^<\d+>(\w{3} [ \d]\d \d\d:\d\d:\d\d) (.*)$`)

// TestHalogReadsLog runs HAProxy's halog on fulcrum's httplog lines as a
// syslog daemon stores them: the status codes, servers and termination
// states it counts are the traffic's, without a parsing error.
func TestHalogReadsLog(t *testing.T) {
	halog := testutil.NeedTool(t, "halog", "haproxy")
	sink := newSyslogSink(t)
	addr := startToolsProxy(t, fmt.Sprintf(`{ target = "udp@%s", facility = "local0" }`, sink.addr()))
	toolsTraffic(t, addr)
	var file bytes.Buffer
	for i := range 11 {
		m := syslogHeader.FindStringSubmatch(sink.nextRaw(t, i))
		if m == nil {
			t.Fatalf("not an RFC 3164 message: %q", sink.nextRaw(t, i))
		}
		fmt.Fprintf(&file, "%s lb1 %s\n", m[1], m[2])
	}
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(halog, args...)
		cmd.Stdin = bytes.NewReader(file.Bytes())
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		if err := cmd.Run(); err != nil {
			t.Fatalf("halog %v: %v\n%s", args, err, errOut.String())
		}
		if strings.Contains(errOut.String(), "parsing error") && !strings.Contains(errOut.String(), ", 0 parsing errors") {
			t.Errorf("halog %v: %s", args, errOut.String())
		}
		return out.String()
	}
	if got, want := run("-st"), "200 5\n400 1\n404 3\n503 2\n"; got != want {
		t.Errorf("halog -st: got\n%swant\n%s", got, want)
	}
	if got, want := run("-tc"), "-- 8\nPR 1\nSC 2\n"; got != want {
		t.Errorf("halog -tc: got\n%swant\n%s", got, want)
	}
	srv := run("-srv")
	for _, want := range []string{"\ndead/d1 0 0 0 0 2 0 2 ", "\nweb/s1 0 5 0 3 0 0 8 ", "\nwww/<NOSRV> 0 0 0 1 0 0 1 "} {
		if !strings.Contains(srv, want) {
			t.Errorf("halog -srv lacks %q:\n%s", want, srv)
		}
	}
	if got := run("-H", "-c"); got != "11\n" {
		t.Errorf("halog -H -c (HTTP lines): got %q, want 11", got)
	}
}

// TestRsyslogReceivesLog sends the access log to a real syslog daemon,
// rsyslog, over UDP and through a Unix socket as /dev/log, and reads the
// files it writes (and runs halog on one when it is installed).
func TestRsyslogReceivesLog(t *testing.T) {
	rsyslogd := testutil.NeedTool(t, "rsyslogd", "rsyslog")
	// A short directory: Unix socket paths are limited to 107 bytes.
	dir, err := os.MkdirTemp("", "rsl")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	port := strings.TrimPrefix(freeUDP(t), "127.0.0.1:")
	sock := filepath.Join(dir, "log.sock")
	cfgText := fmt.Sprintf(`global(workDirectory=%[1]q)
module(load="imudp")
module(load="imuxsock" SysSock.Use="off")
input(type="imudp" address="127.0.0.1" port=%[2]q)
input(type="imuxsock" Socket=%[3]q CreatePath="on")
local0.* action(type="omfile" file=%[4]q template="RSYSLOG_TraditionalFileFormat")
local1.* action(type="omfile" file=%[5]q template="RSYSLOG_TraditionalFileFormat")
`, dir, port, sock, filepath.Join(dir, "udp.log"), filepath.Join(dir, "unix.log"))
	cfgPath := filepath.Join(dir, "rsyslog.conf")
	if err := os.WriteFile(cfgPath, []byte(cfgText), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(rsyslogd, "-n", "-f", cfgPath, "-i", filepath.Join(dir, "pid"))
	out := &testutil.SyncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("rsyslogd output:\n%s", out)
		}
	})
	testutil.WaitFor(t, 10*time.Second, "rsyslog's socket", func() bool {
		_, err := os.Stat(sock)
		return err == nil
	})
	addr := startToolsProxy(t, fmt.Sprintf(`{ target = "udp@127.0.0.1:%s", facility = "local0" }, { target = %q, facility = "local1" }`, port, sock))
	// rsyslog's UDP input may start after its socket file: resend until
	// the first line lands (a lost datagram is what UDP syslog does).
	// read returns a file's lines but the probes'.
	read := func(name string) []string {
		b, _ := os.ReadFile(filepath.Join(dir, name))
		var lines []string
		for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			if l != "" && !strings.Contains(l, "/probe") {
				lines = append(lines, l)
			}
		}
		return lines
	}
	probed := func(name string) bool {
		b, _ := os.ReadFile(filepath.Join(dir, name))
		return bytes.Contains(b, []byte("/probe"))
	}
	testutil.WaitFor(t, 10*time.Second, "rsyslog to take the log", func() bool {
		exchangeStatus(t, addr, "GET /probe HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n", false)
		return probed("udp.log") && probed("unix.log")
	})
	toolsTraffic(t, addr)
	testutil.WaitFor(t, 10*time.Second, "11 lines in both files", func() bool {
		return len(read("udp.log")) >= 11 && len(read("unix.log")) >= 11
	})
	// The host is the daemon's name for the sender (over UDP it resolves
	// the source address: "localhost").
	line := regexp.MustCompile(`^\w{3} [ \d]\d \d\d:\d\d:\d\d \S+ fulcrum\[` + fmt.Sprint(os.Getpid()) +
		`\]: 127\.0\.0\.1:\d+ \[\d\d/\w{3}/\d{4}:\d\d:\d\d:\d\d\.\d{3}\] www (web/s1|dead/d1|www/<NOSRV>) `)
	for _, f := range []string{"udp.log", "unix.log"} {
		lines := read(f)
		if len(lines) != 11 {
			t.Errorf("%s: %d lines, want 11", f, len(lines))
		}
		for _, l := range lines {
			if !line.MatchString(l) {
				t.Errorf("%s: %q is not an httplog line as a syslog file keeps it", f, l)
			}
		}
	}
	if halog, err := exec.LookPath("halog"); err == nil {
		c := exec.Command(halog, "-st")
		c.Stdin = strings.NewReader(strings.Join(read("udp.log"), "\n") + "\n")
		got, err := c.Output()
		if err != nil || string(got) != "200 5\n400 1\n404 3\n503 2\n" {
			t.Errorf("halog -st on rsyslog's file: got %q (%v)", got, err)
		}
	}
}

// freeUDP returns a loopback UDP address nothing listens on.
func freeUDP(t *testing.T) string {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	return pc.LocalAddr().String()
}

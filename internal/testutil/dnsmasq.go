package testutil

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// RequireTool returns the path of the external program name, which the
// Debian package pkg provides. When it is missing the test fails under
// CI=true (.ci/run installs pkg) and is skipped elsewhere.
func RequireTool(t testing.TB, name, pkg string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err == nil {
		return path
	}
	for _, dir := range []string{"/usr/sbin", "/sbin"} {
		if p := filepath.Join(dir, name); fileExists(p) {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s not found: the CI must install the Debian package %s (.ci/run PKGS)", name, pkg)
	}
	t.Skipf("%s not found: apt-get install %s to run this test", name, pkg)
	return ""
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

// Dnsmasq is a dnsmasq name server a test runs on 127.0.0.1, on a free
// port, authoritative for the names of its hosts file and its srv-host
// records (`local=/test/`: a name it does not have is NXDOMAIN, a type it
// does not have an empty answer). The test rewrites the hosts file with
// SetHosts (dnsmasq rereads it on SIGHUP) and the SRV records with SetSRV
// (dnsmasq rereads srv-host only at start, so it restarts on the same
// port). Stop and Start take it down and back, as a name server that
// fails. It is stopped at the end of the test.
type Dnsmasq struct {
	Addr string // "127.0.0.1:PORT"

	t    testing.TB
	bin  string
	dir  string
	port int

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{} // closed when cmd has exited
	out    *SyncBuffer
	srv    []string
	hosts  []string
}

// StartDnsmasq starts dnsmasq with hosts (lines of a hosts file, "IP
// NAME") and srv (srv-host values: "_http._tcp.svc.test,a1.svc.test,8081,0,10"
// is target a1.svc.test, port 8081, priority 0, weight 10). Records have
// a TTL of 1s.
func StartDnsmasq(t testing.TB, hosts, srv []string) *Dnsmasq {
	t.Helper()
	d := &Dnsmasq{t: t, bin: RequireTool(t, "dnsmasq", "dnsmasq"), dir: t.TempDir(), hosts: hosts, srv: srv}
	var err error
	for range 20 {
		if d.port, err = freeUDPPort(); err != nil {
			t.Fatal(err)
		}
		d.Addr = fmt.Sprintf("127.0.0.1:%d", d.port)
		if err = d.start(); err == nil {
			break
		}
	}
	if err != nil {
		t.Fatalf("dnsmasq: %v", err)
	}
	t.Cleanup(d.Stop)
	return d
}

// freeUDPPort returns a port free for UDP and TCP on 127.0.0.1 now. It is
// taken below the system's ephemeral range when there is room: a port
// from that range, freed for dnsmasq, can be taken meanwhile as the local
// port of any test's outgoing connection, and dnsmasq restarts on its
// port (Stop, Start).
func freeUDPPort() (int, error) {
	lo, hi := 10000, ephemeralLow()
	for range 50 {
		addr := "127.0.0.1:0"
		if hi-lo >= 1000 {
			addr = fmt.Sprintf("127.0.0.1:%d", lo+rand.IntN(hi-lo))
		}
		pc, err := net.ListenPacket("udp", addr)
		if err != nil {
			continue
		}
		port := pc.LocalAddr().(*net.UDPAddr).Port
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		pc.Close()
		if err == nil {
			l.Close()
			return port, nil
		}
	}
	return 0, fmt.Errorf("no free port")
}

// ephemeralLow is the first port of the system's ephemeral range (0 when
// it cannot be read).
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0
	}
	var lo, hi int
	if _, err := fmt.Sscan(string(b), &lo, &hi); err != nil {
		return 0
	}
	return lo
}

// start writes the files and starts dnsmasq, waiting until it answers.
func (d *Dnsmasq) start() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	hosts := filepath.Join(d.dir, "hosts")
	if err := os.WriteFile(hosts, []byte(strings.Join(d.hosts, "\n")+"\n"), 0o644); err != nil {
		return err
	}
	var cfg bytes.Buffer
	fmt.Fprintf(&cfg, "no-resolv\nno-hosts\naddn-hosts=%s\nlocal=/test/\nlisten-address=127.0.0.1\nbind-interfaces\nport=%d\nlocal-ttl=1\n", hosts, d.port)
	for _, s := range d.srv {
		fmt.Fprintf(&cfg, "srv-host=%s\n", s)
	}
	conf := filepath.Join(d.dir, "dnsmasq.conf")
	if err := os.WriteFile(conf, cfg.Bytes(), 0o644); err != nil {
		return err
	}
	args := []string{"--no-daemon", "--conf-file=" + conf, "--pid-file="}
	if os.Geteuid() == 0 {
		args = append(args, "--user=root")
	}
	cmd := exec.Command(d.bin, args...)
	out := &SyncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan struct{})
	go func() {
		cmd.Wait()
		close(exited)
	}()
	d.cmd, d.out, d.exited = cmd, out, exited
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			d.cmd = nil
			return fmt.Errorf("dnsmasq exited: %s", out.String())
		default:
		}
		if strings.Contains(out.String(), "read "+hosts) {
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	cmd.Process.Kill()
	<-exited
	d.cmd = nil
	return fmt.Errorf("dnsmasq did not start: %s", out.String())
}

// Stop stops dnsmasq (its port answers nothing until Start).
func (d *Dnsmasq) Stop() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cmd == nil {
		return
	}
	d.cmd.Process.Kill()
	<-d.exited
	d.cmd = nil
}

// Start starts dnsmasq again on its port, with the current records. A
// port taken meanwhile (by another program's socket) is tried again for
// up to 5 s.
func (d *Dnsmasq) Start() {
	d.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := d.start()
		if err == nil {
			return
		}
		if !strings.Contains(err.Error(), "Address already in use") || time.Now().After(deadline) {
			d.t.Fatalf("dnsmasq: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// SetHosts rewrites the hosts file and makes dnsmasq reread it (SIGHUP).
func (d *Dnsmasq) SetHosts(lines ...string) {
	d.t.Helper()
	d.mu.Lock()
	d.hosts = lines
	path := filepath.Join(d.dir, "hosts")
	err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
	cmd, out := d.cmd, d.out
	d.mu.Unlock()
	if err != nil {
		d.t.Fatal(err)
	}
	if cmd == nil {
		return
	}
	before := strings.Count(out.String(), "read "+path)
	cmd.Process.Signal(syscall.SIGHUP)
	deadline := time.Now().Add(5 * time.Second)
	for strings.Count(out.String(), "read "+path) == before {
		if time.Now().After(deadline) {
			d.t.Fatalf("dnsmasq did not reread its hosts file: %s", out.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// SetSRV replaces the srv-host records: dnsmasq restarts on its port.
func (d *Dnsmasq) SetSRV(srv ...string) {
	d.t.Helper()
	d.Stop()
	d.mu.Lock()
	d.srv = srv
	d.mu.Unlock()
	d.Start()
}

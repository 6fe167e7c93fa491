package check

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fulcrum-proxy/fulcrum/conf"
	"github.com/fulcrum-proxy/fulcrum/proxy"
	"github.com/rs/zerolog"
)

// TestCheckerCPU measures the checker's CPU use with 1,000 servers checked
// by TCP every 100 ms on loopback (10,000 probes a second). The servers'
// listeners run in a child process, so the figure is the checker's own.
// Opt-in, it takes ~12 s:
//
//	FULCRUM_CHECK_BENCH=1 go test ./proxy/check -run TestCheckerCPU -v
func TestCheckerCPU(t *testing.T) {
	if os.Getenv("FULCRUM_CHECK_BENCH") == "" {
		t.Skip("set FULCRUM_CHECK_BENCH=1 to run")
	}
	cmd := exec.Command(os.Args[0], "-test.run=TestHelperListeners")
	cmd.Env = append(os.Environ(), "FULCRUM_CHECK_LISTENERS=50")
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	var addrs []string
	sc := bufio.NewScanner(out)
	for len(addrs) < 50 && sc.Scan() {
		if a, ok := strings.CutPrefix(sc.Text(), "ADDR "); ok {
			addrs = append(addrs, a)
		}
	}
	be := &conf.Backend{Name: "bench", Mode: conf.ModeTCP, Balance: "roundrobin", TimeoutConnect: time.Second,
		Check: &conf.Check{Type: "tcp", Inter: 100 * time.Millisecond, FastInter: 100 * time.Millisecond,
			DownInter: 100 * time.Millisecond, Rise: 2, Fall: 3}}
	for i := 0; i < 1000; i++ {
		be.Servers = append(be.Servers, &conf.Server{Name: fmt.Sprintf("s%d", i), Address: addrs[i%len(addrs)],
			Weight: 1, Check: true, ErrorLimit: 10, OnError: "fail-check"})
	}
	p, err := proxy.New(&conf.Config{Backends: []*conf.Backend{be}}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(p, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	c.Start()
	defer c.Stop()
	time.Sleep(2 * time.Second) // warm-up: every server probed at least once (measurement, not synchronisation)
	var r0, r1 syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &r0)
	start := time.Now()
	time.Sleep(10 * time.Second)
	syscall.Getrusage(syscall.RUSAGE_SELF, &r1)
	wall := time.Since(start)
	cpu := time.Duration(r1.Utime.Nano()-r0.Utime.Nano()) + time.Duration(r1.Stime.Nano()-r0.Stime.Nano())
	up := 0
	for _, s := range p.Snapshot().Backends[0].Servers {
		if s.Check != nil && s.Check.Status == "L4OK" {
			up++
		}
	}
	t.Logf("1000 servers, inter 100ms: %v CPU in %v wall = %.1f%% of one core; %d servers at L4OK",
		cpu.Round(time.Millisecond), wall.Round(time.Millisecond), 100*cpu.Seconds()/wall.Seconds(), up)
	if up != 1000 {
		t.Errorf("servers passing: got %d, want 1000", up)
	}
}

// TestHelperListeners is the child process of TestCheckerCPU: it listens on
// N loopback ports, prints them, and accepts and closes until killed.
func TestHelperListeners(t *testing.T) {
	if os.Getenv("FULCRUM_CHECK_LISTENERS") == "" {
		t.Skip("helper process")
	}
	for i := 0; i < 50; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		fmt.Printf("ADDR %s\n", l.Addr())
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				c.Close()
			}
		}()
	}
	select {}
}

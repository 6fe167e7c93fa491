//go:build linux

// Command uringrelay is the driver of bench/uring.sh (issue 21 point 3):
// the same small-message relay workload through an io_uring relay
// (proxy/netio/uring) and through fulcrum's own relay on the epoll layer
// (proxy/netio/epoll + netio.Relay), each relay alone in its process so
// that its CPU and system calls can be counted. Subcommands:
//
//	uringrelay echo   -listen 127.0.0.1:0 -addrfile F [-hold 600s]
//	    echoes every connection's bytes; writes its address to F; ends on
//	    SIGINT/SIGTERM or after -hold, printing its rusage on stderr.
//	uringrelay relay  -mode uring|epoll|go -upstream A -addrfile F -pairs P [-hold 600s]
//	    accepts on 127.0.0.1:0 (address written to F), dials A for each
//	    client and relays the pair: "uring" on the io_uring relay (one
//	    loop, its own thread), "epoll" with netio.Relay on the epoll layer
//	    (one poller, as fulcrum's default on 2 CPUs), "go" with
//	    netio.Relay on Go's net.Conns. Ends when P pairs have been relayed
//	    and closed (or on a signal, or after -hold), and prints on stderr
//	    its rusage (user and system CPU) and, for uring, the loop's counts.
//	    URING_PEEK=1 in the environment sets the uring relay's PeekFirst,
//	    URING_RAWWAIT=1ms its RawWait, URING_PAST=1 its WaitPastSends.
//	uringrelay client -addr A -conns C -size S -n N [-timeout 120s]
//	    C connections, each writing S bytes and reading them back, N round
//	    trips in all (after one per connection, counted in N's report);
//	    prints "round_trips N seconds T rps R", and its rusage on stderr.
//	uringrelay execfd -addrfile F -fd 100 -- PROGRAM ARGS...
//	    listens on 127.0.0.1:0 (address written to F) and replaces itself
//	    with PROGRAM, the listening socket as descriptor 100: HAProxy as
//	    the relay, with "bind fd@100" (it cannot bind port 0 itself).
//
// Everything is bounded: dials and reads have deadlines, holds end by
// themselves.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/fulcrum-proxy/fulcrum/proxy/netio"
	"github.com/fulcrum-proxy/fulcrum/proxy/netio/epoll"
	"github.com/fulcrum-proxy/fulcrum/proxy/netio/uring"
)

func main() {
	if len(os.Args) < 2 {
		fail(errors.New("usage: uringrelay echo|relay|client [flags]"))
	}
	var err error
	switch os.Args[1] {
	case "echo":
		err = echoCmd(os.Args[2:])
	case "relay":
		err = relayCmd(os.Args[2:])
	case "client":
		err = clientCmd(os.Args[2:])
	case "execfd":
		err = execfdCmd(os.Args[2:])
	default:
		err = fmt.Errorf("unknown subcommand %q", os.Args[1])
	}
	if err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "uringrelay:", err)
	os.Exit(1)
}

// stopped is closed on SIGINT/SIGTERM or when hold passes.
func stopped(hold time.Duration) <-chan struct{} {
	ch := make(chan struct{})
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() {
		select {
		case <-sig:
		case <-time.After(hold):
		}
		close(ch)
	}()
	return ch
}

func listen(addrfile string) (*net.TCPListener, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(addrfile+".tmp", []byte(l.Addr().String()), 0o644); err != nil {
		l.Close()
		return nil, err
	}
	return l.(*net.TCPListener), os.Rename(addrfile+".tmp", addrfile)
}

func echoCmd(args []string) error {
	fs := flag.NewFlagSet("echo", flag.ExitOnError)
	addrfile := fs.String("addrfile", "", "file to write the listening address to")
	hold := fs.Duration("hold", 10*time.Minute, "end after this long")
	fs.Parse(args)
	l, err := listen(*addrfile)
	if err != nil {
		return err
	}
	go func() {
		<-stopped(*hold)
		l.Close()
	}()
	for {
		c, err := l.Accept()
		if err != nil {
			printRusage("rusage:")
			return nil
		}
		go func() {
			defer c.Close()
			c.SetDeadline(time.Now().Add(*hold))
			io.Copy(c, c)
		}()
	}
}

func relayCmd(args []string) error {
	fs := flag.NewFlagSet("relay", flag.ExitOnError)
	mode := fs.String("mode", "uring", "uring, epoll or go")
	upstream := fs.String("upstream", "", "echo server address")
	addrfile := fs.String("addrfile", "", "file to write the listening address to")
	pairs := fs.Int("pairs", 64, "end once this many pairs have been relayed and closed")
	hold := fs.Duration("hold", 10*time.Minute, "end after this long")
	fs.Parse(args)
	var ur *uring.Relay
	var g *epoll.Group
	var err error
	switch *mode {
	case "uring":
		cfg := uring.RelayConfig{PeekFirst: os.Getenv("URING_PEEK") == "1", WaitPastSends: os.Getenv("URING_PAST") == "1"}
		if v := os.Getenv("URING_RAWWAIT"); v != "" {
			if cfg.RawWait, err = time.ParseDuration(v); err != nil {
				return err
			}
		}
		if ur, err = uring.NewRelay(cfg); err != nil {
			return err
		}
	case "epoll":
		if g, err = epoll.NewGroup(1); err != nil {
			return err
		}
		defer g.Unref()
	case "go":
	default:
		return fmt.Errorf("unknown mode %q", *mode)
	}
	tl, err := listen(*addrfile)
	if err != nil {
		return err
	}
	var l net.Listener = tl
	if g != nil {
		if l, err = g.Listen(tl); err != nil {
			return err
		}
	}
	var ended atomic.Int64
	allEnded := make(chan struct{})
	var wg sync.WaitGroup
	stop := stopped(*hold)
	go func() {
		<-stop
		l.Close()
	}()
	for accepted := 0; accepted < *pairs; accepted++ {
		front, err := l.Accept()
		if err != nil {
			break
		}
		back, err := net.DialTimeout("tcp", *upstream, 5*time.Second)
		if err != nil {
			front.Close()
			return err
		}
		switch *mode {
		case "uring":
			ffd, err := uring.Detach(front.(*net.TCPConn))
			if err != nil {
				return err
			}
			bfd, err := uring.Detach(back.(*net.TCPConn))
			if err != nil {
				return err
			}
			if err := ur.Add(ffd, bfd); err != nil {
				return err
			}
		case "epoll":
			if back, err = g.FromTCP(back.(*net.TCPConn)); err != nil {
				return err
			}
			fallthrough
		case "go":
			wg.Add(1)
			go func() {
				defer wg.Done()
				netio.Relay(front, back, 0, 0)
				front.Close()
				back.Close()
				if ended.Add(1) == int64(*pairs) {
					close(allEnded)
				}
			}()
		}
	}
	l.Close()
	if ur != nil {
		// The loop publishes its counts when a pair closes.
		tick := time.NewTicker(20 * time.Millisecond)
	wait:
		for ur.Stats().Closed < uint64(*pairs) {
			select {
			case <-stop:
				break wait
			case <-tick.C:
			}
		}
		tick.Stop()
		ur.Close()
		s := ur.Stats()
		fmt.Fprintf(os.Stderr, "uring: enters %d turns %d cqes %d recvs %d sends %d partial %d rearms %d pairs %d\n",
			s.Enters, s.Turns, s.CQEs, s.Recvs, s.Sends, s.Partial, s.Rearms, s.Pairs)
	} else {
		select {
		case <-allEnded:
		case <-stop:
		}
		wg.Wait()
	}
	printRusage("rusage:")
	return nil
}

// printRusage writes the process's CPU time (all its threads) and
// context switches on stderr.
func printRusage(prefix string) {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	fmt.Fprintf(os.Stderr, "%s user_us %d sys_us %d nvcsw %d nivcsw %d\n", prefix,
		ru.Utime.Sec*1e6+ru.Utime.Usec, ru.Stime.Sec*1e6+ru.Stime.Usec, ru.Nvcsw, ru.Nivcsw)
}

func clientCmd(args []string) error {
	fs := flag.NewFlagSet("client", flag.ExitOnError)
	addr := fs.String("addr", "", "relay address")
	conns := fs.Int("conns", 64, "connections")
	size := fs.Int("size", 64, "message size")
	n := fs.Int("n", 200000, "round trips in all")
	timeout := fs.Duration("timeout", 120*time.Second, "give up after this long")
	fs.Parse(args)
	cs := make([]net.Conn, *conns)
	for i := range cs {
		c, err := net.DialTimeout("tcp", *addr, 5*time.Second)
		if err != nil {
			return err
		}
		c.SetDeadline(time.Now().Add(*timeout))
		cs[i] = c
	}
	// One round trip per connection first, so every pair is set up end to
	// end before the clock starts.
	var left atomic.Int64
	left.Store(int64(*n))
	run := func(c net.Conn, count func() bool) error {
		msg := bytes.Repeat([]byte{'x'}, *size)
		got := make([]byte, *size)
		for count() {
			if _, err := c.Write(msg); err != nil {
				return err
			}
			if _, err := io.ReadFull(c, got); err != nil {
				return err
			}
		}
		return nil
	}
	each := func(f func(c net.Conn) error) error {
		var wg sync.WaitGroup
		errs := make(chan error, len(cs))
		for _, c := range cs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := f(c); err != nil {
					errs <- err
				}
			}()
		}
		wg.Wait()
		close(errs)
		return <-errs
	}
	if err := each(func(c net.Conn) error {
		once := true
		return run(c, func() bool { r := once; once = false; return r })
	}); err != nil {
		return err
	}
	start := time.Now()
	if err := each(func(c net.Conn) error {
		return run(c, func() bool { return left.Add(-1) >= 0 })
	}); err != nil {
		return err
	}
	d := time.Since(start)
	for _, c := range cs {
		c.Close()
	}
	fmt.Printf("round_trips %d seconds %.3f rps %.0f\n", *n+*conns, d.Seconds(), float64(*n)/d.Seconds())
	printRusage("rusage:")
	return nil
}

func execfdCmd(args []string) error {
	fs := flag.NewFlagSet("execfd", flag.ExitOnError)
	addrfile := fs.String("addrfile", "", "file to write the listening address to")
	fd := fs.Int("fd", 100, "descriptor number of the listening socket in PROGRAM")
	fs.Parse(args)
	if fs.NArg() == 0 {
		return errors.New("execfd: no program")
	}
	l, err := listen(*addrfile)
	if err != nil {
		return err
	}
	f, err := l.File()
	if err != nil {
		return err
	}
	// Not close-on-exec: PROGRAM inherits it.
	if err := syscall.Dup3(int(f.Fd()), *fd, 0); err != nil {
		return err
	}
	path, err := exec.LookPath(fs.Arg(0))
	if err != nil {
		return err
	}
	return syscall.Exec(path, fs.Args(), os.Environ())
}

// Command scale is the load client and WebSocket upstream of bench/scale.sh
// (issue 21, point 4: cost as the work grows). Subcommands:
//
//	scale idle  -addr A -n N [-src 127.0.0.1,127.0.0.2] [-hold 300s]
//	    opens N keep-alive connections to A (spread over the source
//	    addresses), sends one GET / on each and reads its response, prints
//	    "ready OK ERRORS" and keeps them open, idle, until a signal ends it
//	    or -hold passes.
//	scale ws    -addr A -n N [-src ...] [-hold 300s]
//	    the same with an HTTP/1.1 WebSocket upgrade (GET /ws, Upgrade:
//	    websocket): each connection must get 101, then echoes 8 bytes through
//	    the tunnel before it goes idle.
//	scale wsup  -listen A
//	    the WebSocket upstream: answers every upgrade with 101 (the
//	    Sec-WebSocket-Accept of RFC 6455) and echoes the tunnel's bytes.
//	scale storm -addr A -c C -d D [-src ...]
//	    a connection storm: C workers each open a connection, send one
//	    request with Connection: close, read the response to the end, close,
//	    and start again, for D; prints "conn/s CONNECTIONS ERRORS".
//
// Everything it does is bounded: dials and reads have deadlines, the hold
// ends by itself.
package main

import (
	"bufio"
	"bytes"
	"crypto/sha1"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fail(errors.New("usage: scale idle|ws|wsup|storm [flags]"))
	}
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	addr := fs.String("addr", "127.0.0.1:8080", "the proxy's address")
	n := fs.Int("n", 1000, "connections to open")
	src := fs.String("src", "", "comma-separated source addresses (default: the kernel's choice)")
	hold := fs.Duration("hold", 300*time.Second, "how long to keep the connections at most")
	listen := fs.String("listen", "127.0.0.1:9101", "wsup: where to listen")
	workers := fs.Int("c", 64, "storm: concurrent workers")
	dur := fs.Duration("d", 5*time.Second, "storm: duration")
	par := fs.Int("par", 64, "idle, ws: dials in parallel")
	fs.Parse(os.Args[2:])
	srcs := sources(*src)
	switch os.Args[1] {
	case "idle", "ws":
		open(*addr, *n, *par, srcs, os.Args[1] == "ws", *hold)
	case "wsup":
		wsUpstream(*listen)
	case "storm":
		storm(*addr, *workers, *dur, srcs)
	default:
		fail(fmt.Errorf("unknown subcommand %q", os.Args[1]))
	}
}

func sources(s string) []*net.TCPAddr {
	var out []*net.TCPAddr
	for _, a := range strings.Split(s, ",") {
		if a = strings.TrimSpace(a); a != "" {
			ip := net.ParseIP(a)
			if ip == nil {
				fail(fmt.Errorf("bad source address %q", a))
			}
			out = append(out, &net.TCPAddr{IP: ip})
		}
	}
	return out
}

func dialer(srcs []*net.TCPAddr, i int) *net.Dialer {
	d := &net.Dialer{Timeout: 10 * time.Second}
	if len(srcs) > 0 {
		d.LocalAddr = srcs[i%len(srcs)]
	}
	return d
}

const (
	getReq = "GET / HTTP/1.1\r\nHost: bench\r\n\r\n"
	wsReq  = "GET /ws HTTP/1.1\r\nHost: bench\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
	closeReq = "GET / HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n\r\n"
)

// open opens n connections, each with one request (or upgrade) done, and
// holds them until stdin closes or hold passes.
func open(addr string, n, par int, srcs []*net.TCPAddr, ws bool, hold time.Duration) {
	conns := make([]net.Conn, n)
	var next, errs atomic.Int64
	var firstErr firstError
	var wg sync.WaitGroup
	for range max(par, 1) {
		wg.Go(func() {
			buf := make([]byte, 4096)
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				c, err := dialer(srcs, i).Dial("tcp", addr)
				if err == nil {
					err = oneExchange(c, buf, ws)
					if err != nil {
						c.Close()
					}
				}
				if err != nil {
					errs.Add(1)
					firstErr.set(err)
					continue
				}
				conns[i] = c
			}
		})
	}
	wg.Wait()
	fmt.Printf("ready %d %d\n", int64(n)-errs.Load(), errs.Load())
	if e := firstErr.get(); e != nil {
		fmt.Fprintln(os.Stderr, "scale: first error:", e)
	}
	time.Sleep(hold) // or until a signal ends the process
	for _, c := range conns {
		if c != nil {
			c.Close()
		}
	}
}

// oneExchange sends one request (or a WebSocket upgrade and an 8-byte echo)
// on c and reads the answer.
func oneExchange(c net.Conn, buf []byte, ws bool) error {
	c.SetDeadline(time.Now().Add(30 * time.Second))
	defer c.SetDeadline(time.Time{})
	req := getReq
	if ws {
		req = wsReq
	}
	if _, err := io.WriteString(c, req); err != nil {
		return err
	}
	status, rest, err := readResponse(c, buf, ws)
	if err != nil {
		return err
	}
	if !ws {
		if status != 200 {
			return fmt.Errorf("status %d", status)
		}
		return nil
	}
	if status != 101 {
		return fmt.Errorf("upgrade answered %d", status)
	}
	if rest != 0 {
		return errors.New("bytes after the 101")
	}
	ping := []byte("ping1234")
	if _, err := c.Write(ping); err != nil {
		return err
	}
	if _, err := io.ReadFull(c, buf[:len(ping)]); err != nil {
		return fmt.Errorf("echo: %w", err)
	}
	if !bytes.Equal(buf[:len(ping)], ping) {
		return errors.New("echo: wrong bytes")
	}
	return nil
}

// readResponse reads a response head and, unless it is a 101, its
// Content-Length body. It returns the status and how many bytes past the
// message it read.
func readResponse(r io.Reader, buf []byte, upgrade bool) (status, extra int, err error) {
	have := 0
	for {
		if have == len(buf) {
			return 0, 0, errors.New("response head too long")
		}
		m, err := r.Read(buf[have:])
		have += m
		if i := bytes.Index(buf[:have], []byte("\r\n\r\n")); i >= 0 {
			head := buf[:i]
			line, _, _ := bytes.Cut(head, []byte("\r\n"))
			f := bytes.Fields(line)
			if len(f) < 2 {
				return 0, 0, fmt.Errorf("bad status line %q", line)
			}
			status, _ = strconv.Atoi(string(f[1]))
			body := 0
			if status != 101 || !upgrade {
				body = contentLength(head)
			}
			end := i + 4 + body
			for have < end {
				if end > len(buf) {
					return 0, 0, errors.New("response body too long")
				}
				m, err := r.Read(buf[have:end])
				have += m
				if err != nil && have < end {
					return 0, 0, err
				}
			}
			return status, have - end, nil
		}
		if err != nil {
			return 0, 0, err
		}
	}
}

func contentLength(head []byte) int {
	for _, l := range bytes.Split(head, []byte("\r\n")) {
		if k, v, ok := bytes.Cut(l, []byte(":")); ok && strings.EqualFold(string(bytes.TrimSpace(k)), "content-length") {
			n, _ := strconv.Atoi(string(bytes.TrimSpace(v)))
			return n
		}
	}
	return 0
}

// wsUpstream answers WebSocket upgrades and echoes the tunnel's bytes.
func wsUpstream(listen string) {
	l, err := net.Listen("tcp", listen)
	if err != nil {
		fail(err)
	}
	for {
		c, err := l.Accept()
		if err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				continue
			}
			fail(err)
		}
		go serveWS(c)
	}
}

func serveWS(c net.Conn) {
	defer c.Close()
	br := bufio.NewReaderSize(c, 1024)
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	key := ""
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			break
		}
		if k, v, ok := strings.Cut(line, ":"); ok && strings.EqualFold(k, "Sec-WebSocket-Key") {
			key = strings.TrimSpace(v)
		}
	}
	if key == "" { // a plain request: answer it and close
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nConnection: close\r\n\r\nok\n")
		return
	}
	h := sha1.Sum([]byte(key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
	io.WriteString(c, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
		"Sec-WebSocket-Accept: "+base64.StdEncoding.EncodeToString(h[:])+"\r\n\r\n")
	c.SetReadDeadline(time.Time{})
	io.Copy(c, br) // echo until the proxy closes
}

// storm opens, uses once and closes connections with c workers for d.
func storm(addr string, workers int, d time.Duration, srcs []*net.TCPAddr) {
	var ok, errs atomic.Int64
	var firstErr firstError
	end := time.Now().Add(d)
	start := time.Now()
	var wg sync.WaitGroup
	for w := range max(workers, 1) {
		wg.Go(func() {
			buf := make([]byte, 4096)
			for i := w; time.Now().Before(end); i += workers {
				c, err := dialer(srcs, i).Dial("tcp", addr)
				if err == nil {
					c.SetDeadline(time.Now().Add(10 * time.Second))
					if _, err = io.WriteString(c, closeReq); err == nil {
						var st int
						st, _, err = readResponse(c, buf, false)
						if err == nil && st != 200 {
							err = fmt.Errorf("status %d", st)
						}
					}
					c.Close()
				}
				if err != nil {
					errs.Add(1)
					firstErr.set(err)
					continue
				}
				ok.Add(1)
			}
		})
	}
	wg.Wait()
	el := time.Since(start).Seconds()
	fmt.Printf("%.0f %d %d\n", float64(ok.Load())/el, ok.Load(), errs.Load())
	if e := firstErr.get(); e != nil {
		fmt.Fprintln(os.Stderr, "scale: first error:", e)
	}
}

// firstError keeps the first error of many goroutines.
type firstError struct {
	mu  sync.Mutex
	err error
}

func (f *firstError) set(err error) {
	f.mu.Lock()
	if f.err == nil {
		f.err = err
	}
	f.mu.Unlock()
}

func (f *firstError) get() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "scale:", err)
	os.Exit(1)
}

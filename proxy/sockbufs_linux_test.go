package proxy

import (
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/fulcrum-proxy/fulcrum/conf"
)

// socketBufs finds, among this process's descriptors, the TCP socket
// from local to remote and returns its SO_SNDBUF and SO_RCVBUF (the proxy
// runs in the test's process: its sockets are ours to look at).
func socketBufs(t *testing.T, local, remote string) (snd, rcv int) {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	for _, e := range ents {
		fd, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if l, err := os.Readlink("/proc/self/fd/" + e.Name()); err != nil || !strings.HasPrefix(l, "socket:") {
			continue
		}
		la, err1 := syscall.Getsockname(fd)
		ra, err2 := syscall.Getpeername(fd)
		if err1 != nil || err2 != nil || sockaddrString(la) != local || sockaddrString(ra) != remote {
			continue
		}
		snd, err1 = syscall.GetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_SNDBUF)
		rcv, err2 = syscall.GetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_RCVBUF)
		if err1 != nil || err2 != nil {
			t.Fatalf("getsockopt: %v, %v", err1, err2)
		}
		return snd, rcv
	}
	t.Fatalf("no socket from %s to %s in this process", local, remote)
	return 0, 0
}

func sockaddrString(sa syscall.Sockaddr) string {
	if a, ok := sa.(*syscall.SockaddrInet4); ok {
		return net.JoinHostPort(net.IP(a.Addr[:]).String(), strconv.Itoa(a.Port))
	}
	return ""
}

// TestSocketBufs: tune_sndbuf_client/tune_rcvbuf_client reach the client
// connections (through the listening socket) and
// tune_sndbuf_server/tune_rcvbuf_server the server connections; Linux
// reports twice the size set. Without them the kernel sizes the buffers
// itself (not the values set here).
func TestSocketBufs(t *testing.T) {
	for _, set := range []bool{true, false} {
		t.Run(map[bool]string{true: "set", false: "unset"}[set], func(t *testing.T) {
			up := newUpstream(t, "s1")
			var from string // the proxy's end of its server connection
			up.handler = func(w http.ResponseWriter, r *http.Request) {
				up.mu.Lock()
				from = r.RemoteAddr
				up.mu.Unlock()
				io.WriteString(w, "ok")
			}
			cfg := testConfig(conf.ModeHTTP, []string{up.addr()}, nil)
			if set {
				cfg.Global.ClientBufs = conf.SocketBufs{Snd: 12288, Rcv: 10240}
				cfg.Global.ServerBufs = conf.SocketBufs{Snd: 14336, Rcv: 6144}
			}
			_, addr := startProxy(t, cfg)
			rc := dialRaw(t, addr)
			if r := rc.do(t, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); r.StatusCode != 200 {
				t.Fatalf("status %d", r.StatusCode)
			}
			cs, cr := socketBufs(t, addr, rc.c.LocalAddr().String())
			up.mu.Lock()
			proxyEnd := from
			up.mu.Unlock()
			ss, sr := socketBufs(t, proxyEnd, up.addr())
			got := [4]int{cs, cr, ss, sr}
			want := [4]int{2 * 12288, 2 * 10240, 2 * 14336, 2 * 6144}
			if set && got != want {
				t.Fatalf("client snd/rcv, server snd/rcv: %v, want %v", got, want)
			}
			if !set {
				for i, v := range got {
					if v == want[i] {
						t.Fatalf("unset, buffer %d is %d: the value of the set case", i, v)
					}
				}
			}
		})
	}
}

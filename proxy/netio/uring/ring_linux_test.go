package uring

import (
	"errors"
	"os"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// newRing sets up a ring for a test, or skips when the kernel refuses
// io_uring (EPERM: disabled by sysctl, ENOSYS: not built). With CI=true a
// refusal fails: CI's kernel has it.
func newRing(t *testing.T, entries uint32) *Ring {
	t.Helper()
	r, err := New(entries, 0)
	if err != nil {
		if (errors.Is(err, unix.EPERM) || errors.Is(err, unix.ENOSYS)) && os.Getenv("CI") != "true" {
			t.Skipf("io_uring refused by this kernel: %v", err)
		}
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// socketpair returns a connected pair of stream sockets.
func socketpair(t *testing.T) (int, int) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fds[0]); unix.Close(fds[1]) })
	return fds[0], fds[1]
}

// waitOne submits what is prepared and returns the next completion,
// failing the test after 5 s.
func waitOne(t *testing.T, r *Ring) CQE {
	t.Helper()
	var c [1]CQE
	deadline := time.Now().Add(5 * time.Second)
	for {
		if r.Reap(c[:]) == 1 {
			return c[0]
		}
		left := time.Until(deadline)
		if left <= 0 {
			t.Fatal("no completion within 5 s")
		}
		if _, err := r.SubmitAndWaitTimeout(1, left); err != nil && !errors.Is(err, unix.ETIME) {
			t.Fatal(err)
		}
	}
}

func TestProbe(t *testing.T) {
	r := newRing(t, 8)
	p, err := r.Probe()
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range []uint8{OpNop, OpRead, OpSend, OpRecv, OpAsyncCancel, OpShutdown} {
		if !p.Supported(op) {
			t.Errorf("opcode %d not supported (last op %d)", op, p.LastOp)
		}
	}
	if p.Supported(255) {
		t.Error("opcode 255 reported supported")
	}
}

func TestSizes(t *testing.T) {
	if unsafe.Sizeof(SQE{}) != 64 || unsafe.Sizeof(CQE{}) != 16 || unsafe.Sizeof(params{}) != 120 {
		t.Fatalf("sizes: sqe %d cqe %d params %d", unsafe.Sizeof(SQE{}), unsafe.Sizeof(CQE{}), unsafe.Sizeof(params{}))
	}
	r := newRing(t, 8)
	if r.SQEntries() != 8 || r.CQEntries() != 16 {
		t.Fatalf("entries: sq %d cq %d, want 8 16", r.SQEntries(), r.CQEntries())
	}
}

func TestNopAndFullQueue(t *testing.T) {
	r := newRing(t, 4)
	for i := range 4 {
		s := r.GetSQE()
		if s == nil {
			t.Fatalf("no SQE at %d", i)
		}
		s.PrepNop(uint64(100 + i))
	}
	if r.GetSQE() != nil {
		t.Fatal("fifth SQE from a 4-entry ring")
	}
	if r.Pending() != 4 {
		t.Fatalf("pending %d, want 4", r.Pending())
	}
	n, err := r.SubmitAndWaitTimeout(4, 5*time.Second)
	if err != nil || n != 4 {
		t.Fatalf("submit: %d, %v", n, err)
	}
	var c [8]CQE
	if got := r.Reap(c[:]); got != 4 {
		t.Fatalf("reaped %d, want 4", got)
	}
	for i := range 4 {
		if c[i].UserData != uint64(100+i) || c[i].Res != 0 || c[i].Err() != nil {
			t.Errorf("cqe %d: %+v", i, c[i])
		}
	}
	if r.GetSQE() == nil {
		t.Fatal("no SQE after the kernel took the first four")
	}
}

func TestWaitTimeout(t *testing.T) {
	r := newRing(t, 4)
	start := time.Now()
	_, err := r.SubmitAndWaitTimeout(1, 20*time.Millisecond)
	if !errors.Is(err, unix.ETIME) {
		t.Fatalf("err %v, want ETIME", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("waited %v", d)
	}
}

func TestSendRecv(t *testing.T) {
	r := newRing(t, 8)
	a, b := socketpair(t)
	out := []byte("hello, ring")
	in := make([]byte, 64)
	r.GetSQE().PrepSend(a, unsafe.Pointer(&out[0]), uint32(len(out)), 0, 1)
	if c := waitOne(t, r); c.UserData != 1 || c.Res != int32(len(out)) {
		t.Fatalf("send: %+v", c)
	}
	r.GetSQE().PrepRecv(b, unsafe.Pointer(&in[0]), uint32(len(in)), 0, 2)
	c := waitOne(t, r)
	if c.UserData != 2 || c.Res != int32(len(out)) || string(in[:c.Res]) != "hello, ring" {
		t.Fatalf("recv: %+v %q", c, in[:max(c.Res, 0)])
	}
	if _, ok := c.BufID(); ok {
		t.Fatal("recv into a given buffer reports a provided buffer")
	}
}

func TestRecvMultishot(t *testing.T) {
	r := newRing(t, 8)
	br, err := r.NewBufRing(7, 4, 128)
	if err != nil {
		t.Fatal(err)
	}
	defer br.Close()
	a, b := socketpair(t)
	r.GetSQE().PrepRecvMultishot(b, br.Group(), 9)
	if _, err := r.Submit(); err != nil {
		t.Fatal(err)
	}
	// Ten messages through a ring of 4 buffers, each recycled once read:
	// the ids come round in ring order.
	const n = 10
	for i := range n {
		msg := []byte{'m', byte('0' + i)}
		if _, err := unix.Write(a, msg); err != nil {
			t.Fatal(err)
		}
		c := waitOne(t, r)
		id, ok := c.BufID()
		if c.UserData != 9 || c.Res != 2 || !ok || !c.More() {
			t.Fatalf("message %d: %+v", i, c)
		}
		br.Taken()
		if id != uint16(i%4) {
			t.Errorf("message %d in buffer %d, want %d", i, id, i%4)
		}
		if got := string(br.Buf(id)[:c.Res]); got != string(msg) {
			t.Errorf("message %d: %q, want %q", i, got, msg)
		}
		br.Recycle(id)
		if br.Out() != 0 {
			t.Fatalf("out %d after recycling", br.Out())
		}
	}
	// The peer closes: a last completion with Res 0 and no F_MORE.
	unix.Close(a)
	c := waitOne(t, r)
	if c.UserData != 9 || c.Res != 0 || c.More() {
		t.Fatalf("after close: %+v", c)
	}
}

func TestRecvMultishotNoBuffers(t *testing.T) {
	r := newRing(t, 8)
	br, err := r.NewBufRing(1, 2, 64)
	if err != nil {
		t.Fatal(err)
	}
	defer br.Close()
	a, b := socketpair(t)
	r.GetSQE().PrepRecvMultishot(b, br.Group(), 5)
	if _, err := r.Submit(); err != nil {
		t.Fatal(err)
	}
	// Two messages use both buffers, not recycled: the third arrival
	// ends the request with ENOBUFS, and stays in the socket.
	var ids []uint16
	for i := range 3 {
		if _, err := unix.Write(a, []byte{byte('a' + i)}); err != nil {
			t.Fatal(err)
		}
		c := waitOne(t, r)
		if i < 2 {
			id, ok := c.BufID()
			if c.Res != 1 || !ok || !c.More() {
				t.Fatalf("message %d: %+v", i, c)
			}
			br.Taken()
			ids = append(ids, id)
			continue
		}
		if !errors.Is(c.Err(), unix.ENOBUFS) || c.More() {
			t.Fatalf("third: %+v (%v), want ENOBUFS, ended", c, c.Err())
		}
	}
	if br.Out() != 2 {
		t.Fatalf("out %d, want 2", br.Out())
	}
	// Recycled and re-armed, the request gets the waiting byte.
	br.Recycle(ids...)
	br.Recycle(0, 1, 99) // more than the ring holds, and out of range: ignored
	if br.Out() != 0 {
		t.Fatalf("out %d after recycling, want 0", br.Out())
	}
	r.GetSQE().PrepRecvMultishot(b, br.Group(), 6)
	c := waitOne(t, r)
	id, ok := c.BufID()
	if c.UserData != 6 || c.Res != 1 || !ok || br.Buf(id)[0] != 'c' {
		t.Fatalf("after re-arm: %+v", c)
	}
	if br.Buf(99) != nil {
		t.Fatal("buffer 99 of a 2-buffer ring")
	}
}

func TestErrors(t *testing.T) {
	r := newRing(t, 8)
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(p[0])
	defer unix.Close(p[1])
	buf := make([]byte, 8)
	// recv on a pipe: ENOTSOCK; on a closed descriptor: EBADF; send on a
	// socket whose peer is gone: EPIPE.
	r.GetSQE().PrepRecv(p[0], unsafe.Pointer(&buf[0]), 8, 0, 1)
	if c := waitOne(t, r); !errors.Is(c.Err(), unix.ENOTSOCK) || c.Res != -int32(unix.ENOTSOCK) {
		t.Fatalf("recv on a pipe: %+v %v", c, c.Err())
	}
	r.GetSQE().PrepRecv(1<<20, unsafe.Pointer(&buf[0]), 8, 0, 2)
	if c := waitOne(t, r); !errors.Is(c.Err(), unix.EBADF) {
		t.Fatalf("recv on a bad fd: %+v %v", c, c.Err())
	}
	a, b := socketpair(t)
	unix.Close(b)
	r.GetSQE().PrepSend(a, unsafe.Pointer(&buf[0]), 8, unix.MSG_NOSIGNAL, 3)
	if c := waitOne(t, r); !errors.Is(c.Err(), unix.EPIPE) {
		t.Fatalf("send to a closed peer: %+v %v", c, c.Err())
	}
	// A recv of a buffer group that does not exist.
	r.GetSQE().PrepRecvMultishot(a, 4242, 4)
	if c := waitOne(t, r); !errors.Is(c.Err(), unix.ENOBUFS) || c.More() {
		t.Fatalf("recv from a missing group: %+v %v", c, c.Err())
	}
}

func TestClosed(t *testing.T) {
	r := newRing(t, 4)
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal("second close:", err)
	}
	if r.GetSQE() != nil || r.Ready() != 0 || r.Reap(make([]CQE, 1)) != 0 {
		t.Fatal("closed ring hands out entries")
	}
	if _, err := r.SubmitAndWait(1); !errors.Is(err, ErrClosed) {
		t.Fatalf("submit on a closed ring: %v", err)
	}
	if _, err := r.Probe(); !errors.Is(err, ErrClosed) {
		t.Fatalf("probe on a closed ring: %v", err)
	}
	if _, err := r.NewBufRing(1, 2, 8); !errors.Is(err, ErrClosed) {
		t.Fatalf("buffer ring on a closed ring: %v", err)
	}
}

func TestBadShapes(t *testing.T) {
	r := newRing(t, 4)
	for _, s := range [][2]int{{0, 8}, {3, 8}, {4, 0}, {4, 2 << 20}} {
		if _, err := r.NewBufRing(1, uint16(s[0]), s[1]); err == nil {
			t.Errorf("shape %v accepted", s)
		}
	}
	if _, err := New(4, 1<<14); err == nil {
		t.Error("NO_MMAP accepted")
	}
}

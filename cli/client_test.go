package cli

import (
	"bufio"
	"errors"
	"net"
	"path/filepath"
	"testing"
	"time"
)

func TestRunAgainstFakeSocket(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.sock")
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		line, _ := bufio.NewReader(c).ReadString('\n')
		c.Write([]byte("got: " + line + "\n"))
	}()
	got, err := Run(Addr(path), "show info", 5*time.Second)
	if err != nil || got != "got: show info\n\n" {
		t.Errorf("got %q %v, want %q", got, err, "got: show info\n\n")
	}
}

func TestRunUnreachable(t *testing.T) {
	_, err := Run(Addr(filepath.Join(t.TempDir(), "missing.sock")), "help", time.Second)
	if !errors.Is(err, ErrUnreachable) {
		t.Errorf("got %v, want ErrUnreachable", err)
	}
}

//go:build !linux

// Command uringrelay needs Linux (io_uring, the epoll layer).
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "uringrelay: Linux only")
	os.Exit(2)
}

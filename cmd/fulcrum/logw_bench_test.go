package main

import (
	"os"
	"testing"
)

// BenchmarkAsyncLogWrite: the cost of one access-log line on the request
// path (queued, written by the log's goroutine to /dev/null).
func BenchmarkAsyncLogWrite(b *testing.B) {
	f, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	l := newAsyncLog(f, false)
	defer l.Close()
	line := []byte(`{"level":"info","client_ip":"127.0.0.1","client_port":40740,"frontend":"www","backend":"web","server":"s1","status":200,"bytes_read":119,"request":"GET / HTTP/1.1"}` + "\n")
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			l.Write(line)
		}
	})
}

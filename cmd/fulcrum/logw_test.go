package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestAsyncLogStalledReader: lines written while nobody reads the log's
// pipe do not block the writer; those the ring could not hold are dropped
// and counted in a line of their own, in the log's format, and every line
// that arrives is whole. Once the pipe is read, Close writes out the rest.
func TestAsyncLogStalledReader(t *testing.T) {
	for _, console := range []bool{false, true} {
		t.Run(map[bool]string{false: "json", true: "console"}[console], func(t *testing.T) {
			testAsyncLogStalled(t, console)
		})
	}
}

// consoleDropped is the console form of the line saying lines were dropped.
var consoleDropped = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ WRN log lines dropped: the log's reader did not keep up dropped=(\d+)$`)

func testAsyncLogStalled(t *testing.T, console bool) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	l := newAsyncLog(w, console)
	const total = 20000 // 2 MB: far past a pipe's 64 KiB and the ring
	wrote := make(chan struct{})
	go func() {
		defer close(wrote)
		for i := range total {
			fmt.Fprintf(l, `{"level":"info","n":%d,"pad":"%s"}`+"\n", i, strings.Repeat("x", 64))
		}
	}()
	select {
	case <-wrote:
	case <-time.After(30 * time.Second):
		t.Fatal("writes blocked on a pipe nobody reads")
	}

	got := make(chan [2]int64)
	go func() {
		var lines, dropped int64
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			if m := consoleDropped.FindStringSubmatch(sc.Text()); m != nil {
				if !console {
					t.Errorf("a console drop line in the JSON log: %q", sc.Text())
				}
				n, _ := strconv.ParseInt(m[1], 10, 64)
				dropped += n
				continue
			}
			var m struct {
				N       *int64 `json:"n"`
				Level   string `json:"level"`
				Dropped int64  `json:"dropped"`
				Message string `json:"message"`
			}
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				t.Errorf("a line is not whole: %q", sc.Text())
				continue
			}
			switch {
			case m.N != nil:
				lines++
			case m.Level == "warn" && m.Message == droppedMsg && !console:
				dropped += m.Dropped
			default:
				t.Errorf("unexpected line %q", sc.Text())
			}
		}
		got <- [2]int64{lines, dropped}
	}()
	l.Close()
	w.Close()
	res := <-got
	if res[1] == 0 || res[1] != l.Dropped() {
		t.Errorf("drop lines say %d dropped, the writer counted %d (want the same, > 0)", res[1], l.Dropped())
	}
	if res[0]+res[1] != total {
		t.Errorf("%d lines arrived and %d were dropped: want %d in all", res[0], res[1], total)
	}
	// The pipe holds about 700 of these lines; the rest came from the ring.
	if res[0] < 1000 {
		t.Errorf("only %d lines arrived: want the pipe's and the ring's", res[0])
	}
}

// TestAsyncLogFlushes: with a reader keeping up, every line arrives, in
// order, by Close.
func TestAsyncLogFlushes(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	got := make(chan []string)
	go func() {
		var lines []string
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			lines = append(lines, sc.Text())
		}
		got <- lines
	}()
	l := newAsyncLog(w, false)
	for i := range 100 {
		fmt.Fprintf(l, "line %d\n", i)
	}
	l.Close()
	w.Close()
	lines := <-got
	if len(lines) != 100 || l.Dropped() != 0 {
		t.Fatalf("%d lines arrived, %d dropped: want 100, 0", len(lines), l.Dropped())
	}
	for i, s := range lines {
		if want := fmt.Sprintf("line %d", i); s != want {
			t.Fatalf("line %d is %q, want %q", i, s, want)
		}
	}
}

package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-proxy/fulcrum/conf"
	"github.com/rs/zerolog"
)

// TestLogDuration: log values carry their unit and three significant
// digits (issue 23: "took":3.97 read as seconds).
func TestLogDuration(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{0, "0s"},
		{850 * time.Nanosecond, "850ns"},
		{123456 * time.Nanosecond, "123µs"},
		{3972 * time.Microsecond, "3.97ms"},
		{15263 * time.Microsecond, "15.3ms"},
		{152340 * time.Microsecond, "152ms"},
		{1237 * time.Millisecond, "1.24s"},
		{30 * time.Second, "30s"},
		{150 * time.Second, "2m30s"},
	} {
		if got := logDuration(tc.d).String(); got != tc.want {
			t.Errorf("logDuration(%v) = %q, want %q", tc.d, got, tc.want)
		}
	}
}

// TestLogConfigErrors: a refused configuration logs one line per problem,
// then one line with the count.
func TestLogConfigErrors(t *testing.T) {
	_, err := conf.Parse("f.toml", []byte("[global]\nmaxconns = 1\n[[backend]]\nname = \"b\"\n[[backend.server]]\nname = \"s\"\naddress = \"127.0.0.1:1\"\nweight = 300\n"))
	if err == nil {
		t.Fatal("the configuration should be invalid")
	}
	var buf bytes.Buffer
	logConfigErrors(zerolog.New(&buf), "f.toml", err, "reload refused")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	want := []string{
		`f.toml:2: unknown key "maxconns" in [global]; did you mean "maxconn"?`,
		`f.toml:8: backend "b": server "s": weight: must be 0..256, got 300`,
	}
	if len(lines) != len(want)+1 {
		t.Fatalf("got %d lines, want %d:\n%s", len(lines), len(want)+1, buf.String())
	}
	for i, w := range want {
		var m map[string]any
		json.Unmarshal([]byte(lines[i]), &m)
		if m["error"] != w {
			t.Errorf("line %d: error %q, want %q", i+1, m["error"], w)
		}
	}
	var last map[string]any
	json.Unmarshal([]byte(lines[len(lines)-1]), &last)
	if last["message"] != "reload refused" || last["errors"] != float64(2) || last["file"] != "f.toml" {
		t.Errorf("summary line: %s", lines[len(lines)-1])
	}
}

package conf

import (
	"strings"
	"testing"
	"time"
)

func TestParseDuration(t *testing.T) {
	tests := []struct {
		in      string
		want    time.Duration
		wantErr string // a part of the error; "" means no error
	}{
		{in: "500ms", want: 500 * time.Millisecond},
		{in: "5s", want: 5 * time.Second},
		{in: "2m", want: 2 * time.Minute},
		{in: "1h30m", want: 90 * time.Minute},
		{in: "0s", want: 0},
		{in: "1d", want: 24 * time.Hour},
		{in: "0d", want: 0},
		{in: "1d12h", want: 36 * time.Hour},
		{in: "1.5s", want: 1500 * time.Millisecond},
		{in: "5000", wantErr: `duration needs a unit, got "5000"`},
		{in: "0", wantErr: `duration needs a unit, got "0"`},
		{in: "2.5", wantErr: `duration needs a unit, got "2.5"`},
		{in: "-1s", wantErr: `must not be negative, got "-1s"`},
		{in: "1d-5h", wantErr: `must not be negative`},
		{in: "5 s", wantErr: `not a duration`},
		{in: "10x", wantErr: `not a duration`},
		{in: "", wantErr: `not a duration`},
		{in: "1.5d", wantErr: `not a duration`},
		{in: "99999999999d", wantErr: `out of range`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseDuration(tt.in)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("got error %v, want %v", err, tt.want)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("got %v, %v; want an error containing %q", got, err, tt.wantErr)
			case tt.wantErr == "" && got.Std() != tt.want:
				t.Fatalf("got %v, want %v", got.Std(), tt.want)
			}
		})
	}
}

func TestDurationString(t *testing.T) {
	tests := []struct {
		d    time.Duration
		want string
	}{
		{0, "0s"},
		{500 * time.Millisecond, "500ms"},
		{2 * time.Minute, "2m"},
		{90 * time.Second, "1m30s"},
		{time.Hour, "1h"},
		{time.Hour + time.Second, "1h0m1s"},
		{36 * time.Hour, "36h"},
	}
	for _, tt := range tests {
		got := Duration(tt.d).String()
		if got != tt.want {
			t.Errorf("Duration(%v).String(): got %q, want %q", tt.d, got, tt.want)
		}
		back, err := ParseDuration(got)
		if err != nil || back.Std() != tt.d {
			t.Errorf("ParseDuration(%q): got %v, %v; want %v", got, back, err, tt.d)
		}
	}
}

func TestDurationUnmarshalText(t *testing.T) {
	var d Duration
	if err := d.UnmarshalText([]byte("2m")); err != nil || d.Std() != 2*time.Minute {
		t.Errorf("got %v, %v; want 2m", d, err)
	}
	if err := d.UnmarshalText([]byte("120")); err == nil {
		t.Errorf("got no error for a bare number, want one")
	}
	if b, _ := Duration(2 * time.Minute).MarshalText(); string(b) != "2m" {
		t.Errorf("MarshalText: got %q, want %q", b, "2m")
	}
}

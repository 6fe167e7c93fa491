package main

import (
	"errors"
	"time"

	"github.com/fulcrum-proxy/fulcrum/conf"
	"github.com/rs/zerolog"
)

// logDuration is a duration as the daemon's log lines print it: with its
// unit and three significant digits ("3.97ms", "152ms", "1.24s"), not
// zerolog's bare number of milliseconds, which reads as seconds as easily
// as milliseconds (issue 23).
type logDuration time.Duration

// String returns d rounded to three significant digits, with its unit.
func (d logDuration) String() string {
	v := time.Duration(d)
	switch {
	case v >= 100*time.Second:
		v = v.Round(time.Second)
	case v >= 10*time.Second:
		v = v.Round(100 * time.Millisecond)
	case v >= time.Second:
		v = v.Round(10 * time.Millisecond)
	case v >= 100*time.Millisecond:
		v = v.Round(time.Millisecond)
	case v >= 10*time.Millisecond:
		v = v.Round(100 * time.Microsecond)
	case v >= time.Millisecond:
		v = v.Round(10 * time.Microsecond)
	case v >= 100*time.Microsecond:
		v = v.Round(time.Microsecond)
	}
	return v.String()
}

// logConfigErrors logs a configuration that cannot be used: one line per
// problem (`FILE:LINE: message` in "error"), then one line saying what
// happens (msg, e.g. "reload refused: the running configuration keeps
// serving") with the number of problems. An error that is not a list of
// problems is logged on one line.
func logConfigErrors(log zerolog.Logger, file string, err error, msg string) {
	var errs *conf.Errors
	if !errors.As(err, &errs) {
		log.Error().Err(err).Str("file", file).Msg(msg)
		return
	}
	for _, e := range errs.List {
		log.Error().Str("error", e.Error()).Msg("invalid configuration")
	}
	log.Error().Str("file", file).Int("errors", len(errs.List)).Msg(msg)
}

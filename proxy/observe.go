package proxy

import "github.com/rs/zerolog"

// startObservers starts what runs beside the traffic of a started proxy:
// the log senders and the history sampler. They stop with the proxy
// (Shutdown).
func (p *Proxy) startObservers() {
	p.startLogs()
	p.runHistory(p.Conf.Global.StatsHistoryInterval)
}

// Logger returns the proxy's logger (events, the access log on stderr),
// for what logs on its behalf (the stats page's admin actions).
func (p *Proxy) Logger() *zerolog.Logger { return &p.log }

// LogDrops returns the access log lines lost on the way to the log
// targets: dropped because a target's queue was full, or not taken by an
// unreachable target (HAProxy's dropped_logs).
func (p *Proxy) LogDrops() int64 {
	var n int64
	for _, s := range p.obs.senders {
		n += s.Dropped() + s.Errors()
	}
	return n
}

// Listeners returns the number of listening sockets.
func (p *Proxy) Listeners() int {
	n := 0
	for _, fe := range p.Frontends {
		n += len(fe.Addrs())
	}
	return n
}

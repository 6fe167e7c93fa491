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

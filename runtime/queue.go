package runtime

import (
	"time"

	"github.com/fulcrum-proxy/fulcrum/proxy"
)

// Queue commands: the requests waiting for a server slot (proxy/queue).
var queueCommands = []Command{
	{Words: []string{"show", "queue"}, Level: LevelUser, Usage: "show queue [<backend>]", Help: "show the requests waiting for a server slot, per backend and server", Run: showQueue},
}

// showQueue prints one line per queue: the backend queue (server "-",
// requests any server may take; the server columns are "-") then each server's own queue (requests
// pinned to it), for every backend or the one named. Columns: waiting now
// (qcur), peak (qmax), the oldest request's wait in ms, the server's
// maxqueue (qlimit, 0 = none), its effective maxconn (dynamic with minconn
// and fullconn, 0 = none), its current sessions, and the backend's
// timeout queue in ms (timeout connect when unset).
func showQueue(c *Context, args []string) error {
	backends := c.Proxy.Backends
	if name := arg(args, 0); name != "" {
		b := c.Proxy.Backend(name)
		if b == nil {
			return reply("No such backend.")
		}
		backends = []*proxy.Backend{b}
	}
	now := time.Now()
	c.Printf("# be_name srv_name qcur qmax oldest_ms maxqueue maxconn scur timeout_queue_ms\n")
	for _, b := range backends {
		tq := b.TimeoutQueue().Milliseconds()
		for _, q := range b.Queues(now) {
			srv := q.Server
			if srv == "" {
				srv = "-"
				c.Printf("%s %s %d %d %d - - - %d\n", b.Name, srv, q.Waiting, q.Max, q.Oldest.Milliseconds(), tq)
				continue
			}
			c.Printf("%s %s %d %d %d %d %d %d %d\n", b.Name, srv, q.Waiting, q.Max, q.Oldest.Milliseconds(), q.MaxQueue, q.MaxConn, q.Cur, tq)
		}
	}
	return nil
}

package runtime

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/user"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fulcrum-proxy/fulcrum/proxy"
	"github.com/fulcrum-proxy/fulcrum/proxy/check"
	"github.com/fulcrum-proxy/fulcrum/proxy/peers"
	"github.com/fulcrum-proxy/fulcrum/stats"
	"github.com/rs/zerolog"
)

// DefaultTimeout is a session's idle timeout when Options.Timeout is 0, as
// HAProxy's `stats timeout`.
const DefaultTimeout = 10 * time.Second

// DefaultMode is a Unix socket's permissions when Socket.Mode is 0.
const DefaultMode os.FileMode = 0o600

// DefaultMaxConn is how many sessions a socket serves at once when
// Socket.MaxConn is 0: HAProxy's `stats maxconn` default. Clients past it
// wait in the kernel's listen queue, unaccepted (no descriptor, no
// goroutine, no CPU), and are served in turn as sessions end, as HAProxy
// does; only when that queue is full (net.core.somaxconn) is a connect
// refused by the kernel (EAGAIN on a Unix socket, a reset or a timeout on
// TCP).
const DefaultMaxConn = 10

// Options are the process-wide settings of the Runtime API.
type Options struct {
	// Version is what `show version` and `show info` report.
	Version string
	// Timeout closes a session that completes no command line for this
	// long. 0 means DefaultTimeout.
	Timeout time.Duration
	// Facts returns the process facts `show info` prints (pid, version,
	// node, goroutines...). nil means the runtime package's own guess.
	Facts func() stats.ProcessFacts
	// Reload, if non-nil, reloads the configuration for the `reload`
	// command: it returns the errors of an invalid file (nothing changed
	// then). The daemon then calls SetProxy with the new proxy.
	Reload func() error
	// Peers, if non-nil, gives the state of the [[peers]] sections for
	// `show peers`; nil means none.
	Peers func() []peers.Status
}

// Socket describes one endpoint of the Runtime API: a Unix socket, a TCP
// address, or both, at one level.
type Socket struct {
	Path  string      // Unix socket path, "" = none
	Level Level       // level of its sessions
	Mode  os.FileMode // permissions of the socket file, 0 = DefaultMode
	Owner string      // user name or numeric uid of the socket file, "" = unchanged
	Group string      // group name or numeric gid of the socket file, "" = unchanged
	// TCP is a host:port to serve the same API on, "" = none. It must be a
	// loopback address unless AllowRemote.
	TCP         string
	AllowRemote bool
	// MaxConn is how many sessions the socket (each of its endpoints)
	// serves at once, 0 = DefaultMaxConn. The others wait to be accepted.
	MaxConn int
}

// API serves HAProxy's Runtime API for one proxy on any number of sockets.
// Each accepted connection is a session run by its own goroutine (see
// session.go); commands act on the proxy through package proxy's methods.
type API struct {
	proxy   atomic.Pointer[proxy.Proxy] // the current one (SetProxy)
	log     zerolog.Logger
	opts    Options
	table   *cmdTable
	started time.Time

	// hold is held for reading while a command runs (except reload) and
	// for writing by Hold, so that a reload copies the state of a proxy no
	// command is changing, and no command lands on the proxy being
	// replaced after its state was copied.
	hold sync.RWMutex

	// budget paces commands so that the API yields to the data path
	// (budget.go).
	budget *budget
	// pipelineGrace is the const of that name (session.go); tests change it.
	pipelineGrace time.Duration
	// waitMax bounds `wait <delay>` (dynserver.go), 0 for no bound; the
	// session fuzzer sets it, so that a fuzzed "wait 1d" ends.
	waitMax atomic.Int64

	mu        sync.Mutex
	listeners []*listener
	sessions  map[*session]struct{}
	accepted  int64 // sessions since start (under mu)
	closed    bool
	done      chan struct{} // closed by Close
	wg        sync.WaitGroup
}

// listener is one open socket.
type listener struct {
	name  string // as `show cli sockets` prints it: unix@PATH, ipv4@HOST:PORT
	level Level
	l     net.Listener
	path  string      // Unix socket file to remove at Close, "" for TCP
	file  os.FileInfo // that file as created, so that only ours is removed
	// slots holds a token per session being served: the accept loop takes
	// one before it accepts, the session gives it back when it ends.
	slots chan struct{}
}

// New returns the Runtime API of p. Nothing listens until Listen. Changes
// made through it are logged to log at info level.
func New(p *proxy.Proxy, log zerolog.Logger, opts Options) *API {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	a := &API{log: log, opts: opts, table: commandTable, started: time.Now(),
		sessions: map[*session]struct{}{}, done: make(chan struct{}),
		budget: newBudget(cmdShare, cmdBurst), pipelineGrace: pipelineGrace}
	if opts.Reload != nil {
		a.table = commandTable.with(reloadCommands)
	}
	a.SetProxy(p)
	return a
}

// SetProxy makes p the proxy that commands act on from the next command
// on; a reload calls it once the new proxy serves. A command running
// meanwhile finishes on the proxy it started with.
func (a *API) SetProxy(p *proxy.Proxy) {
	// Servers configured with checks get their check state now (an idle
	// one until a Checker probes, the same the Checker would create), so
	// that show stat and show servers state print the configured checks
	// from the first command on, whether or not the Checker started yet.
	for _, b := range p.Backends {
		for _, s := range b.Servers() {
			if s.Conf.Check || s.Conf.Agent != nil {
				check.Of(s)
			}
		}
	}
	a.proxy.Store(p)
}

// Hold runs f while no command runs: commands already running finish
// first, new ones wait until f returns. The daemon's reload runs the swap
// of its proxy (state copy, then SetProxy) inside it, so that an operator's
// change is either copied to the new proxy or made on it.
func (a *API) Hold(f func()) {
	a.hold.Lock()
	defer a.hold.Unlock()
	f()
}

// Proxy returns the proxy commands act on.
func (a *API) Proxy() *proxy.Proxy { return a.proxy.Load() }

// Listen opens the socket(s) described by s and starts serving them. A
// stale Unix socket file left by a crashed process is replaced; a file
// that is not a socket, or a socket a live process answers on, is an error.
func (a *API) Listen(s Socket) error {
	if s.Level == 0 {
		s.Level = LevelOperator // HAProxy's default
	}
	if s.MaxConn <= 0 {
		s.MaxConn = DefaultMaxConn
	}
	var opened []*listener
	fail := func(err error) error {
		for _, l := range opened {
			l.close()
		}
		return err
	}
	if s.Path != "" {
		l, err := listenUnix(s)
		if err != nil {
			return fail(fmt.Errorf("stats socket %s: %w", s.Path, err))
		}
		opened = append(opened, l)
	}
	if s.TCP != "" {
		l, err := listenTCP(s)
		if err != nil {
			return fail(fmt.Errorf("stats socket tcp %s: %w", s.TCP, err))
		}
		opened = append(opened, l)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return fail(errors.New("runtime API closed"))
	}
	for _, l := range opened {
		l.slots = make(chan struct{}, s.MaxConn)
		a.listeners = append(a.listeners, l)
		a.wg.Add(1)
		go a.accept(l)
		a.log.Info().Str("socket", l.name).Stringer("cli_level", l.level).Int("maxconn", s.MaxConn).Msg("runtime API listening")
	}
	return nil
}

// Addrs returns the addresses listened on, in Listen order.
func (a *API) Addrs() []net.Addr {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []net.Addr
	for _, l := range a.listeners {
		out = append(out, l.l.Addr())
	}
	return out
}

// Close stops listening, removes the socket files, ends every session and
// waits for their goroutines.
func (a *API) Close() error {
	a.mu.Lock()
	if !a.closed {
		close(a.done)
	}
	a.closed = true
	ls := a.listeners
	a.listeners = nil
	for s := range a.sessions {
		s.conn.Close()
	}
	a.mu.Unlock()
	for _, l := range ls {
		l.close()
	}
	a.wg.Wait()
	return nil
}

// acceptWarnEvery spaces the warnings of a socket whose accepts keep
// failing.
const acceptWarnEvery = 10 * time.Second

// acceptLog logs a socket's accept failures as the proxy's listeners log
// theirs (issue 16: near the descriptor limit, accepts alternate between
// failing and succeeding, and a warning per failure flooded the log): a
// warning when they start, then at most one every acceptWarnEvery, and
// "accepting again" at the first success after a warning. Failures in
// between are counted and reported by the next line. Owned by the accept
// loop.
type acceptLog struct {
	log      zerolog.Logger
	socket   string
	failures int // since the last "accepting again"
	lastWarn time.Time
	warned   bool // a warning was logged, "accepting again" was not
}

// failed records an accept failure at now.
func (al *acceptLog) failed(now time.Time, err error) {
	al.failures++
	if al.lastWarn.IsZero() || now.Sub(al.lastWarn) >= acceptWarnEvery {
		al.lastWarn, al.warned = now, true
		al.log.Warn().Err(err).Str("socket", al.socket).Int("failures", al.failures).Msg("runtime API accept failed")
	}
}

// accepted records a successful accept.
func (al *acceptLog) accepted() {
	if al.warned {
		al.log.Info().Str("socket", al.socket).Int("failures", al.failures).Msg("runtime API accepting again")
		al.failures, al.warned = 0, false
	}
}

// accept serves l until it is closed, at most cap(l.slots) sessions at
// once: past that it stops accepting until a session ends, and the clients
// wait in the listen queue (see DefaultMaxConn).
func (a *API) accept(l *listener) {
	defer a.wg.Done()
	var backoff time.Duration
	al := acceptLog{log: a.log, socket: l.name}
	for {
		select {
		case l.slots <- struct{}{}:
		case <-a.done:
			return
		}
		c, err := l.l.Accept()
		if err != nil {
			<-l.slots
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// EMFILE and the like: back off, never spin.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			al.failed(time.Now(), err)
			select {
			case <-time.After(backoff):
			case <-a.done:
				return
			}
			continue
		}
		al.accepted()
		backoff = 0
		s := &session{api: a, sock: l, conn: c, level: l.level, timeout: a.opts.Timeout, started: time.Now()}
		a.mu.Lock()
		if a.closed {
			a.mu.Unlock()
			c.Close()
			<-l.slots
			return
		}
		a.sessions[s] = struct{}{}
		a.accepted++
		a.wg.Add(1)
		a.mu.Unlock()
		go func() {
			defer a.wg.Done()
			defer func() { <-l.slots }() // after the close below
			s.serve()
			// Forgotten before the close that the client sees, so that its
			// next command does not find it in show sess.
			a.mu.Lock()
			delete(a.sessions, s)
			a.mu.Unlock()
			s.conn.Close()
		}()
	}
}

// listenUnix creates the Unix socket of s. It binds a temporary name,
// applies mode and ownership, then renames it over the path, so that the
// path never exists with the wrong permissions and a stale file is
// replaced atomically (HAProxy binds PATH.PID.tmp the same way).
func listenUnix(s Socket) (*listener, error) {
	path := s.Path
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode().Type() != os.ModeSocket {
			return nil, errors.New("exists and is not a socket; not replacing it")
		}
		if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
			c.Close()
			return nil, errors.New("another process is listening on it")
		}
		// Nobody answers: a stale socket from a crashed run, replaced below.
	}
	uid, gid, err := owner(s.Owner, s.Group)
	if err != nil {
		return nil, err
	}
	tmp := fmt.Sprintf("%s.%d.tmp", path, os.Getpid())
	if fi, err := os.Lstat(tmp); err == nil && fi.Mode().Type() == os.ModeSocket {
		os.Remove(tmp)
	}
	ul, err := net.ListenUnix("unix", &net.UnixAddr{Name: tmp, Net: "unix"})
	if err != nil {
		return nil, err
	}
	ul.SetUnlinkOnClose(false) // removed by close, only if still ours
	undo := func(err error) (*listener, error) {
		ul.Close()
		os.Remove(tmp)
		return nil, err
	}
	mode := s.Mode
	if mode == 0 {
		mode = DefaultMode
	}
	if err := os.Chmod(tmp, mode); err != nil {
		return undo(err)
	}
	if uid >= 0 || gid >= 0 {
		if err := os.Lchown(tmp, uid, gid); err != nil {
			return undo(err)
		}
	}
	if err := os.Rename(tmp, path); err != nil {
		return undo(err)
	}
	fi, err := os.Lstat(path)
	if err != nil {
		ul.Close()
		return nil, err
	}
	return &listener{name: "unix@" + path, level: s.Level, l: ul, path: path, file: fi}, nil
}

// listenTCP opens the TCP endpoint of s, refusing a non-loopback address
// unless s.AllowRemote: the Runtime API has no authentication.
func listenTCP(s Socket) (*listener, error) {
	l, err := net.Listen("tcp", s.TCP)
	if err != nil {
		return nil, err
	}
	ta := l.Addr().(*net.TCPAddr)
	if !s.AllowRemote && !ta.IP.IsLoopback() {
		l.Close()
		return nil, fmt.Errorf("%s is not a loopback address (set allow_remote to serve it)", ta.IP)
	}
	family := "ipv4"
	if ta.IP.To4() == nil {
		family = "ipv6"
	}
	return &listener{name: family + "@" + ta.String(), level: s.Level, l: l}, nil
}

// close stops listening and removes the socket file if it is still the one
// this listener created (a newer process may have replaced it).
func (l *listener) close() {
	l.l.Close()
	if l.path == "" {
		return
	}
	if fi, err := os.Lstat(l.path); err == nil && os.SameFile(fi, l.file) {
		os.Remove(l.path)
	}
}

// owner resolves a user and a group, each a name or a numeric id, to ids;
// -1 leaves that one unchanged.
func owner(u, g string) (uid, gid int, err error) {
	uid, gid = -1, -1
	if u != "" {
		if uid, err = strconv.Atoi(u); err != nil {
			usr, lerr := user.Lookup(u)
			if lerr != nil {
				return 0, 0, fmt.Errorf("owner %q: %w", u, lerr)
			}
			uid, _ = strconv.Atoi(usr.Uid)
		}
	}
	if g != "" {
		if gid, err = strconv.Atoi(g); err != nil {
			grp, lerr := user.LookupGroup(g)
			if lerr != nil {
				return 0, 0, fmt.Errorf("group %q: %w", g, lerr)
			}
			gid, _ = strconv.Atoi(grp.Gid)
		}
	}
	return uid, gid, nil
}

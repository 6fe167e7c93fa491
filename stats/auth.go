package stats

// Basic authentication of the stats page and /metrics, at a cost the data
// path does not notice whatever clients send (issue 16: each wrong guess
// against a bcrypt password cost 68 ms of CPU on the request path, and 8
// guessing clients cut the proxied traffic from 12,644 to 490 req/s).
//
// A bcrypt verification is the only expensive step, and it is bounded
// three ways:
//   - a verified user:password is remembered (passed) for authCacheTTL,
//     keyed by an HMAC of the credentials under a key drawn at start, so
//     that a browser sending them with every refresh costs one
//     verification, not one per request; at most authCacheMax are kept;
//   - each source address (IPv6: its /64) may fail failLimit times per
//     failWindow; past that it gets 429 Too Many Requests, with no
//     verification, until the window ends (credentials already verified
//     still pass);
//   - verifications run one at a time (verifyQueue more wait, at most
//     verifyWait; others get 503) and draw on a CPU budget of verifyShare
//     of the process's CPUs with a burst of verifyBurst: past it, 503
//     until it refills. A flood from many sources thus takes at most
//     verifyShare of the CPUs, sustained, and never more than one CPU.
//
// Refusals (429, 503) wait failTarpit before they are sent, as HAProxy's
// `http-request tarpit`: a guesser on a keep-alive connection would
// otherwise get its cheap 429s as fast as it asks, a request flood of its
// own. A 401 is sent at once (at most failLimit a window for a source).
//
// Plain-text passwords cost nothing to compare (constant time) and are not
// cached, but their failures count too.

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"net/netip"
	goruntime "runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fulcrum-proxy/fulcrum/proxy"
	"golang.org/x/crypto/bcrypt"
)

const (
	authCacheTTL   = 10 * time.Minute
	authCacheMax   = 1024
	failLimit      = 10
	failWindow     = time.Minute
	failSourcesMax = 16384
	verifyQueue    = 4
	verifyWait     = 2 * time.Second
	verifyShare    = 0.05
	verifyBurst    = time.Second
	failTarpit     = time.Second
)

// Auth checks the basic authentication of a stats page ([frontend.stats]
// auth): one per frontend, shared by its page and its /metrics
// (PageConfig.Authenticator), so that their caches and limits are one.
// NewAuth builds it; it is safe for concurrent use.
type Auth struct {
	users   map[string]string // user -> password or bcrypt hash
	key     [32]byte          // HMAC key of passed
	now     func() time.Time  // tests replace it
	compare func(hash, pw []byte) error
	tarpit  func(time.Duration) // sleeps; tests replace it
	rate    float64             // seconds of verification earned per second

	mu     sync.Mutex
	passed map[[sha256.Size]byte]time.Time // verified credentials -> expiry
	fails  map[netip.Prefix]*failCount     // by source
	tokens time.Duration                   // verification budget; negative: overdrawn
	last   time.Time                       // of the last refill

	verifying chan struct{} // holds a token while a verification runs
	queued    atomic.Int32  // requests waiting for verifying
}

// failCount is a source's failures in its current window.
type failCount struct {
	n     int
	since time.Time // start of the window
}

// NewAuth returns the authentication of users, "user:password" pairs whose
// password may be a bcrypt hash ("$2a$...", "$2b$...", "$2y$..."); nil
// when users is empty (no authentication).
func NewAuth(users []string) *Auth {
	if len(users) == 0 {
		return nil
	}
	a := &Auth{users: map[string]string{}, now: time.Now, compare: bcrypt.CompareHashAndPassword, tarpit: time.Sleep,
		rate:   verifyShare * float64(goruntime.GOMAXPROCS(0)),
		passed: map[[sha256.Size]byte]time.Time{}, fails: map[netip.Prefix]*failCount{},
		tokens: verifyBurst, verifying: make(chan struct{}, 1)}
	a.last = a.now()
	rand.Read(a.key[:]) // never fails (crypto/rand)
	for _, u := range users {
		if name, pw, ok := strings.Cut(u, ":"); ok {
			a.users[name] = pw
		}
	}
	return a
}

// Check authorizes r, or answers it and returns false: 401 without valid
// credentials, 429 to a source past its failures, 503 while verifications
// are saturated. Called on each request to the page or /metrics; a nil
// Auth lets everything through.
func (a *Auth) Check(w http.ResponseWriter, r *http.Request) bool {
	if a == nil {
		return true
	}
	status, retry := a.check(r)
	if status == 0 {
		return true
	}
	if status != http.StatusUnauthorized {
		a.tarpit(failTarpit)
	}
	h := w.Header()
	h.Set("Cache-Control", "no-cache")
	h.Set("Content-Type", "text/html")
	switch status {
	case http.StatusUnauthorized:
		h.Set("WWW-Authenticate", `Basic realm="fulcrum Statistics"`)
	default:
		h.Set("Retry-After", strconv.Itoa(max(1, int((retry+time.Second-1)/time.Second))))
	}
	body, _ := proxy.ErrorPage(status)
	w.WriteHeader(status)
	w.Write([]byte(body))
	return false
}

// check returns 0 when r is authorized, else the status to answer and, for
// 429 and 503, when to retry.
func (a *Auth) check(r *http.Request) (status int, retry time.Duration) {
	user, pw, ok := r.BasicAuth()
	if !ok {
		return http.StatusUnauthorized, 0 // no credentials yet: not a failure
	}
	key := a.credKey(user, pw)
	now := a.now()
	src := sourceOf(r.RemoteAddr)
	a.mu.Lock()
	if exp, ok := a.passed[key]; ok && now.Before(exp) {
		a.mu.Unlock()
		return 0, 0
	}
	if f := a.fails[src]; f != nil && f.n >= failLimit && now.Sub(f.since) < failWindow {
		a.mu.Unlock()
		return http.StatusTooManyRequests, failWindow - now.Sub(f.since)
	}
	a.mu.Unlock()

	want, known := a.users[user]
	var good bool
	switch {
	case !known:
	case isBcrypt(want):
		var busy time.Duration
		if good, busy = a.verify(want, pw); busy > 0 {
			return http.StatusServiceUnavailable, busy
		}
	default:
		good = subtle.ConstantTimeCompare([]byte(want), []byte(pw)) == 1
	}

	a.mu.Lock()
	defer a.mu.Unlock()
	if good {
		delete(a.fails, src)
		if isBcrypt(want) {
			a.rememberLocked(key, now)
		}
		return 0, 0
	}
	f := a.fails[src]
	if f == nil || now.Sub(f.since) >= failWindow {
		if f == nil && len(a.fails) >= failSourcesMax {
			a.pruneFailsLocked(now)
		}
		f = &failCount{since: now}
		a.fails[src] = f
	}
	f.n++
	return http.StatusUnauthorized, 0
}

// verify compares pw with a bcrypt hash, one verification at a time and
// within the budget. busy > 0 means it was not run (saturated): retry
// after busy.
func (a *Auth) verify(hash, pw string) (ok bool, busy time.Duration) {
	if wait := a.reserve(); wait > 0 {
		return false, wait
	}
	select {
	case a.verifying <- struct{}{}:
	default:
		if a.queued.Add(1) > verifyQueue {
			a.queued.Add(-1)
			return false, time.Second
		}
		t := time.NewTimer(verifyWait)
		select {
		case a.verifying <- struct{}{}:
			t.Stop()
			a.queued.Add(-1)
		case <-t.C:
			a.queued.Add(-1)
			return false, time.Second
		}
	}
	start := a.now()
	ok = a.compare([]byte(hash), []byte(pw)) == nil
	a.charge(a.now().Sub(start))
	<-a.verifying
	return ok, 0
}

// reserve returns 0 when the verification budget is not overdrawn, else
// how long until it is not.
func (a *Auth) reserve() time.Duration {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.refillLocked(a.now())
	if a.tokens >= 0 {
		return 0
	}
	return time.Duration(float64(-a.tokens) / a.rate)
}

// charge takes the time a verification took from the budget. It is the
// wall time, which is its CPU time at most a scheduling delay more: one
// verification runs at a time.
func (a *Auth) charge(d time.Duration) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.refillLocked(a.now())
	a.tokens -= d
}

// refillLocked adds what the budget earned since the last refill.
func (a *Auth) refillLocked(now time.Time) {
	if now.After(a.last) {
		a.tokens = min(verifyBurst, a.tokens+time.Duration(float64(now.Sub(a.last))*a.rate))
		a.last = now
	}
}

// rememberLocked records verified credentials, dropping expired entries
// (then an arbitrary one) when authCacheMax are kept.
func (a *Auth) rememberLocked(key [sha256.Size]byte, now time.Time) {
	if len(a.passed) >= authCacheMax {
		for k, exp := range a.passed {
			if !now.Before(exp) {
				delete(a.passed, k)
			}
		}
		for k := range a.passed {
			if len(a.passed) < authCacheMax {
				break
			}
			delete(a.passed, k)
		}
	}
	a.passed[key] = now.Add(authCacheTTL)
}

// pruneFailsLocked drops the sources whose window ended, then arbitrary
// ones while failSourcesMax are kept: a flood from many addresses cannot
// grow the map without bound (a dropped source starts a new window).
func (a *Auth) pruneFailsLocked(now time.Time) {
	for src, f := range a.fails {
		if now.Sub(f.since) >= failWindow {
			delete(a.fails, src)
		}
	}
	for src := range a.fails {
		if len(a.fails) < failSourcesMax {
			break
		}
		delete(a.fails, src)
	}
}

// credKey is the cache key of user:pw: an HMAC under the Auth's key, so
// that the cache holds no password and its keys are worth nothing elsewhere.
func (a *Auth) credKey(user, pw string) [sha256.Size]byte {
	m := hmac.New(sha256.New, a.key[:])
	m.Write([]byte(user))
	m.Write([]byte{0})
	m.Write([]byte(pw))
	var k [sha256.Size]byte
	m.Sum(k[:0])
	return k
}

// sourceOf returns the source a failure counts against: the address of
// remote ("IP:port"), its /64 for IPv6 (one host's share of addresses).
func sourceOf(remote string) netip.Prefix {
	ap, err := netip.ParseAddrPort(remote)
	if err != nil {
		return netip.Prefix{}
	}
	addr := ap.Addr().Unmap()
	bits := 32
	if addr.Is6() {
		bits = 64
	}
	p, _ := addr.Prefix(bits)
	return p
}

// isBcrypt reports whether a configured password is a bcrypt hash.
func isBcrypt(pw string) bool {
	return strings.HasPrefix(pw, "$2a$") || strings.HasPrefix(pw, "$2b$") || strings.HasPrefix(pw, "$2y$")
}

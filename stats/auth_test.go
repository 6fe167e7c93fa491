package stats

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fulcrum-proxy/fulcrum/proxy"
	"golang.org/x/crypto/bcrypt"
)

// testAuth returns an Auth of "ops" with a bcrypt password ("s3cret") and
// "admin" with a plain one ("pw"), on a fake clock, counting its bcrypt
// verifications.
func testAuth(t *testing.T) (a *Auth, clock *fakeClock, verifications *atomic.Int64) {
	t.Helper()
	hash, err := bcrypt.GenerateFromPassword([]byte("s3cret"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	a = NewAuth([]string{"ops:" + string(hash), "admin:pw"})
	clock = &fakeClock{t: time.Unix(1_700_000_000, 0)}
	a.now = clock.now
	a.last = clock.now()
	a.tarpit = func(time.Duration) {}
	verifications = new(atomic.Int64)
	a.compare = func(hash, pw []byte) error {
		verifications.Add(1)
		return bcrypt.CompareHashAndPassword(hash, pw)
	}
	return a, clock, verifications
}

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// try sends a request from src with user:pw (no credentials when user is
// "") through a.Check and returns the recorded answer (200 when allowed).
func try(a *Auth, src, user, pw string) *httptest.ResponseRecorder {
	r := httptest.NewRequest("GET", "/stats;csv", nil)
	r.RemoteAddr = src
	if user != "" {
		r.SetBasicAuth(user, pw)
	}
	w := httptest.NewRecorder()
	if a.Check(w, r) {
		w.WriteHeader(http.StatusOK)
	}
	return w
}

// Issue 16: every request with a bcrypt password was verified again (68 ms
// of CPU each, a browser refreshing the page every few seconds included).
// Verified credentials are remembered: 100 requests, one verification.
func TestIssue16AuthVerifiesOnce(t *testing.T) {
	a, clock, verifications := testAuth(t)
	for i := range 100 {
		if w := try(a, "10.0.0.1:1000", "ops", "s3cret"); w.Code != 200 {
			t.Fatalf("request %d: %d, want 200", i, w.Code)
		}
	}
	if n := verifications.Load(); n != 1 {
		t.Errorf("%d bcrypt verifications for 100 requests, want 1", n)
	}
	// From another address too (the cache is of credentials, not sources).
	if w := try(a, "10.0.0.2:1000", "ops", "s3cret"); w.Code != 200 || verifications.Load() != 1 {
		t.Errorf("from another source: %d, %d verifications; want 200, 1", w.Code, verifications.Load())
	}
	// A wrong password is never taken for the remembered one.
	if w := try(a, "10.0.0.1:1000", "ops", "s3cret "); w.Code != 401 {
		t.Errorf("a different password: %d, want 401", w.Code)
	}
	// Remembered for authCacheTTL, then verified again.
	clock.advance(authCacheTTL)
	try(a, "10.0.0.1:1000", "ops", "s3cret")
	if n := verifications.Load(); n != 3 {
		t.Errorf("%d verifications after the TTL, want 3", n)
	}
}

// Issue 16: a client could guess as fast as bcrypt answered. A source gets
// failLimit failures per failWindow, then 429 without verification; other
// sources are not affected; credentials verified before still pass.
func TestIssue16AuthFailuresLimitedPerSource(t *testing.T) {
	a, clock, verifications := testAuth(t)
	for i := range 3 * failLimit {
		w := try(a, "10.0.0.1:1000", "ops", fmt.Sprint("guess", i))
		want := 401
		if i >= failLimit {
			want = 429
		}
		if w.Code != want {
			t.Fatalf("guess %d: %d, want %d", i, w.Code, want)
		}
	}
	if n := verifications.Load(); n != failLimit {
		t.Errorf("%d verifications for %d guesses, want %d", n, 3*failLimit, failLimit)
	}
	// HAProxy's 429 page, and when to come back.
	w := try(a, "10.0.0.1:1000", "ops", "guess")
	body, _ := proxy.ErrorPage(429)
	if got := w.Body.String(); got != body {
		t.Errorf("429 body %q, want HAProxy's %q", got, body)
	}
	if got := w.Header().Get("Retry-After"); got != "60" {
		t.Errorf("Retry-After %q, want 60", got)
	}
	// Plain-text failures count too, without any verification.
	if w := try(a, "10.0.0.1:1000", "admin", "nope"); w.Code != 429 {
		t.Errorf("plain password from the blocked source: %d, want 429", w.Code)
	}
	// The right password is not verified from the blocked source...
	if w := try(a, "10.0.0.1:1000", "ops", "s3cret"); w.Code != 429 {
		t.Errorf("right password from the blocked source: %d, want 429", w.Code)
	}
	// ...but other sources are unaffected, and once verified from one of
	// them the credentials pass from the blocked one.
	if w := try(a, "10.0.0.2:1000", "ops", "wrong"); w.Code != 401 {
		t.Errorf("another source: %d, want 401", w.Code)
	}
	if w := try(a, "10.0.0.2:1000", "ops", "s3cret"); w.Code != 200 {
		t.Errorf("right password from another source: %d, want 200", w.Code)
	}
	if w := try(a, "10.0.0.1:1000", "ops", "s3cret"); w.Code != 200 {
		t.Errorf("verified credentials from the blocked source: %d, want 200", w.Code)
	}
	// The window ends: the source may try again.
	clock.advance(failWindow)
	if w := try(a, "10.0.0.1:1000", "ops", "guess"); w.Code != 401 {
		t.Errorf("after the window: %d, want 401", w.Code)
	}
	// IPv6 sources count by /64.
	for i := range failLimit {
		try(a, fmt.Sprintf("[2001:db8::%x]:1000", i+1), "admin", "nope")
	}
	if w := try(a, "[2001:db8::ffff]:1000", "admin", "nope"); w.Code != 429 {
		t.Errorf("another address of the same /64: %d, want 429", w.Code)
	}
	if w := try(a, "[2001:db8:0:1::1]:1000", "admin", "nope"); w.Code != 401 {
		t.Errorf("another /64: %d, want 401", w.Code)
	}
}

// Verifications run one at a time: with one running, verifyQueue requests
// wait and the others get 503 at once. 8 sources guessing at once never
// make bcrypt run on two CPUs.
func TestIssue16AuthOneVerificationAtATime(t *testing.T) {
	a, _, _ := testAuth(t)
	release := make(chan struct{})
	var running, most atomic.Int32
	a.compare = func(hash, pw []byte) error {
		n := running.Add(1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		<-release
		running.Add(-1)
		return bcrypt.ErrMismatchedHashAndPassword
	}
	const clients = 8
	codes := make(chan int, clients)
	for i := range clients {
		go func() { codes <- try(a, fmt.Sprintf("10.0.1.%d:1000", i+1), "ops", "guess").Code }()
	}
	// One verifies, verifyQueue wait, the rest are refused at once.
	refused := 0
	for refused < clients-1-verifyQueue {
		select {
		case c := <-codes:
			if c != 503 {
				t.Fatalf("a request answered %d while one verification runs, want 503", c)
			}
			refused++
		case <-time.After(10 * time.Second):
			t.Fatal("no 503 while the verifier is busy")
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for a.queued.Load() != verifyQueue || running.Load() != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("queued %d, running %d; want %d, 1", a.queued.Load(), running.Load(), verifyQueue)
		}
		time.Sleep(time.Millisecond)
	}
	close(release)
	for range clients - refused {
		if c := <-codes; c != 401 {
			t.Errorf("a verified guess answered %d, want 401", c)
		}
	}
	if m := most.Load(); m != 1 {
		t.Errorf("%d verifications ran at once, want 1", m)
	}
}

// Verifications draw on a CPU budget (verifyShare, burst verifyBurst):
// guesses from ever new sources cannot keep bcrypt busy. Each takes 200 ms
// here: with a rate of 0.1 s/s, 6 fit in the burst, the 7th gets 503 until
// the budget refills.
func TestIssue16AuthBudget(t *testing.T) {
	a, clock, verifications := testAuth(t)
	a.rate = 0.1
	a.compare = func(hash, pw []byte) error {
		verifications.Add(1)
		clock.advance(200 * time.Millisecond)
		return bcrypt.ErrMismatchedHashAndPassword
	}
	src := 0
	guess := func() *httptest.ResponseRecorder {
		src++
		return try(a, fmt.Sprintf("10.0.2.%d:1000", src), "ops", "guess")
	}
	for i := range 6 {
		if w := guess(); w.Code != 401 {
			t.Fatalf("guess %d: %d, want 401", i, w.Code)
		}
	}
	w := guess()
	if w.Code != 503 || w.Header().Get("Retry-After") != "1" {
		t.Errorf("past the budget: %d, Retry-After %q; want 503, 1", w.Code, w.Header().Get("Retry-After"))
	}
	if body, _ := proxy.ErrorPage(503); w.Body.String() != body {
		t.Errorf("503 body %q, want HAProxy's", w.Body.String())
	}
	if n := verifications.Load(); n != 6 {
		t.Errorf("%d verifications, want 6", n)
	}
	clock.advance(time.Second)
	if w := guess(); w.Code != 401 {
		t.Errorf("once refilled: %d, want 401", w.Code)
	}
}

// The 401 is HAProxy's: its page, no-cache, and the basic challenge.
func TestAuthUnauthorizedAnswer(t *testing.T) {
	a, _, _ := testAuth(t)
	w := try(a, "10.0.0.1:1000", "", "")
	body, _ := proxy.ErrorPage(401)
	if w.Code != 401 || w.Body.String() != body {
		t.Errorf("got %d %q, want 401 %q", w.Code, w.Body.String(), body)
	}
	for k, v := range map[string]string{
		"WWW-Authenticate": `Basic realm="fulcrum Statistics"`,
		"Cache-Control":    "no-cache",
		"Content-Type":     "text/html",
	} {
		if got := w.Header().Get(k); got != v {
			t.Errorf("%s: %q, want %q", k, got, v)
		}
	}
	// A request without credentials is not a failure (a browser's first).
	for range 2 * failLimit {
		try(a, "10.0.0.1:1000", "", "")
	}
	if w := try(a, "10.0.0.1:1000", "admin", "pw"); w.Code != 200 {
		t.Errorf("after requests without credentials: %d, want 200", w.Code)
	}
}

// BenchmarkAuthCheckCached is the cost of authenticating a request whose
// bcrypt credentials were verified before (a browser refreshing the page):
// an HMAC and a map lookup, no bcrypt.
func BenchmarkAuthCheckCached(b *testing.B) {
	hash, err := bcrypt.GenerateFromPassword([]byte("s3cret"), bcrypt.MinCost)
	if err != nil {
		b.Fatal(err)
	}
	a := NewAuth([]string{"ops:" + string(hash)})
	r := httptest.NewRequest("GET", "/stats;csv", nil)
	r.RemoteAddr = "10.0.0.1:1000"
	r.SetBasicAuth("ops", "s3cret")
	w := httptest.NewRecorder()
	if !a.Check(w, r) {
		b.Fatal("refused")
	}
	b.ReportAllocs()
	for b.Loop() {
		if !a.Check(w, r) {
			b.Fatal("refused")
		}
	}
}

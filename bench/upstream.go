package bench

import (
	"strconv"
	"sync/atomic"
	"time"

	"github.com/httpretry/httpretry/internal/fakeorigin"
)

// RequestIDHeader carries the client request's number, so that an upstream
// can tell which attempts belong to which call: every resend of a request
// repeats its headers.
const RequestIDHeader = "X-Bench-Request"

// Upstream is a loopback server that answers 503 during an outage and 200
// after it, or 503 to a seeded random share of attempts, and counts the
// requests and connections it receives, in total and per RequestIDHeader.
// It is safe for concurrent use.
type Upstream struct {
	// URL is the server's base URL, on 127.0.0.1.
	URL string

	origin  *fakeorigin.Origin
	srv     *fakeorigin.Server
	downFor time.Duration
	// failRate, when positive, fails attempt n of request id with 503
	// when Blip(seed, id, n, failRate) says so, outage or not.
	failRate float64
	seed     uint64
	start    atomic.Pointer[time.Time]
	perID    []atomic.Int32
}

// NewUpstream starts an Upstream that can attribute requests numbered
// 0 to ids-1. It answers 503 for downFor after Begin (a negative downFor:
// for ever) and 200 otherwise; before Begin it is down.
func NewUpstream(ids int, downFor time.Duration) (*Upstream, error) {
	return startUpstream(newUpstream(ids, downFor))
}

// newUpstream is NewUpstream not yet served.
func newUpstream(ids int, downFor time.Duration) *Upstream {
	return withOrigin(&Upstream{downFor: downFor, perID: make([]atomic.Int32, ids)})
}

// withOrigin gives u the Origin that answers for it, in memory or served.
func withOrigin(u *Upstream) *Upstream {
	u.origin = fakeorigin.New(u.answer).Quiet()
	return u
}

// NewFlakyUpstream starts an Upstream that is never down but answers 503
// to the attempts Blip picks with rate and seed, and 200 to the others; an
// attempt without a valid RequestIDHeader is answered 200.
func NewFlakyUpstream(ids int, rate float64, seed uint64) (*Upstream, error) {
	return startUpstream(newFlakyUpstream(ids, rate, seed))
}

// newFlakyUpstream is NewFlakyUpstream not yet served.
func newFlakyUpstream(ids int, rate float64, seed uint64) *Upstream {
	u := withOrigin(&Upstream{perID: make([]atomic.Int32, ids), failRate: rate, seed: seed})
	u.Begin(time.Now()) // an outage of 0 from now: up from the start
	return u
}

// startUpstream serves u on loopback; u is complete before its handler
// can run.
func startUpstream(u *Upstream) (*Upstream, error) {
	srv, err := fakeorigin.Start(u.origin)
	if err != nil {
		return nil, err
	}
	u.srv, u.URL = srv, srv.URL
	return u, nil
}

// Blip reports whether attempt n (1 for the first) of request id fails, for
// a share rate of all attempts. It is a pure function of its arguments, so
// that every library in a run faces the same failures and the harness can
// tell which first attempts failed without asking the upstream.
func Blip(seed uint64, id, n int, rate float64) bool {
	// splitmix64's finaliser: consecutive ids and attempts give
	// independent-looking draws.
	x := seed ^ uint64(id)<<8 ^ uint64(n)
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	x ^= x >> 31
	return float64(x>>11)/(1<<53) < rate
}

// Begin starts the outage clock at now.
func (u *Upstream) Begin(now time.Time) { u.start.Store(&now) }

// Requests returns how many requests arrived, attributed or not.
func (u *Upstream) Requests() int64 { return int64(u.origin.Requests()) }

// Connections returns how many connections clients opened.
// Served in process, it has none.
func (u *Upstream) Connections() int64 {
	if u.srv == nil {
		return 0
	}
	return u.srv.Conns()
}

// RequestsFor returns how many attempts of request id arrived.
func (u *Upstream) RequestsFor(id int) int {
	if id < 0 || id >= len(u.perID) {
		return 0
	}
	return int(u.perID[id].Load())
}

// Close shuts the server down and closes its connections.
func (u *Upstream) Close() { u.srv.Close() }

func (u *Upstream) answer(q *fakeorigin.Request) fakeorigin.Answer {
	blip := false
	if id, err := strconv.Atoi(q.Header.Get(RequestIDHeader)); err == nil && id >= 0 && id < len(u.perID) {
		n := u.perID[id].Add(1)
		blip = u.failRate > 0 && Blip(u.seed, id, int(n), u.failRate)
	}
	if blip || u.down(time.Now()) {
		return unavailable
	}
	return okAnswer
}

func (u *Upstream) down(now time.Time) bool {
	start := u.start.Load()
	if start == nil || u.downFor < 0 {
		return true
	}
	return now.Sub(*start) < u.downFor
}

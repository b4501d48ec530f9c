package chaos

import (
	"crypto/sha256"
	"encoding/hex"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/httpretry/httpretry/internal/fakeorigin"
)

// Headers the test client and the upstream use to check one another.
const (
	hdrID       = "X-Chaos-Id"       // one logical request, the same on every attempt
	hdrBodySum  = "X-Chaos-Body-Sum" // sha256 of the original request body
	hdrRespSize = "X-Chaos-Resp-Size"
	hdrKind     = "X-Chaos-Kind"
	hdrSeq      = "X-Chaos-Seq" // index into upstream.seqCalls, for the soak
)

// payload is the fixed, random byte pool response bodies are cut from, so
// that a client can check a body without the server sending a digest.
var payload = func() []byte {
	b := make([]byte, 1<<20)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range b {
		b[i] = byte(r.UintN(256))
	}
	return b
}()

// bodySum is the digest the upstream compares a received body with.
func bodySum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// upstream is a loopback HTTP server that counts what reaches it: calls,
// open connections, calls per logical request, and complete request bodies
// that differ from the original (which must never happen).
type upstream struct {
	origin *fakeorigin.Origin // calls: its Requests
	srv    *fakeorigin.Server // connections: its Conns and Open

	badBodies atomic.Int64 // complete bodies whose digest differs
	cutBodies atomic.Int64 // bodies that ended early (a network fault)
	failPct   atomic.Int32 // share of calls answered 503, in percent
	delay     atomic.Int64 // handler latency, nanoseconds
	resetPct  atomic.Int32 // share of calls whose connection is reset, in percent

	// seqCalls counts calls per X-Chaos-Seq without a map, so that a long
	// soak does not grow the heap it measures; nil when unused.
	seqCalls []atomic.Int32

	mu    sync.Mutex
	perID map[string]int // calls per logical request
	kinds map[string]string
}

// newUpstream starts an upstream; it is closed when the test ends.
func newUpstream(t testing.TB) *upstream {
	t.Helper()
	u := &upstream{perID: map[string]int{}, kinds: map[string]string{}}
	u.origin = fakeorigin.New(u.answer).Quiet()
	u.srv = fakeorigin.Serve(t, u.origin)
	return u
}

// addr is the upstream's host:port.
func (u *upstream) addr() string { return u.srv.Listener.Addr().String() }

// calls returns how many requests reached the upstream.
func (u *upstream) calls() int64 { return int64(u.origin.Requests()) }

func (u *upstream) answer(q *fakeorigin.Request) fakeorigin.Answer {
	if id := q.Header.Get(hdrID); id != "" {
		u.mu.Lock()
		u.perID[id]++
		u.kinds[id] = q.Header.Get(hdrKind)
		u.mu.Unlock()
	}
	if seq, err := strconv.Atoi(q.Header.Get(hdrSeq)); err == nil && seq >= 0 && seq < len(u.seqCalls) {
		u.seqCalls[seq].Add(1)
	}
	body, err := q.ReadBody()
	if err != nil {
		// The request was cut by the network: not a wrong body, a lost one.
		u.cutBodies.Add(1)
		return fakeorigin.Answer{}
	}
	if want := q.Header.Get(hdrBodySum); want != "" && bodySum(body) != want {
		u.badBodies.Add(1)
		return textAnswer(http.StatusBadRequest, "body differs from the original")
	}
	delay := time.Duration(u.delay.Load())
	if p := u.resetPct.Load(); p > 0 && rand.Int32N(100) < p {
		return fakeorigin.Answer{After: delay, Fault: fakeorigin.Reset}
	}
	if p := u.failPct.Load(); p > 0 && rand.Int32N(100) < p {
		a := textAnswer(http.StatusServiceUnavailable, "overloaded").RetryAfter("0")
		a.After = delay
		return a
	}
	n, _ := strconv.Atoi(q.Header.Get(hdrRespSize))
	n = min(max(n, 0), len(payload))
	return fakeorigin.Answer{After: delay, Header: http.Header{"Content-Length": {strconv.Itoa(n)}}, Body: payload[:n]}
}

// textAnswer is what http.Error sends.
func textAnswer(code int, msg string) fakeorigin.Answer {
	return fakeorigin.Answer{Status: code, Body: []byte(msg + "\n"), Header: http.Header{
		"Content-Type": {"text/plain; charset=utf-8"}, "X-Content-Type-Options": {"nosniff"}}}
}

// maxCallsFor returns the largest number of calls any request of kind saw.
func (u *upstream) maxCallsFor(kind string) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	most := 0
	for id, n := range u.perID {
		if u.kinds[id] == kind {
			most = max(most, n)
		}
	}
	return most
}

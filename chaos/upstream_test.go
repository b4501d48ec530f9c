package chaos

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
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
	srv *httptest.Server

	calls     atomic.Int64 // requests that reached the handler
	open      atomic.Int64 // connections open right now
	conns     atomic.Int64 // connections ever accepted
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
	u.srv = httptest.NewUnstartedServer(http.HandlerFunc(u.serve))
	u.srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		switch s {
		case http.StateNew:
			u.open.Add(1)
			u.conns.Add(1)
		case http.StateClosed, http.StateHijacked:
			u.open.Add(-1)
		}
	}
	u.srv.Start()
	t.Cleanup(u.srv.Close)
	return u
}

// addr is the upstream's host:port.
func (u *upstream) addr() string { return u.srv.Listener.Addr().String() }

func (u *upstream) serve(w http.ResponseWriter, r *http.Request) {
	u.calls.Add(1)
	if id := r.Header.Get(hdrID); id != "" {
		u.mu.Lock()
		u.perID[id]++
		u.kinds[id] = r.Header.Get(hdrKind)
		u.mu.Unlock()
	}
	if seq, err := strconv.Atoi(r.Header.Get(hdrSeq)); err == nil && seq >= 0 && seq < len(u.seqCalls) {
		u.seqCalls[seq].Add(1)
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		// The request was cut by the network: not a wrong body, a lost one.
		u.cutBodies.Add(1)
		return
	}
	if want := r.Header.Get(hdrBodySum); want != "" && bodySum(body) != want {
		u.badBodies.Add(1)
		http.Error(w, "body differs from the original", http.StatusBadRequest)
		return
	}
	if d := time.Duration(u.delay.Load()); d > 0 {
		time.Sleep(d)
	}
	if p := u.resetPct.Load(); p > 0 && rand.Int32N(100) < p {
		resetConn(w)
		return
	}
	if p := u.failPct.Load(); p > 0 && rand.Int32N(100) < p {
		w.Header().Set("Retry-After", "0")
		http.Error(w, "overloaded", http.StatusServiceUnavailable)
		return
	}
	n, _ := strconv.Atoi(r.Header.Get(hdrRespSize))
	n = min(max(n, 0), len(payload))
	w.Header().Set("Content-Length", strconv.Itoa(n))
	w.WriteHeader(http.StatusOK)
	_, _ = io.Copy(w, bytes.NewReader(payload[:n]))
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

// resetConn drops the connection under a handler with a TCP RST, as a
// crashing upstream would.
func resetConn(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	conn.Close()
}

package httpretry

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/httpretry/httpretry/internal/fakeorigin"
)

// upstream is a loopback server (internal/fakeorigin) that answers each
// request with the next step of a script and records what it received.
type upstream struct {
	*fakeorigin.Server
	origin *fakeorigin.Origin
	// calls numbers the requests for the step; a test may reset it.
	calls atomic.Int64
}

// step answers the n-th request (1-based); it may hijack the connection.
type step func(w http.ResponseWriter, r *http.Request, n int)

func newUpstream(t *testing.T, s step, configure ...func(*http.Server)) *upstream {
	t.Helper()
	u := &upstream{}
	u.origin = fakeorigin.New(func(*fakeorigin.Request) fakeorigin.Answer {
		n := int(u.calls.Add(1))
		return fakeorigin.Answer{Serve: func(w http.ResponseWriter, r *http.Request) { s(w, r, n) }}
	})
	u.Server = fakeorigin.Serve(t, u.origin, configure...)
	return u
}

// received returns the request bodies, in the order they arrived.
func (u *upstream) received() [][]byte {
	var bodies [][]byte
	for _, a := range u.origin.Attempts() {
		bodies = append(bodies, a.Body)
	}
	return bodies
}

// keys returns the requests' Idempotency-Keys, in the order they arrived.
func (u *upstream) keys() []string {
	var keys []string
	for _, a := range u.origin.Attempts() {
		keys = append(keys, a.Header.Get("Idempotency-Key"))
	}
	return keys
}

// failFirst answers 503 to the first k requests and 200 "ok" after.
func failFirst(k int) step {
	return func(w http.ResponseWriter, r *http.Request, n int) {
		if n <= k {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		io.WriteString(w, "ok")
	}
}

func always(code int) step {
	return func(w http.ResponseWriter, r *http.Request, n int) {
		w.WriteHeader(code)
		io.WriteString(w, http.StatusText(code))
	}
}

// recorder collects events.
type recorder struct {
	mu     sync.Mutex
	events []Event
}

func (r *recorder) observe(e Event) {
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
}

func (r *recorder) all() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Event(nil), r.events...)
}

func (r *recorder) kinds() []EventKind {
	var k []EventKind
	for _, e := range r.all() {
		k = append(k, e.Kind)
	}
	return k
}

// giveUp returns the reason of the single give-up event, or 0.
func (r *recorder) giveUp(t *testing.T) Reason {
	t.Helper()
	var reasons []Reason
	for _, e := range r.all() {
		if e.Kind == EventGiveUp {
			reasons = append(reasons, e.Reason)
		}
	}
	if len(reasons) == 0 {
		return 0
	}
	if len(reasons) > 1 {
		t.Fatalf("more than one give-up event: %v", reasons)
	}
	return reasons[0]
}

// fastPolicy retries at once, with no budget in the way, so that loopback
// tests count attempts without waiting.
func fastPolicy(retries int) Policy {
	p := DefaultPolicy()
	p.MaxRetries = retries
	p.Backoff = NoBackoff()
	p.Budget.Disabled = true
	return p
}

// trackedBody is a request body without GetBody that counts its Closes.
type trackedBody struct {
	r      io.Reader
	closes atomic.Int32
}

func newTrackedBody(s string) *trackedBody { return &trackedBody{r: strings.NewReader(s)} }

func (b *trackedBody) Read(p []byte) (int, error) { return b.r.Read(p) }
func (b *trackedBody) Close() error               { b.closes.Add(1); return nil }

func readAll(t *testing.T, resp *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading response body: %v", err)
	}
	resp.Body.Close()
	return string(b)
}

// plainBase is rt behind an *http.Transport, which hands it every http
// request (RegisterProtocol): a plain base (point 20), whose first
// attempts go unmarked, as a user's *http.Transport is.
func plainBase(rt http.RoundTripper) *http.Transport {
	t := &http.Transport{}
	t.RegisterProtocol("http", rt)
	return t
}

// roundTripFunc adapts a function to http.RoundTripper.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// fakeResponse builds a response with a readable body, for fake bases.
func fakeResponse(req *http.Request, code int, header http.Header, body string) *http.Response {
	if header == nil {
		header = http.Header{}
	}
	return &http.Response{
		StatusCode:    code,
		Header:        header,
		Body:          io.NopCloser(bytes.NewBufferString(body)),
		ContentLength: int64(len(body)),
		Request:       req,
	}
}

package httpretry

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// These tests drive Policy.Demote through RoundTrip (DESIGN point 18): a
// fake base stands for the origins, each answering by its current mode,
// inside a synctest bubble, so that demotions start and end at exact
// virtual instants and nothing sleeps.

// origins is a fake base whose hosts answer by their current mode (200 by
// default) and that logs every attempt's host in order.
type origins struct {
	mu    sync.Mutex
	modes map[string]mode
	log   []string
}

// mode is how a host answers an attempt.
type mode func(r *http.Request) (*http.Response, error)

func newOrigins() *origins { return &origins{modes: map[string]mode{}} }

// set makes host answer every attempt by m from now on.
func (o *origins) set(host string, m mode) {
	o.mu.Lock()
	o.modes[host] = m
	o.mu.Unlock()
}

func (o *origins) RoundTrip(r *http.Request) (*http.Response, error) {
	o.mu.Lock()
	o.log = append(o.log, r.URL.Host)
	m := o.modes[r.URL.Host]
	o.mu.Unlock()
	if r.Body != nil {
		r.Body.Close()
	}
	if m == nil {
		m = respond(http.StatusOK)
	}
	return m(r)
}

// calls is how many attempts went to host so far.
func (o *origins) calls(host string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := 0
	for _, h := range o.log {
		if h == host {
			n++
		}
	}
	return n
}

// send makes one request to url with ctx and returns the hosts its
// attempts went to, in order, and the status it got (0: an error).
// Requests sent this way must not overlap.
func (o *origins) send(t *testing.T, rt http.RoundTripper, ctx context.Context, method, url string) ([]string, int) {
	t.Helper()
	o.mu.Lock()
	from := len(o.log)
	o.mu.Unlock()
	var body *strings.Reader
	if method == http.MethodPost {
		body = strings.NewReader("payload")
	}
	var req *http.Request
	var err error
	if body != nil {
		req, err = http.NewRequestWithContext(ctx, method, url, body)
	} else {
		req, err = http.NewRequestWithContext(ctx, method, url, nil)
	}
	require.NoError(t, err)
	resp, err := rt.RoundTrip(req)
	code := 0
	if err == nil {
		code = resp.StatusCode
		readAll(t, resp)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.log[from:]...), code
}

// get sends a GET to a.test, the primary, with the context's fallbacks or
// the policy's.
func (o *origins) get(t *testing.T, rt http.RoundTripper) []string {
	t.Helper()
	hosts, _ := o.send(t, rt, context.Background(), http.MethodGet, "http://a.test/items")
	return hosts
}

// respond answers with code.
func respond(code int) mode {
	return func(r *http.Request) (*http.Response, error) {
		return fakeResponse(r, code, nil, http.StatusText(code)), nil
	}
}

// statusRetryAfter answers with code and a Retry-After of ra.
func statusRetryAfter(code int, ra string) mode {
	return func(r *http.Request) (*http.Response, error) {
		return fakeResponse(r, code, http.Header{"Retry-After": {ra}}, "later"), nil
	}
}

func refuse(*http.Request) (*http.Response, error) { return nil, errRefused }

// hang never answers: the attempt ends when its context does.
func hang(r *http.Request) (*http.Response, error) {
	<-r.Context().Done()
	return nil, r.Context().Err()
}

// demotePolicy has no resend, no wait and no budget, the three origins
// a.test (the primary), b.test and c.test, and d.
func demotePolicy(d Demote) Policy {
	p := fastPolicy(0)
	p.Fallbacks = []string{"http://b.test", "http://c.test"}
	p.Demote = d
	return p
}

// ofKind returns the events of kind k among es.
func ofKind(es []Event, k EventKind) []Event {
	var out []Event
	for _, e := range es {
		if e.Kind == k {
			out = append(out, e)
		}
	}
	return out
}

// between asserts that d, a demotion's length, was drawn from [D/2, D].
func between(t *testing.T, ceiling, d time.Duration, msg ...any) {
	t.Helper()
	assert.GreaterOrEqual(t, d, ceiling/2, msg...)
	assert.LessOrEqual(t, d, ceiling, msg...)
}

// The count: After consecutive failures of the primary demote it; the
// next request's first attempt goes to the fallback as that origin's own
// request, with no EventFallback.
func TestDemoteAfterConsecutiveFailures(t *testing.T) {
	for _, tc := range []struct {
		name   string
		fail   mode
		status int
		err    error
	}{
		{"503", respond(http.StatusServiceUnavailable), http.StatusServiceUnavailable, nil},
		{"refused", refuse, 0, errRefused},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				o := newOrigins()
				o.set("a.test", tc.fail)
				p := demotePolicy(Demote{After: 3, For: time.Second})
				p.Fallbacks = p.Fallbacks[:1]
				p.Budget = DefaultPolicy().Budget
				budgets := NewBudgets()
				var rec recorder
				rt := New(o, WithPolicy(p), WithBudgets(budgets), WithObserver(rec.observe))

				for i := range 3 {
					assert.Equal(t, []string{"a.test", "b.test"}, o.get(t, rt), "request %d", i+1)
				}
				events := rec.all()
				// The tipping failure is judged before the request moves on.
				require.Equal(t, []EventKind{EventFallback, EventFallback, EventDemote, EventFallback}, rec.kinds())
				demote := events[2]
				assert.Equal(t, "http://a.test", demote.Origin)
				assert.Equal(t, tc.status, demote.Status)
				assert.Equal(t, tc.err, demote.Err)
				assert.Equal(t, 1, demote.Attempt)
				assert.Equal(t, "http://a.test/items", demote.Request.URL.String(), "the caller's request")
				between(t, time.Second, demote.Delay)

				hosts, code := o.send(t, rt, context.Background(), http.MethodGet, "http://a.test/items")
				assert.Equal(t, []string{"b.test"}, hosts, "the first attempt goes to the fallback")
				assert.Equal(t, http.StatusOK, code)
				assert.Len(t, rec.all(), 4, "no EventFallback for a first attempt moved by demotion")

				a := budgets.For("a.test", p.Budget).Stats()
				b := budgets.For("b.test", p.Budget).Stats()
				assert.Equal(t, 3, a.Requests, "the demoted primary's budget no longer records the request")
				assert.Equal(t, 4, b.Requests, "the fallback's budget records it as its own request")
				assert.Zero(t, a.Retries+b.Retries)
				assert.Equal(t, demote.Delay, a.DemotedFor, "no virtual time has passed")
				assert.Zero(t, b.DemotedFor)
			})
		})
	}
}

package httpretry

import (
	"context"
	"crypto/tls"
	"crypto/x509"
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

// What counts toward a demotion and what does not. With After 2, the
// primary fails, then answers the case's attempt, then fails again: an
// outcome that counts demotes it at once, one that resets the count
// leaves it in place, and one with no verdict lets the second failure
// demote it.
func TestDemoteWhatCounts(t *testing.T) {
	const (
		counts = "counts"
		resets = "resets"
		none   = "no verdict"
	)
	unknownCA := &tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}
	for _, tc := range []struct {
		name    string
		edit    func(*Policy)
		mode    mode
		ctx     func() (context.Context, context.CancelFunc)
		verdict string
		hosts   []string // where the case's request went
	}{
		{"503", nil, respond(http.StatusServiceUnavailable), nil, counts, []string{"a.test", "b.test"}},
		{"refused dial", nil, refuse, nil, counts, []string{"a.test", "b.test"}},
		{"PerTryTimeout fired", func(p *Policy) { p.PerTryTimeout = time.Second }, hang, nil, counts, []string{"a.test", "b.test"}},
		{"rejected certificate", nil, func(*http.Request) (*http.Response, error) { return nil, unknownCA }, nil, counts, []string{"a.test"}},
		{"200", nil, respond(http.StatusOK), nil, resets, []string{"a.test"}},
		{"404", nil, respond(http.StatusNotFound), nil, resets, []string{"a.test"}},
		{"500, not in RetryOn", nil, respond(http.StatusInternalServerError), nil, resets, []string{"a.test"}},
		{"429", nil, respond(http.StatusTooManyRequests), nil, resets, []string{"a.test", "b.test"}},
		{"429 with Retry-After", nil, statusRetryAfter(http.StatusTooManyRequests, "1"), nil, resets, []string{"a.test", "b.test"}},
		{"the caller cancels", nil, hang, func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(time.Second, cancel)
			return ctx, cancel
		}, none, []string{"a.test"}},
		{"the caller's deadline", nil, hang, func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), time.Second)
		}, none, []string{"a.test"}},
		{"the policy's Deadline", func(p *Policy) { p.Deadline = time.Second }, hang, nil, none, []string{"a.test"}},
		{"a hedged copy won, the primary's attempt canceled", func(p *Policy) { p.MaxRetries, p.Hedge = 1, Hedge{After: 100 * time.Millisecond} }, hang, nil, none, []string{"a.test", "b.test"}},
		{"RetryIf declines the error", func(p *Policy) {
			p.RetryIf = func(resp *http.Response, err error) bool {
				return resp != nil && resp.StatusCode == http.StatusServiceUnavailable
			}
		}, refuse, nil, none, []string{"a.test"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				o := newOrigins()
				p := demotePolicy(Demote{After: 2})
				if tc.edit != nil {
					tc.edit(&p)
				}
				var rec recorder
				rt := New(o, WithPolicy(p), WithObserver(rec.observe))
				demotions := func() int { return len(ofKind(rec.all(), EventDemote)) }

				o.set("a.test", respond(http.StatusServiceUnavailable))
				assert.Equal(t, []string{"a.test", "b.test"}, o.get(t, rt))
				require.Zero(t, demotions())

				o.set("a.test", tc.mode)
				ctx, cancel := context.Background(), context.CancelFunc(func() {})
				if tc.ctx != nil {
					ctx, cancel = tc.ctx()
				}
				hosts, _ := o.send(t, rt, ctx, http.MethodGet, "http://a.test/items")
				cancel()
				assert.Equal(t, tc.hosts, hosts)
				if tc.verdict == counts {
					assert.Equal(t, 1, demotions(), "the second failure in a row demotes")
					assert.Equal(t, []string{"b.test"}, o.get(t, rt), "demoted: the fallback goes first")
					return
				}
				require.Zero(t, demotions())

				o.set("a.test", respond(http.StatusServiceUnavailable))
				assert.Equal(t, []string{"a.test", "b.test"}, o.get(t, rt))
				if tc.verdict == resets {
					assert.Zero(t, demotions(), "the count started again")
					assert.Equal(t, []string{"a.test", "b.test"}, o.get(t, rt), "still first")
					assert.Equal(t, 1, demotions(), "and the next failure is the second in a row")
				} else {
					assert.Equal(t, 1, demotions(), "the count went on")
				}
				assert.Equal(t, []string{"b.test"}, o.get(t, rt), "demoted: the fallback goes first")
			})
		})
	}
}

// Only requests with a usable fallback count failures: a request with one
// candidate (no fallback, or only an http one for an https request) is
// sent as configured, and neither counts nor restores.
func TestDemoteNeedsAUsableFallback(t *testing.T) {
	for _, tc := range []struct {
		name string
		url  string
		ctx  func() context.Context
	}{
		{"WithFallbacks and no origin", "http://a.test/items", func() context.Context { return WithFallbacks(context.Background()) }},
		{"https never goes to http", "https://a.test/items", context.Background},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				o := newOrigins()
				o.set("a.test", refuse)
				p := demotePolicy(Demote{After: 2})
				var rec recorder
				rt := New(o, WithPolicy(p), WithObserver(rec.observe))
				for range 5 {
					hosts, code := o.send(t, rt, tc.ctx(), http.MethodGet, tc.url)
					assert.Equal(t, []string{"a.test"}, hosts, "MaxRetries 0 and one candidate: sent once")
					assert.Zero(t, code)
				}
				assert.Empty(t, ofKind(rec.all(), EventDemote), "one candidate: no count")
			})
		})
	}

	synctest.Test(t, func(t *testing.T) {
		o := newOrigins()
		o.set("a.test", refuse)
		var rec recorder
		rt := New(o, WithPolicy(demotePolicy(Demote{After: 1})), WithObserver(rec.observe))
		assert.Equal(t, []string{"a.test", "b.test"}, o.get(t, rt))
		require.Len(t, ofKind(rec.all(), EventDemote), 1)

		// Demoted, the primary still takes a request with no fallback, and
		// its answer restores nothing.
		o.set("a.test", respond(http.StatusOK))
		hosts, code := o.send(t, rt, WithFallbacks(context.Background()), http.MethodGet, "http://a.test/items")
		assert.Equal(t, []string{"a.test"}, hosts)
		assert.Equal(t, http.StatusOK, code)
		assert.Empty(t, ofKind(rec.all(), EventRestore))
		assert.Equal(t, []string{"b.test"}, o.get(t, rt), "still demoted")
	})
}

// A demotion's length: the nth in a row, each a failed probe, lasts
// min(n×For, Max), drawn from its upper half, and ends at that exact
// instant; after a restore, n falls by one for every whole For the origin
// spends undemoted. n itself is read from the origin's record.
func TestDemoteLengthsAndDecay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o := newOrigins()
		o.set("a.test", respond(http.StatusServiceUnavailable))
		var rec recorder
		budgets := NewBudgets()
		rt := New(o, WithPolicy(demotePolicy(Demote{After: 1, For: time.Second, Max: 3 * time.Second})),
			WithBudgets(budgets), WithObserver(rec.observe))
		a := budgets.entry("a.test")
		// demoted checks that the request just sent demoted the primary
		// as the nth in a row, and returns the length drawn.
		seen := 0
		demoted := func(n int64, ceiling time.Duration) time.Duration {
			t.Helper()
			es := ofKind(rec.all(), EventDemote)
			require.Len(t, es, seen+1)
			e := es[seen]
			seen++
			require.Equal(t, "http://a.test", e.Origin)
			assert.Equal(t, n, a.demotion.streak.Load())
			between(t, ceiling, e.Delay, "n = %d", n)
			assert.Equal(t, e.Delay, a.Stats().DemotedFor)
			return e.Delay
		}

		assert.Equal(t, []string{"a.test", "b.test"}, o.get(t, rt))
		d := demoted(1, time.Second)
		for n, ceiling := range []time.Duration{2, 3, 3, 3, 3} {
			time.Sleep(d - 1)
			assert.Equal(t, []string{"b.test"}, o.get(t, rt), "demoted until its last nanosecond")
			assert.Equal(t, time.Duration(1), a.Stats().DemotedFor)
			time.Sleep(1)
			assert.Zero(t, a.Stats().DemotedFor)
			assert.Equal(t, []string{"a.test", "b.test"}, o.get(t, rt), "expired: the probe fails")
			d = demoted(int64(n+2), ceiling*time.Second)
		}

		restore := func() {
			t.Helper()
			time.Sleep(d)
			o.set("a.test", respond(http.StatusOK))
			assert.Equal(t, []string{"a.test"}, o.get(t, rt), "the probe answers")
			assert.Zero(t, a.Stats().DemotedFor)
			o.set("a.test", respond(http.StatusServiceUnavailable))
		}
		restore()
		time.Sleep(5*time.Second - 1) // 4 whole For
		assert.Equal(t, []string{"a.test", "b.test"}, o.get(t, rt))
		d = demoted(1+6-4, 3*time.Second)

		restore()
		time.Sleep(2 * time.Second)
		assert.Equal(t, []string{"a.test", "b.test"}, o.get(t, rt))
		d = demoted(1+3-2, 2*time.Second)

		restore()
		time.Sleep(time.Hour)
		assert.Equal(t, []string{"a.test", "b.test"}, o.get(t, rt))
		demoted(1, time.Second)
	})
}

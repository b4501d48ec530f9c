package httpretry

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/httpretry/httpretry/internal/demotion"
)

// These tests drive Policy.Demote through RoundTrip (DESIGN point 18): a
// fake base stands for the origins, each answering by its current mode,
// inside a synctest bubble, so that demotions start and end at exact
// virtual instants and nothing sleeps.

// origins is a fake base whose hosts answer by their current mode (200 by
// default) and that logs every attempt's host in order, with the request
// it belongs to.
type origins struct {
	mu    sync.Mutex
	modes map[string]mode
	log   []sent
	ids   int
}

// sent is an attempt's host and the id of its request (see send).
type sent struct {
	host, id string
}

const requestIDHeader = "X-Test-Request"

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
	o.log = append(o.log, sent{r.URL.Host, r.Header.Get(requestIDHeader)})
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
	for _, e := range o.log {
		if e.host == host {
			n++
		}
	}
	return n
}

// send makes one request to url with ctx and returns the hosts its
// attempts went to, in order, and the status it got (0: an error).
func (o *origins) send(t *testing.T, rt http.RoundTripper, ctx context.Context, method, url string) ([]string, int) {
	t.Helper()
	o.mu.Lock()
	o.ids++
	id := fmt.Sprint(o.ids)
	o.mu.Unlock()
	var body io.Reader
	if method == http.MethodPost {
		body = strings.NewReader("payload")
	}
	req, err := http.NewRequestWithContext(ctx, method, url, body)
	require.NoError(t, err)
	req.Header.Set(requestIDHeader, id)
	resp, err := rt.RoundTrip(req)
	code := 0
	if err == nil {
		code = resp.StatusCode
		readAll(t, resp)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	var hosts []string
	for _, e := range o.log {
		if e.id == id {
			hosts = append(hosts, e.host)
		}
	}
	return hosts, code
}

// get sends a GET to a.test, the primary, with the policy's fallbacks.
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

// respondRetryAfter answers with code and a Retry-After of ra.
func respondRetryAfter(code int, ra string) mode {
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
// a.test (the primary), b.test and c.test, and d as its Demote.
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

// Over loopback: once the refusing primary is demoted, requests dial the
// fallback only, and reach it with its own URL and Host.
func TestDemoteOverLoopback(t *testing.T) {
	standby := newUpstream(t, func(w http.ResponseWriter, r *http.Request, n int) {
		io.WriteString(w, r.Host+r.URL.RequestURI())
	})
	primary := refusedAddr(t)
	base := newDialLog()
	defer base.CloseIdleConnections()
	p := fastPolicy(0)
	p.Fallbacks = []string{standby.URL}
	p.Demote = Demote{After: 2, For: time.Hour} // no expiry however slow the machine
	rt := New(base, WithPolicy(p))
	for range 5 {
		req, _ := http.NewRequest(http.MethodGet, "http://"+primary+"/items?q=1", nil)
		resp, err := rt.RoundTrip(req)
		require.NoError(t, err)
		assert.Equal(t, hostOf(standby.URL)+"/items?q=1", readAll(t, resp))
	}
	s := hostOf(standby.URL)
	assert.Equal(t, []string{primary, s, primary, s, s, s, s}, base.dialed())
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
		{"429 with Retry-After", nil, respondRetryAfter(http.StatusTooManyRequests, "1"), nil, resets, []string{"a.test", "b.test"}},
		{"the caller cancels", nil, hang, func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(time.Second, cancel)
			return ctx, cancel
		}, none, []string{"a.test"}},
		{"the caller's deadline", nil, hang, func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), time.Second)
		}, none, []string{"a.test"}},
		{"the policy's Deadline", func(p *Policy) { p.Deadline = time.Second }, hang, nil, none, []string{"a.test"}},
		// Overtaken by a copy elsewhere: how a black hole fails when no
		// PerTryTimeout cuts it (point 20).
		{"a hedged copy elsewhere won, the primary's attempt overtaken", func(p *Policy) { p.MaxRetries, p.Hedge = 1, Hedge{After: 100 * time.Millisecond} }, hang, nil, counts, []string{"a.test", "b.test"}},
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
		a := budgets.record("a.test")
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
			assert.Equal(t, n, a.demotion.Streak())
			between(t, ceiling, e.Delay, "n = %d", n)
			assert.Equal(t, e.Delay, a.budget.Stats().DemotedFor)
			return e.Delay
		}

		assert.Equal(t, []string{"a.test", "b.test"}, o.get(t, rt))
		d := demoted(1, time.Second)
		for n, ceiling := range []time.Duration{2, 3, 3, 3, 3} {
			time.Sleep(d - time.Nanosecond)
			assert.Equal(t, []string{"b.test"}, o.get(t, rt), "demoted until its last nanosecond")
			assert.Equal(t, time.Nanosecond, a.budget.Stats().DemotedFor)
			time.Sleep(time.Nanosecond)
			assert.Zero(t, a.budget.Stats().DemotedFor)
			assert.Equal(t, []string{"a.test", "b.test"}, o.get(t, rt), "expired: the probe fails")
			d = demoted(int64(n+2), ceiling*time.Second)
		}

		restore := func() {
			t.Helper()
			time.Sleep(d)
			o.set("a.test", respond(http.StatusOK))
			assert.Equal(t, []string{"a.test"}, o.get(t, rt), "the probe answers")
			assert.Zero(t, a.budget.Stats().DemotedFor)
			o.set("a.test", respond(http.StatusServiceUnavailable))
		}
		restore()
		time.Sleep(5*time.Second - time.Nanosecond) // 4 whole For
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

// demoteOrigins demotes each of hosts in turn, After failures each, by
// requests to the host itself with one healthy fallback, z.test, and
// leaves every host failing.
func demoteOrigins(t *testing.T, o *origins, rt http.RoundTripper, after int, hosts ...string) {
	t.Helper()
	for _, h := range hosts {
		o.set(h, respond(http.StatusServiceUnavailable))
		for range after {
			got, code := o.send(t, rt, WithFallbacks(context.Background(), "http://z.test"), http.MethodGet, "http://"+h+"/items")
			require.Equal(t, http.StatusOK, code)
			require.Equal(t, []string{h, "z.test"}, got, "%s is not demoted yet", h)
		}
	}
}

// The partition: demoted candidates go last, each group in configured
// order whatever the order they were demoted in; none is removed, so with
// every candidate failing a request makes exactly candidates + MaxRetries
// calls, its resends going round the candidates in the order the
// partition gave them.
func TestDemotePartition(t *testing.T) {
	for _, tc := range []struct {
		demote []string // in this order
		order  []string // a request's first attempts
	}{
		{nil, []string{"a.test", "b.test", "c.test", "d.test"}},
		{[]string{"b.test"}, []string{"a.test", "c.test", "d.test", "b.test"}},
		{[]string{"d.test", "b.test"}, []string{"a.test", "c.test", "b.test", "d.test"}},
		{[]string{"a.test"}, []string{"b.test", "c.test", "d.test", "a.test"}},
		{[]string{"c.test", "a.test"}, []string{"b.test", "d.test", "a.test", "c.test"}},
		{[]string{"d.test", "b.test", "a.test"}, []string{"c.test", "a.test", "b.test", "d.test"}},
		{[]string{"d.test", "c.test", "b.test", "a.test"}, []string{"a.test", "b.test", "c.test", "d.test"}},
	} {
		for _, retries := range []int{0, 2} {
			t.Run(fmt.Sprintf("demoted %v, MaxRetries %d", tc.demote, retries), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					o := newOrigins()
					p := demotePolicy(Demote{After: 2})
					p.MaxRetries = retries
					p.Fallbacks = append(p.Fallbacks, "http://d.test")
					var rec recorder
					rt := New(o, WithPolicy(p), WithObserver(rec.observe))
					demoteOrigins(t, o, rt, 2, tc.demote...)
					require.Len(t, ofKind(rec.all(), EventDemote), len(tc.demote))
					for _, h := range []string{"a.test", "b.test", "c.test", "d.test"} {
						o.set(h, refuse)
					}

					want := append([]string(nil), tc.order...)
					want = append(want, tc.order[:retries]...)
					got, code := o.send(t, rt, context.Background(), http.MethodGet, "http://a.test/items")
					assert.Zero(t, code)
					assert.Equal(t, want, got)
				})
			})
		}
	}
}

// With every candidate down for a long stretch, demotions come and go,
// and every request still makes exactly candidates + MaxRetries calls,
// each candidate's first attempt before any resend.
func TestDemoteAllDown(t *testing.T) {
	for _, retries := range []int{0, 2} {
		t.Run(fmt.Sprintf("MaxRetries %d", retries), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				o := newOrigins()
				for _, h := range []string{"a.test", "b.test", "c.test"} {
					o.set(h, refuse)
				}
				p := demotePolicy(Demote{After: 2, For: 100 * time.Millisecond, Max: 400 * time.Millisecond})
				p.MaxRetries = retries
				var rec recorder
				rt := New(o, WithPolicy(p), WithObserver(rec.observe))
				for i := range 200 {
					got := o.get(t, rt)
					require.Len(t, got, 3+retries, "request %d", i)
					assert.ElementsMatch(t, []string{"a.test", "b.test", "c.test"}, got[:3], "request %d", i)
					time.Sleep(10 * time.Millisecond)
				}
				assert.NotEmpty(t, ofKind(rec.all(), EventDemote), "demotions came and went")
			})
		})
	}
}

// With every candidate demoted the configured order stays, and an answer
// from any of them restores it at once, with no probe.
func TestDemoteAllDemotedAnswerRestores(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o := newOrigins()
		var rec recorder
		rt := New(o, WithPolicy(demotePolicy(Demote{After: 1, For: time.Minute})), WithObserver(rec.observe))
		demoteOrigins(t, o, rt, 1, "c.test", "a.test", "b.test")
		require.Len(t, ofKind(rec.all(), EventDemote), 3)

		o.set("b.test", respond(http.StatusOK))
		assert.Equal(t, []string{"a.test", "b.test"}, o.get(t, rt), "the configured order")
		restores := ofKind(rec.all(), EventRestore)
		require.Len(t, restores, 1)
		assert.Equal(t, "http://b.test", restores[0].Origin)
		assert.Equal(t, []string{"b.test"}, o.get(t, rt), "b alone undemoted: first")
	})
}

// Demote{After: -1} keeps point 13's fixed order, however often the
// primary fails.
func TestDemoteOffKeepsTheConfiguredOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o := newOrigins()
		o.set("a.test", refuse)
		o.set("b.test", respond(http.StatusServiceUnavailable))
		var rec recorder
		rt := New(o, WithPolicy(demotePolicy(Demote{After: -1})), WithObserver(rec.observe))
		for range 50 {
			assert.Equal(t, []string{"a.test", "b.test", "c.test"}, o.get(t, rt))
			time.Sleep(10 * time.Millisecond)
		}
		assert.Empty(t, ofKind(rec.all(), EventDemote))
		assert.Len(t, ofKind(rec.all(), EventFallback), 100)
	})
}

// demoteOnce demotes the primary with one failure (After 1) and waits
// until its demotion has just expired.
func demoteOnce(t *testing.T, o *origins, rt http.RoundTripper, rec *recorder) {
	t.Helper()
	o.set("a.test", respond(http.StatusServiceUnavailable))
	require.Equal(t, []string{"a.test", "b.test"}, o.get(t, rt))
	es := ofKind(rec.all(), EventDemote)
	require.Len(t, es, 1)
	time.Sleep(es[0].Delay)
}

// After the demotion, one request probes the primary in its configured
// place: an answer restores it, a failure demotes it again for longer.
func TestDemoteProbe(t *testing.T) {
	t.Run("answered", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			o := newOrigins()
			var rec recorder
			rt := New(o, WithPolicy(demotePolicy(Demote{After: 1})), WithObserver(rec.observe))
			demoteOnce(t, o, rt, &rec)
			o.set("a.test", respond(http.StatusOK))
			assert.Equal(t, []string{"a.test"}, o.get(t, rt), "the probe")
			restores := ofKind(rec.all(), EventRestore)
			require.Len(t, restores, 1)
			assert.Equal(t, "http://a.test", restores[0].Origin)
			assert.Equal(t, http.StatusOK, restores[0].Status)
			assert.Equal(t, 1, restores[0].Attempt)
			assert.Equal(t, "http://a.test/items", restores[0].Request.URL.String())
			assert.Equal(t, []string{"a.test"}, o.get(t, rt), "first again")
			assert.Equal(t, []EventKind{EventDemote, EventFallback, EventRestore}, rec.kinds())
		})
	})
	t.Run("failed", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			o := newOrigins()
			var rec recorder
			budgets := NewBudgets()
			rt := New(o, WithPolicy(demotePolicy(Demote{After: 3, For: time.Second})), WithBudgets(budgets), WithObserver(rec.observe))
			o.set("a.test", respond(http.StatusServiceUnavailable))
			for range 3 {
				require.Equal(t, []string{"a.test", "b.test"}, o.get(t, rt))
			}
			first := ofKind(rec.all(), EventDemote)
			require.Len(t, first, 1)
			time.Sleep(first[0].Delay)

			assert.Equal(t, []string{"a.test", "b.test"}, o.get(t, rt), "one failed probe is enough, not After")
			again := ofKind(rec.all(), EventDemote)
			require.Len(t, again, 2)
			assert.Equal(t, "http://a.test", again[1].Origin)
			assert.Equal(t, http.StatusServiceUnavailable, again[1].Status)
			between(t, 2*time.Second, again[1].Delay, "the second in a row")
			assert.Equal(t, int64(2), budgets.record("a.test").demotion.Streak())
			assert.Equal(t, []string{"b.test"}, o.get(t, rt), "demoted again")
			assert.Empty(t, ofKind(rec.all(), EventRestore))
		})
	})
}

// Under 200 concurrent requests after the demotion, exactly one probes
// the primary, and the others put it last while the probe is in flight.
func TestDemoteOneProbeInFlight(t *testing.T) {
	for _, tc := range []struct {
		name    string
		answer  int
		restore bool
	}{
		{"the probe answers", http.StatusOK, true},
		{"the probe fails", http.StatusServiceUnavailable, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				o := newOrigins()
				var rec recorder
				rt := New(o, WithPolicy(demotePolicy(Demote{After: 1})), WithObserver(rec.observe))
				demoteOnce(t, o, rt, &rec)
				release := make(chan struct{})
				o.set("a.test", func(r *http.Request) (*http.Response, error) {
					<-release
					return respond(tc.answer)(r)
				})

				const requests = 200
				var wg sync.WaitGroup
				for range requests {
					wg.Go(func() {
						req, _ := http.NewRequest(http.MethodGet, "http://a.test/items", nil)
						resp, err := rt.RoundTrip(req)
						if assert.NoError(t, err) {
							assert.Equal(t, http.StatusOK, resp.StatusCode)
							resp.Body.Close()
						}
					})
				}
				synctest.Wait() // every request is done but the probe
				// Beside the request that demoted it, which went to both.
				assert.Equal(t, 1+1, o.calls("a.test"), "one probe")
				assert.Equal(t, 1+requests-1, o.calls("b.test"), "the others went to the fallback first")
				close(release)
				wg.Wait()

				kinds := rec.kinds()
				if tc.restore {
					assert.Equal(t, []EventKind{EventDemote, EventFallback, EventRestore}, kinds)
					assert.Equal(t, []string{"a.test"}, o.get(t, rt))
				} else {
					assert.Equal(t, []EventKind{EventDemote, EventFallback, EventDemote, EventFallback}, kinds)
					assert.Equal(t, []string{"b.test"}, o.get(t, rt))
				}
			})
		})
	}
}

// A probe whose request ends with no verdict on the primary gives back its
// claim, and the next request probes.
func TestDemoteProbeReleased(t *testing.T) {
	for _, tc := range []struct {
		name  string
		edit  func(*Policy)
		hangs bool // else it answers 429
		ctx   func() (context.Context, context.CancelFunc)
		hosts []string
	}{
		{"the caller cancels", nil, true, func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(time.Second, cancel)
			return ctx, cancel
		}, []string{"a.test"}},
		{"the caller's deadline", nil, true, func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), time.Second)
		}, []string{"a.test"}},
		{"the policy's Deadline", func(p *Policy) { p.Deadline = time.Second }, true, nil, []string{"a.test"}},
		{"429", nil, false, nil, []string{"a.test", "b.test"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				o := newOrigins()
				p := demotePolicy(Demote{After: 1})
				if tc.edit != nil {
					tc.edit(&p)
				}
				var rec recorder
				rt := New(o, WithPolicy(p), WithObserver(rec.observe))
				demoteOnce(t, o, rt, &rec)
				if tc.hangs {
					o.set("a.test", hang)
				} else {
					o.set("a.test", respond(http.StatusTooManyRequests))
				}
				ctx, cancel := context.Background(), context.CancelFunc(func() {})
				if tc.ctx != nil {
					ctx, cancel = tc.ctx()
				}
				defer cancel()

				var probe []string
				done := make(chan struct{})
				go func() {
					defer close(done)
					probe, _ = o.send(t, rt, ctx, http.MethodGet, "http://a.test/items")
				}()
				synctest.Wait()
				if tc.hangs {
					// The probe hangs until its end: meanwhile its claim
					// holds.
					assert.Equal(t, []string{"b.test"}, o.get(t, rt), "while the probe is in flight")
				}
				<-done
				assert.Equal(t, tc.hosts, probe)
				assert.Len(t, ofKind(rec.all(), EventDemote), 1, "no verdict")

				o.set("a.test", respond(http.StatusOK))
				assert.Equal(t, []string{"a.test"}, o.get(t, rt), "the next request probes")
				assert.Len(t, ofKind(rec.all(), EventRestore), 1)
			})
		})
	}
}

// A request that may not move on, a POST without a key, never probes: it
// goes to the fallback first, and leaves the probe to the next request
// that may.
func TestDemoteUnkeyedPostNeverProbes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o := newOrigins()
		var rec recorder
		rt := New(o, WithPolicy(demotePolicy(Demote{After: 1})), WithObserver(rec.observe))
		demoteOnce(t, o, rt, &rec)
		o.set("a.test", respond(http.StatusOK))
		for range 3 {
			hosts, code := o.send(t, rt, context.Background(), http.MethodPost, "http://a.test/items")
			assert.Equal(t, []string{"b.test"}, hosts)
			assert.Equal(t, http.StatusOK, code)
		}
		o.set("b.test", respond(http.StatusServiceUnavailable))
		hosts, code := o.send(t, rt, context.Background(), http.MethodPost, "http://a.test/items")
		assert.Equal(t, []string{"b.test"}, hosts, "it reached the fallback: not sent again, not even to the primary")
		assert.Equal(t, http.StatusServiceUnavailable, code)
		assert.Empty(t, ofKind(rec.all(), EventRestore))

		hosts, code = o.send(t, rt, WithIdempotent(context.Background()), http.MethodPost, "http://a.test/items")
		assert.Equal(t, []string{"a.test"}, hosts, "a POST that may be resent probes")
		assert.Equal(t, http.StatusOK, code)
		assert.Len(t, ofKind(rec.all(), EventRestore), 1)
	})
}

// Retry-After across requests: a demoted origin whose answer asks for
// longer than its demotion has left stays demoted until then, at most
// MaxRetryAfter, without counting a failure. An undemoted origin's
// Retry-After demotes nothing.
func TestDemoteRetryAfterAcrossRequests(t *testing.T) {
	for _, tc := range []struct {
		name          string
		answer        mode
		maxRetryAfter time.Duration
		held          time.Duration // DemotedFor just after the answer; 0: the demotion's own
	}{
		{"503 asks for 5s", respondRetryAfter(http.StatusServiceUnavailable, "5"), 0, 5 * time.Second},
		{"429 asks for 5s", respondRetryAfter(http.StatusTooManyRequests, "5"), 0, 5 * time.Second},
		{"an HTTP-date 7s ahead", func(r *http.Request) (*http.Response, error) {
			return respondRetryAfter(http.StatusServiceUnavailable, time.Now().Add(7*time.Second).UTC().Format(http.TimeFormat))(r)
		}, 0, 7 * time.Second},
		{"capped at MaxRetryAfter", respondRetryAfter(http.StatusServiceUnavailable, "60"), 3 * time.Second, 3 * time.Second},
		{"shorter than what is left", respondRetryAfter(http.StatusServiceUnavailable, "0"), 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				o := newOrigins()
				p := demotePolicy(Demote{After: 3, For: time.Second})
				p.Fallbacks = p.Fallbacks[:1]
				if tc.maxRetryAfter > 0 {
					p.MaxRetryAfter = tc.maxRetryAfter
				}
				var rec recorder
				budgets := NewBudgets()
				rt := New(o, WithPolicy(p), WithBudgets(budgets), WithObserver(rec.observe))
				a := budgets.record("a.test")
				o.set("a.test", respond(http.StatusServiceUnavailable))
				for range 3 {
					require.Equal(t, []string{"a.test", "b.test"}, o.get(t, rt))
				}
				demotion := a.budget.Stats().DemotedFor
				require.NotZero(t, demotion)

				// The fallback fails, and the demoted primary, last, answers.
				o.set("b.test", respond(http.StatusServiceUnavailable))
				o.set("a.test", tc.answer)
				assert.Equal(t, []string{"b.test", "a.test"}, o.get(t, rt))
				o.set("b.test", respond(http.StatusOK))
				o.set("a.test", respond(http.StatusOK))
				held := tc.held
				if held == 0 {
					held = demotion
				}
				assert.Equal(t, held, a.budget.Stats().DemotedFor)
				assert.Len(t, ofKind(rec.all(), EventDemote), 1, "no failure counted, no new demotion")
				assert.Empty(t, ofKind(rec.all(), EventRestore))

				time.Sleep(held - time.Nanosecond)
				assert.Equal(t, []string{"b.test"}, o.get(t, rt), "still demoted")
				time.Sleep(time.Nanosecond)
				assert.Equal(t, []string{"a.test"}, o.get(t, rt), "the probe")
				assert.Len(t, ofKind(rec.all(), EventRestore), 1)
			})
		})
	}

	t.Run("a failed probe", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			o := newOrigins()
			var rec recorder
			budgets := NewBudgets()
			rt := New(o, WithPolicy(demotePolicy(Demote{After: 1})), WithBudgets(budgets), WithObserver(rec.observe))
			demoteOnce(t, o, rt, &rec)
			o.set("a.test", respondRetryAfter(http.StatusServiceUnavailable, "60"))
			assert.Equal(t, []string{"a.test", "b.test"}, o.get(t, rt))
			require.Len(t, ofKind(rec.all(), EventDemote), 2, "demoted again")
			assert.Equal(t, 30*time.Second, budgets.record("a.test").budget.Stats().DemotedFor, "and held for MaxRetryAfter")
		})
	})

	t.Run("undemoted", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			o := newOrigins()
			var rec recorder
			rt := New(o, WithPolicy(demotePolicy(Demote{After: 3})), WithObserver(rec.observe))
			o.set("a.test", respondRetryAfter(http.StatusTooManyRequests, "5"))
			for range 5 {
				assert.Equal(t, []string{"a.test", "b.test"}, o.get(t, rt))
			}
			assert.Empty(t, ofKind(rec.all(), EventDemote))
		})
	})
}

// BudgetStats.DemotedFor and Budgets.String show how long a demotion has
// left, and the state is the shared Budgets', so that another transport
// with the same Budgets puts the origin last too.
func TestDemoteShownInBudgets(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o := newOrigins()
		o.set("a.test", refuse)
		p := demotePolicy(Demote{After: 1, For: 10 * time.Second})
		p.Budget = DefaultPolicy().Budget
		budgets := NewBudgets()
		var rec recorder
		rt := New(o, WithPolicy(p), WithBudgets(budgets), WithObserver(rec.observe))
		assert.Equal(t, []string{"a.test", "b.test"}, o.get(t, rt))
		es := ofKind(rec.all(), EventDemote)
		require.Len(t, es, 1)
		d := es[0].Delay

		demotedFor := func(host string) string {
			t.Helper()
			var m map[string]struct {
				DemotedFor string `json:"demotedFor"`
			}
			require.NoError(t, json.Unmarshal([]byte(budgets.String()), &m))
			return m[host].DemotedFor
		}
		a := budgets.For("a.test", p.Budget)
		assert.Equal(t, d, a.Stats().DemotedFor)
		assert.Equal(t, d.String(), demotedFor("a.test"))
		assert.Contains(t, budgets.String(), `"demotedFor":"`+d.String()+`"`)
		assert.Equal(t, "0s", demotedFor("b.test"))

		other := New(o, WithPolicy(p), WithBudgets(budgets))
		assert.Equal(t, []string{"b.test"}, o.get(t, other), "another transport, the same Budgets")

		time.Sleep(3 * time.Second)
		assert.Equal(t, d-3*time.Second, a.Stats().DemotedFor)
		assert.Equal(t, (d - 3*time.Second).String(), demotedFor("a.test"))
		time.Sleep(d)
		assert.Zero(t, a.Stats().DemotedFor, "expired")
		assert.Equal(t, "0s", demotedFor("a.test"))
	})
}

// A callback that panics during the probe's first round (RetryIf judging
// its answer, an observer told of a hedged copy) must not leave the claim
// taken: the origin would stay last for good, never probed again.
func TestDemoteProbeReleasedOnPanic(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(p *Policy, panics *bool)
		obs  func(panics *bool) func(Event)
	}{
		{"RetryIf", func(p *Policy, panics *bool) {
			p.RetryIf = func(resp *http.Response, err error) bool {
				if *panics {
					panic("RetryIf")
				}
				return err != nil || resp.StatusCode == http.StatusServiceUnavailable
			}
		}, nil},
		{"an observer of EventHedge", func(p *Policy, _ *bool) {
			p.MaxRetries, p.Hedge = 1, Hedge{After: 100 * time.Millisecond}
		}, func(panics *bool) func(Event) {
			return func(e Event) {
				if *panics && e.Kind == EventHedge {
					panic("observer")
				}
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				o := newOrigins()
				var rec recorder
				panics := false
				p := demotePolicy(Demote{After: 1})
				tc.edit(&p, &panics)
				opts := []Option{WithPolicy(p), WithObserver(rec.observe)}
				if tc.obs != nil {
					opts = append(opts, WithObserver(tc.obs(&panics)))
				}
				rt := New(o, opts...)
				demoteOnce(t, o, rt, &rec)
				o.set("a.test", func(r *http.Request) (*http.Response, error) {
					if tc.obs != nil {
						return hang(r)
					}
					return respond(http.StatusOK)(r)
				})
				panics = true
				func() {
					defer func() { require.NotNil(t, recover()) }()
					o.get(t, rt)
				}()
				panics = false
				o.set("a.test", respond(http.StatusOK))
				time.Sleep(time.Hour)
				assert.Equal(t, []string{"a.test"}, o.get(t, rt), "the next request probes")
			})
		})
	}
}

// With demotion off and budgets disabled, a request with fallbacks keeps no
// state of its origin: Budgets holds no entry for it, as a host with no
// fallback would not get one.
func TestDemotionOffKeepsNoStateOfTheOrigin(t *testing.T) {
	base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		return fakeResponse(r, http.StatusOK, nil, "ok"), nil
	})
	bs := NewBudgets()
	rt := New(base, WithPolicy(demotePolicy(Demote{After: -1})), WithBudgets(bs))
	req, _ := http.NewRequest(http.MethodGet, "http://a.test/x", nil)
	resp, err := rt.RoundTrip(req)
	require.NoError(t, err)
	assert.Equal(t, "ok", readAll(t, resp))
	var hosts []string
	bs.Range(func(host string, _ BudgetStats) bool { hosts = append(hosts, host); return true })
	assert.Empty(t, hosts)
}

// A 429 that comes back on the fast path, while another request demoted
// its origin, restores nothing: the origin is alive but asks for less.
// Any other answer there restores it.
func TestAFastPathAnswerToADemotedOrigin(t *testing.T) {
	for _, tc := range []struct {
		code     int
		restored bool
	}{{http.StatusTooManyRequests, false}, {http.StatusOK, true}} {
		t.Run(http.StatusText(tc.code), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := demotePolicy(Demote{After: 1, For: time.Hour})
				p.RetryOn = []int{http.StatusServiceUnavailable} // a 429 is an answer
				bs := NewBudgets()
				var rt http.RoundTripper
				base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
					switch {
					case r.URL.Host != "a.test":
						return fakeResponse(r, http.StatusOK, nil, "ok"), nil
					case r.Header.Get("X-Other") != "":
						return fakeResponse(r, http.StatusServiceUnavailable, nil, "busy"), nil
					}
					// While this request's attempt is in flight, another
					// request's failure demotes a.test.
					other, _ := http.NewRequest(http.MethodGet, "http://a.test/", nil)
					other.Header.Set("X-Other", "1")
					resp, err := rt.RoundTrip(other)
					require.NoError(t, err)
					resp.Body.Close()
					require.Positive(t, bs.For("a.test", p.Budget).Stats().DemotedFor)
					return fakeResponse(r, tc.code, nil, "answer"), nil
				})
				rt = New(base, WithPolicy(p), WithBudgets(bs))
				req, _ := http.NewRequest(http.MethodGet, "http://a.test/", nil)
				resp, err := rt.RoundTrip(req)
				require.NoError(t, err)
				assert.Equal(t, tc.code, resp.StatusCode)
				resp.Body.Close()
				demoted := bs.For("a.test", p.Budget).Stats().DemotedFor > 0
				assert.Equal(t, !tc.restored, demoted)
			})
		})
	}
}

// A probe is claimed when an attempt goes to it, not when a request is set
// up: a request whose own origin is slow to answer holds no fallback's
// probe, so another request whose own origin fails probes that fallback at
// once instead of passing it over (before, the slow request claimed the
// probe at set-up and held it while it waited, and the other went to the
// next fallback).
func TestAProbeIsClaimedWhenItsAttemptGoes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o := newOrigins()
		budgets := NewBudgets()
		rt := New(o, WithPolicy(demotePolicy(Demote{After: 1, For: time.Second})), WithBudgets(budgets))
		expireDemotion(t, budgets, "b.test") // the next request that reaches b.test probes it

		release := make(chan struct{})
		o.set("a.test", func(r *http.Request) (*http.Response, error) {
			if r.Method == http.MethodPut {
				<-release // the slow request
				return respond(http.StatusOK)(r)
			}
			return respond(http.StatusServiceUnavailable)(r)
		})
		// A body without GetBody: recorded, so the request takes the slow
		// path and is set up with its candidates before its attempt.
		req, _ := http.NewRequest(http.MethodPut, "http://a.test/items", io.NopCloser(strings.NewReader("x")))
		req.ContentLength = 1
		done := sendInBackground(t, rt, req)
		synctest.Wait()
		assert.Equal(t, []string{"a.test", "b.test"}, o.get(t, rt), "the fallback is probed, not passed over")
		assert.False(t, budgets.record("b.test").demotion.Active(), "and its answer restored it")
		close(release)
		<-done
	})
}

// A request that set up a demoted fallback in its place to probe it, and
// finds, when its attempt would go there, that another request claimed the
// probe meanwhile, passes it over as set-up would have: one request at a
// time probes an origin, however their set-ups interleave.
func TestAProbeClaimedMeanwhileIsPassedOver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o := newOrigins()
		budgets := NewBudgets()
		rt := New(o, WithPolicy(demotePolicy(Demote{After: 1, For: time.Second})), WithBudgets(budgets))
		b := expireDemotion(t, budgets, "b.test")
		var other demotion.Probe
		o.set("a.test", func(r *http.Request) (*http.Response, error) {
			// Another request claims the probe while this one's first
			// attempt is under way.
			var ok bool
			other, ok = b.demotion.Claim(time.Now())
			require.True(t, ok)
			return respond(http.StatusServiceUnavailable)(r)
		})
		assert.Equal(t, []string{"a.test", "c.test"}, o.get(t, rt), "b.test passed over")
		assert.Zero(t, o.calls("b.test"))
		assert.True(t, b.demotion.Active(), "the other request's probe still stands")
		b.demotion.Release(other)
	})
}

// A copy that took a fallback's probe and then does not go (its budget
// refused it) gives the probe back at once: the request, still waiting on
// its own origin, must not keep another request from probing the
// fallback.
func TestACopyThatDoesNotGoGivesItsProbeBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o := newOrigins()
		budgets := NewBudgets()
		p := hedgedDemotePolicy()
		p.Budget = BudgetConfig{MinRetries: -1} // a quiet window grants no copy
		var refused []Event
		rt := New(o, WithPolicy(p), WithBudgets(budgets), WithObserver(func(e Event) {
			if e.Kind == EventHedge && e.Reason != 0 {
				refused = append(refused, e)
			}
		}))
		expireDemotion(t, budgets, "b.test")

		release := make(chan struct{})
		o.set("a.test", func(r *http.Request) (*http.Response, error) {
			if r.Method == http.MethodHead {
				<-release // the slow request, which tries a copy
				return respond(http.StatusOK)(r)
			}
			return respond(http.StatusServiceUnavailable)(r)
		})
		req, _ := http.NewRequest(http.MethodHead, "http://a.test/items", nil)
		done := sendInBackground(t, rt, req)
		time.Sleep(50 * time.Millisecond)
		synctest.Wait()
		require.Len(t, refused, 1, "the copy was refused")
		assert.Equal(t, ReasonBudget, refused[0].Reason)
		assert.Equal(t, []string{"a.test", "b.test"}, o.get(t, rt), "the probe was given back")
		close(release)
		<-done
	})
}

// A hedged copy to a demoted fallback whose demotion has expired is that
// fallback's probe: it claims it, and another request meanwhile passes the
// fallback over, so that one request at a time probes it.
func TestACopyToAnExpiredFallbackIsItsProbe(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o := newOrigins()
		budgets := NewBudgets()
		p := hedgedDemotePolicy()
		rt := New(o, WithPolicy(p), WithBudgets(budgets))
		expireDemotion(t, budgets, "b.test")

		release := make(chan struct{})
		slow := func(r *http.Request) (*http.Response, error) {
			select {
			case <-release:
				return respond(http.StatusOK)(r)
			case <-r.Context().Done():
				return nil, r.Context().Err()
			}
		}
		o.set("a.test", func(r *http.Request) (*http.Response, error) {
			if r.Method == http.MethodHead {
				return slow(r) // the hedged request
			}
			return respond(http.StatusServiceUnavailable)(r)
		})
		o.set("b.test", slow)
		req, _ := http.NewRequest(http.MethodHead, "http://a.test/items", nil)
		done := sendInBackground(t, rt, req)
		time.Sleep(50 * time.Millisecond) // the copy went to b.test
		synctest.Wait()
		require.Equal(t, 1, o.calls("b.test"), "the copy")
		assert.Equal(t, []string{"a.test", "c.test"}, o.get(t, rt), "b.test is being probed: passed over")
		close(release)
		<-done
	})
}

// hedgedDemotePolicy is demotePolicy, one failure demoting for a second,
// with two resends and a copy after 10 ms.
func hedgedDemotePolicy() Policy {
	p := demotePolicy(Demote{After: 1, For: time.Second})
	p.MaxRetries = 2
	p.Hedge = Hedge{After: 10 * time.Millisecond, Max: 1}
	return p
}

// sendInBackground sends req through rt from a goroutine of its own; the
// channel it returns is closed once RoundTrip has returned with no error
// and the body is closed.
func sendInBackground(t *testing.T, rt http.RoundTripper, req *http.Request) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		resp, err := rt.RoundTrip(req)
		if assert.NoError(t, err) {
			resp.Body.Close()
		}
	}()
	return done
}

// expireDemotion demotes host in budgets, as its failures would, and
// waits, in the bubble's time, until the demotion has expired with its
// probe free: the next request that reaches host probes it.
func expireDemotion(t *testing.T, budgets *Budgets, host string) *originRecord {
	t.Helper()
	r := budgets.record(host)
	demoted, d := r.demotion.Failed(time.Now(), demotion.Probe{}, Demote{After: 1, For: time.Second}.resolve(), nil)
	require.True(t, demoted)
	time.Sleep(d)
	return r
}

// A recovering primary whose probe, on a cold connection, is slower than
// the hedge delay is overtaken by a copy on the warm standby. The copy's
// answer returns at once; the probe runs on to its own answer, which
// restores the primary (DESIGN point 23). It used to be cancelled and
// counted as a failure: demoted again, the next requests on the standby.
func TestAProbeOvertakenByACopyGetsItsOwnVerdict(t *testing.T) {
	release := make(chan struct{})
	primary := newUpstream(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if n == 1 {
			// The cold connection: the probe's answer comes after the
			// copy's, and only once RoundTrip has returned.
			select {
			case <-release:
			case <-r.Context().Done():
				return
			}
		}
		io.WriteString(w, "primary")
	})
	standby := newUpstream(t, func(w http.ResponseWriter, r *http.Request, n int) {
		io.WriteString(w, "standby")
	})
	base := &http.Transport{}
	defer base.CloseIdleConnections()
	p := fastPolicy(2)
	p.Fallbacks = []string{standby.URL}
	p.Hedge = Hedge{After: 20 * time.Millisecond}
	p.Demote = Demote{After: 1, For: time.Minute}
	budgets := NewBudgets()
	var rec recorder
	verdict := make(chan Event, 2)
	rt := New(base, WithPolicy(p), WithBudgets(budgets), WithObserver(rec.observe), WithObserver(func(e Event) {
		if e.Kind == EventRestore || e.Kind == EventDemote {
			verdict <- e
		}
	}))
	a := demotedLongAgo(t, budgets, hostOf(primary.URL), time.Minute)

	get := func() string {
		req, _ := http.NewRequest(http.MethodGet, primary.URL+"/items", nil)
		resp, err := rt.RoundTrip(req)
		require.NoError(t, err)
		return readAll(t, resp)
	}
	assert.Equal(t, "standby", get(), "the copy's answer, at once")
	assert.Equal(t, int64(1), standby.calls.Load())
	assert.True(t, a.demotion.Active(), "the probe is still out")
	assert.Equal(t, []EventKind{EventHedge}, rec.kinds(), "no verdict yet")

	close(release)
	select {
	case e := <-verdict:
		assert.Equal(t, EventRestore, e.Kind)
		assert.Equal(t, "http://"+hostOf(primary.URL), e.Origin)
		assert.Equal(t, 1, e.Attempt)
		assert.Equal(t, http.StatusOK, e.Status)
	case <-time.After(10 * time.Second):
		t.Fatal("the probe's answer gave no verdict")
	}
	assert.Equal(t, []EventKind{EventHedge, EventRestore}, rec.kinds(), "not demoted again")
	assert.False(t, a.demotion.Active(), "restored")
	assert.Equal(t, "primary", get(), "first again")
	assert.Equal(t, int64(2), primary.calls.Load())
	assert.Equal(t, int64(1), standby.calls.Load())
}

// A probe that runs on after a copy elsewhere won the request gets the
// verdict of its own outcome, bounded by PerTryTimeout or, without one,
// by the length of the demotion it probes; the caller's context, once
// RoundTrip has returned, does not cut it.
func TestAProbeRunsOnToItsOwnVerdict(t *testing.T) {
	const length = 40 * time.Second // the demotion demotedLongAgo draws is in [30 s, 60 s]
	for _, tc := range []struct {
		name    string
		perTry  time.Duration
		mode    mode          // the primary, after the hedge delay
		cancel  bool          // the caller cancels once RoundTrip returned
		verdict EventKind     // told of the primary
		after   time.Duration // since the probe went; 0: the demotion's length
	}{
		{"answers late", 0, answerAfter(5 * time.Second), false, EventRestore, 5 * time.Second},
		{"answers late, the caller's context ended", 0, answerAfter(5 * time.Second), true, EventRestore, 5 * time.Second},
		{"fails late", 0, failAfter(5 * time.Second), false, EventDemote, 5 * time.Second},
		{"black-holed: cut at the demotion's length", 0, hang, false, EventDemote, 0},
		{"black-holed: cut at PerTryTimeout", 10 * time.Second, hang, false, EventDemote, 10 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				o := newOrigins()
				o.set("a.test", tc.mode)
				o.set("b.test", answerAfter(10*time.Millisecond))
				budgets := NewBudgets()
				p := hedgedDemotePolicy()
				p.PerTryTimeout = tc.perTry
				var rec recorder
				rt := New(o, WithPolicy(p), WithBudgets(budgets), WithObserver(rec.observe))
				a := demotedLongAgo(t, budgets, "a.test", length)
				after := tc.after
				if after == 0 {
					// The demotion's length, as a probe of it reads it.
					p, ok := a.demotion.Claim(time.Now())
					require.True(t, ok)
					after = a.demotion.Lasted(p, 0)
					a.demotion.Release(p)
				}

				start := time.Now()
				ctx, cancel := context.WithCancel(context.Background())
				hosts, code := o.send(t, rt, ctx, http.MethodGet, "http://a.test/items")
				if tc.cancel {
					cancel()
				}
				assert.Equal(t, []string{"a.test", "b.test"}, hosts)
				assert.Equal(t, http.StatusOK, code)
				assert.Equal(t, 20*time.Millisecond, time.Since(start), "the copy's answer, at once")
				verdicts := func() []Event {
					return append(ofKind(rec.all(), EventRestore), ofKind(rec.all(), EventDemote)...)
				}
				assert.Empty(t, verdicts(), "no verdict yet")

				time.Sleep(after - time.Since(start) - time.Nanosecond)
				assert.Empty(t, verdicts(), "the probe still runs")
				assert.True(t, a.demotion.Active())
				time.Sleep(time.Nanosecond)
				synctest.Wait()
				es := verdicts()
				require.Len(t, es, 1)
				assert.Equal(t, tc.verdict, es[0].Kind)
				assert.Equal(t, 1, es[0].Attempt)
				if tc.verdict == EventDemote {
					assert.Equal(t, int64(2), a.demotion.Streak(), "demoted again, the second in a row")
					assert.Equal(t, "b.test", o.get(t, rt)[0], "last")
				} else {
					assert.False(t, a.demotion.Active(), "restored")
					assert.Equal(t, "a.test", o.get(t, rt)[0], "first again")
				}
				cancel()
			})
		})
	}
}

// answerAfter answers 200 after d, unless the attempt ends first.
func answerAfter(d time.Duration) mode {
	return func(r *http.Request) (*http.Response, error) {
		select {
		case <-time.After(d):
			return respond(http.StatusOK)(r)
		case <-r.Context().Done():
			return nil, r.Context().Err()
		}
	}
}

// failAfter answers 503 after d, unless the attempt ends first.
func failAfter(d time.Duration) mode {
	return func(r *http.Request) (*http.Response, error) {
		select {
		case <-time.After(d):
			return respond(http.StatusServiceUnavailable)(r)
		case <-r.Context().Done():
			return nil, r.Context().Err()
		}
	}
}

// demotedLongAgo demotes host in budgets as a failure length ago would
// have, for a demotion of For length (drawn in [length/2, length]), so
// that it has expired with its probe free, and a probe of it is bounded
// by that length.
func demotedLongAgo(t *testing.T, budgets *Budgets, host string, length time.Duration) *originRecord {
	t.Helper()
	r := budgets.record(host)
	demoted, _ := r.demotion.Failed(time.Now().Add(-length), demotion.Probe{}, Demote{After: 1, For: length}.resolve(), nil)
	require.True(t, demoted)
	return r
}

// An observer that panics on the verdict of a probe that ran on alone has
// no caller to reach: the panic is dropped, the probe's response is closed
// once, and the verdict stands.
func TestAProbeRunningOnSurvivesAPanickingObserver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o := newOrigins()
		var body *trackedBody
		o.set("a.test", func(r *http.Request) (*http.Response, error) {
			select {
			case <-time.After(5 * time.Second):
			case <-r.Context().Done():
				return nil, r.Context().Err()
			}
			resp := fakeResponse(r, http.StatusOK, nil, "")
			body = newTrackedBody("late")
			resp.Body = body
			return resp, nil
		})
		o.set("b.test", answerAfter(10*time.Millisecond))
		budgets := NewBudgets()
		rt := New(o, WithPolicy(hedgedDemotePolicy()), WithBudgets(budgets), WithObserver(func(e Event) {
			if e.Kind == EventRestore {
				panic("observer")
			}
		}))
		a := demotedLongAgo(t, budgets, "a.test", time.Minute)
		assert.Equal(t, []string{"a.test", "b.test"}, o.get(t, rt))
		time.Sleep(5 * time.Second)
		synctest.Wait()
		require.NotNil(t, body)
		assert.Equal(t, int32(1), body.closes.Load(), "closed once")
		assert.False(t, a.demotion.Active(), "restored")
	})
}

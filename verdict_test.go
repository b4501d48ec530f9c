package httpretry

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/httpretry/httpretry/internal/demotion"
)

// judge decides at a fixed instant, and parses Retry-After once: every
// later use reads the outcome.
func TestJudgeAtFixedInstants(t *testing.T) {
	date := t0.Add(90 * time.Second).Format(http.TimeFormat)
	reset := errors.New("connection reset")
	tests := []struct {
		name    string
		status  int // 0: err
		ra      []string
		retryIf func(*http.Response, error) bool
		ended   bool // the caller's context ended
		failure bool
		wantRA  time.Duration
		hasRA   bool
	}{
		{name: "an answer", status: 200},
		{name: "a retried status", status: 503, failure: true},
		{name: "a status not in RetryOn", status: 500},
		{name: "seconds", status: 503, ra: []string{"7"}, failure: true, wantRA: 7 * time.Second, hasRA: true},
		{name: "an HTTP-date, from now", status: 429, ra: []string{date}, failure: true, wantRA: 90 * time.Second, hasRA: true},
		{name: "garbage", status: 503, ra: []string{"soon"}, failure: true},
		{name: "the longest of two", status: 503, ra: []string{"3", "11"}, failure: true, wantRA: 11 * time.Second, hasRA: true},
		{name: "an answer's Retry-After is read too", status: 200, ra: []string{"2"}, wantRA: 2 * time.Second, hasRA: true},
		{name: "an error", failure: true},
		{name: "an error RetryIf declines", retryIf: func(*http.Response, error) bool { return false }},
		{name: "the caller's end is a failure, RetryIf or not", ended: true, failure: true,
			retryIf: func(*http.Response, error) bool { return false }},
		{name: "a status RetryIf retries", status: 200, failure: true,
			retryIf: func(r *http.Response, _ error) bool { return r.StatusCode == 200 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := resolvePolicy(Policy{MaxRetries: 3, RetryIf: tt.retryIf})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tt.ended {
				cancel()
			}
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://o.example/", nil)
			c := &call{route: route{applier: applier{p: p, req: req}, maxRetries: 3}}
			a := &attempt{n: 2}
			var resp *http.Response
			var err error
			if tt.status == 0 {
				err = reset
			} else {
				resp = &http.Response{StatusCode: tt.status, Header: http.Header{"Retry-After": tt.ra}}
			}
			o := c.judge(a, resp, err, t0)
			assert.Equal(t, tt.failure, o.failure, "failure")
			assert.Equal(t, tt.hasRA, o.hasRA, "hasRA")
			assert.Equal(t, tt.wantRA, o.ra, "ra")
			assert.Equal(t, t0, o.at)
			assert.False(t, o.told, "judging applies nothing")
			assert.Same(t, a, o.a)
		})
	}
}

// A failure's Retry-After lands on its candidate, once, from the instant
// it was judged at; a second apply of the same outcome does nothing.
func TestApplyNotesRetryAfterOnce(t *testing.T) {
	p := resolvePolicy(Policy{MaxRetries: 3, MaxRetryAfter: 10 * time.Second})
	req, _ := http.NewRequest(http.MethodGet, "http://o.example/", nil)
	c := &call{route: route{applier: applier{p: p, req: req}, maxRetries: 3}}
	tg := &target{}
	resp := &http.Response{StatusCode: 503, Header: http.Header{"Retry-After": {"4"}}}
	o := c.judge(&attempt{n: 1, tg: tg}, resp, nil, t0)
	c.apply(&o)
	require.True(t, o.told)
	assert.Equal(t, t0.Add(4*time.Second), tg.raUntil)
	tg.raUntil = time.Time{}
	c.apply(&o)
	assert.Zero(t, tg.raUntil, "applied once")

	long := &http.Response{StatusCode: 503, Header: http.Header{"Retry-After": {"11"}}}
	o = c.judge(&attempt{n: 2, tg: tg}, long, nil, t0)
	c.apply(&o)
	assert.True(t, tg.raTooLong)
}

// The fast path's answer is applied by the same function as the loop's:
// an origin demoted while the request was under way is restored, and the
// restore is told, as on the slow path (before, the fast path restored it
// without telling).
func TestTheFastPathsAnswerIsToldAsTheLoopsIs(t *testing.T) {
	var events []Event
	tr := New(stubTransport{}, WithObserver(func(e Event) { events = append(events, e) }))
	p := resolvePolicy(withFallbacks(DefaultPolicy(), "http://b.example"))
	req, _ := http.NewRequest(http.MethodGet, "http://a.example/", nil)
	r := &route{t: tr, applier: applier{req: req, p: p, observers: tr.observers, demotes: p.demote.After > 0}, own: origin{"http", "a.example"}, moves: true}
	rec := tr.budgets.record("a.example")
	rule := Demote{After: 1, For: time.Hour}.resolve()
	demoted, _ := rec.demotion.Failed(time.Now(), demotion.Probe{}, rule, nil)
	require.True(t, demoted)
	tg := &target{scheme: "http", host: "a.example", rec: rec}
	r.applyAnswer(tg, &http.Response{StatusCode: 200, Header: http.Header{}})
	assert.False(t, rec.demotion.Active(), "restored")
	require.Len(t, events, 1)
	assert.Equal(t, EventRestore, events[0].Kind)
	assert.Equal(t, "http://a.example", events[0].Origin)
}

// demotingBase answers 200, and before it does, demotes its origin in
// budgets, as another request's failures would while this one is under
// way.
type demotingBase struct{ budgets *Budgets }

func (d demotingBase) RoundTrip(req *http.Request) (*http.Response, error) {
	rule := Demote{After: 1, For: time.Hour}.resolve()
	d.budgets.record(req.URL.Host).demotion.Failed(time.Now(), demotion.Probe{}, rule, nil)
	return &http.Response{StatusCode: 200, Header: http.Header{}, Body: http.NoBody, Request: req}, nil
}

// The fast path and the slow path apply an outcome alike: a differential
// test, one request through each, over the same origin state. A timer
// (PerTryTimeout) is what sends a GET down the slow path. Before verdicts
// had one function, the fast path restored the origin demoted while its
// request was under way without telling anyone.
func TestTheFastAndTheSlowPathTellAnAnswerAlike(t *testing.T) {
	run := func(perTry time.Duration) (kinds []EventKind, standing bool) {
		budgets := NewBudgets()
		p := withFallbacks(DefaultPolicy(), "http://b.example")
		p.PerTryTimeout = perTry
		tr := New(demotingBase{budgets}, WithPolicy(p), WithBudgets(budgets),
			WithObserver(func(e Event) { kinds = append(kinds, e.Kind) }))
		req, _ := http.NewRequest(http.MethodGet, "http://a.example/", nil)
		resp, err := tr.RoundTrip(req)
		require.NoError(t, err)
		resp.Body.Close()
		return kinds, budgets.record("a.example").demotion.Active()
	}
	fastKinds, fastStanding := run(0)
	slowKinds, slowStanding := run(time.Hour)
	assert.Equal(t, []EventKind{EventRestore}, slowKinds)
	assert.Equal(t, slowKinds, fastKinds, "the fast path tells what the slow path tells")
	assert.False(t, slowStanding)
	assert.Equal(t, slowStanding, fastStanding)
}

// When PerTryTimeout and the policy's Deadline end an attempt at the same
// instant, the attempt's timer is PerTryTimeout's: the first attempt ends
// with ErrAttemptTimeout, and the deadline, reached, ends the request.
func TestAPerTryTimeoutThatMeetsTheDeadlineIsTheAttempts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		calls := 0
		base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
			calls++
			<-r.Context().Done()
			return nil, r.Context().Err()
		})
		p := Policy{MaxRetries: 2, PerTryTimeout: time.Second, Deadline: time.Second, Backoff: NoBackoff()}
		tr := New(base, WithPolicy(p))
		req, _ := http.NewRequest(http.MethodGet, "http://o.example/", nil)
		_, err := tr.RoundTrip(req)
		require.Error(t, err)
		assert.ErrorIs(t, err, ErrAttemptTimeout)
		assert.NotErrorIs(t, err, ErrDeadline)
		assert.Equal(t, 1, calls)
	})
}

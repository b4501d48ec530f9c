package httpretry

import (
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The decisions of the attempt loop, at fixed instants, with no clock and
// no sleeping, as x/time/rate tests AllowN(t, n).

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func TestNextAndNextCopyAtFixedInstants(t *testing.T) {
	fixed := resolvePolicy(Policy{MaxRetries: 3, Backoff: Fixed(ms(100)).Unbudgeted(), MaxRetryAfter: 30 * time.Second})
	tests := []struct {
		name      string
		drawn     int
		waitLeft  time.Duration // negative: unbounded
		deadline  time.Duration // after t0; 0: none
		raUntil   time.Duration // after t0; 0: none
		raTooLong bool
		drain     time.Duration
		copy      bool
		wait      time.Duration
		reason    Reason
	}{
		{name: "backoff", waitLeft: -1, wait: ms(100)},
		{name: "pool spent", drawn: 3, waitLeft: -1, reason: ReasonExhausted},
		{name: "pool before Retry-After", drawn: 3, waitLeft: -1, raTooLong: true, reason: ReasonExhausted},
		{name: "Retry-After too long", waitLeft: -1, raTooLong: true, reason: ReasonRetryAfterTooLong},
		{name: "Retry-After lengthens", waitLeft: -1, raUntil: ms(700), wait: ms(700)},
		{name: "Retry-After shorter than the backoff", waitLeft: -1, raUntil: ms(50), wait: ms(100)},
		{name: "wait budget shortens", waitLeft: ms(30), wait: ms(30)},
		// Point 19: a spent wait budget never hammers.
		{name: "wait budget spent", waitLeft: 0, reason: ReasonWaitBudget},
		{name: "wait budget spent, Retry-After too", waitLeft: 0, raUntil: ms(300), reason: ReasonWaitBudget},
		{name: "Retry-After beats what is left of the wait budget", waitLeft: ms(1), raUntil: ms(300), wait: ms(300)},
		{name: "a copy does not need the wait budget", waitLeft: 0, copy: true, wait: 0},
		{name: "fits the deadline", waitLeft: -1, deadline: ms(101), wait: ms(100)},
		{name: "ends at the deadline", waitLeft: -1, deadline: ms(100), reason: ReasonDeadline},
		{name: "the drain counts", waitLeft: -1, deadline: ms(150), drain: ms(100), reason: ReasonDeadline},
		{name: "Retry-After crosses the deadline", waitLeft: -1, deadline: ms(500), raUntil: ms(600), reason: ReasonDeadline},
		{name: "a copy does not wait", waitLeft: -1, deadline: ms(50), copy: true, wait: 0},
		{name: "a copy at the deadline", waitLeft: -1, deadline: -ms(1), copy: true, reason: ReasonDeadline},
		{name: "a copy draws on the pool", drawn: 3, waitLeft: -1, copy: true, reason: ReasonExhausted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &call{route: route{applier: applier{p: fixed}, maxRetries: 3}, limits: limits{drawn: tt.drawn, waitLeft: tt.waitLeft}}
			if tt.deadline != 0 {
				c.deadline = t0.Add(tt.deadline)
			}
			c.targets = []target{{raTooLong: tt.raTooLong, tried: true}}
			if tt.raUntil != 0 {
				c.targets[0].raUntil = t0.Add(tt.raUntil)
			}
			var s plan
			var reason Reason
			if tt.copy {
				s, reason = c.nextCopy(t0)
			} else {
				s, reason = c.next(t0, tt.drain, nil)
			}
			assert.Equal(t, tt.reason, reason)
			assert.Equal(t, tt.wait, s.wait)
		})
	}
}

// A jittered wait cut to what is left of the wait budget already meets a
// Retry-After asking exactly that: it is waited as it is, not spread past
// the budget as a longer Retry-After would be.
func TestAdmitARetryAfterTheWaitAlreadyMeets(t *testing.T) {
	jittered := resolvePolicy(Policy{MaxRetries: 3, Backoff: ExponentialJitter(10*time.Second, time.Minute)})
	c := &call{route: route{applier: applier{p: jittered, rng: rand.New(rand.NewPCG(1, 2))}, maxRetries: 3}, limits: limits{waitLeft: ms(300)}}
	require.GreaterOrEqual(t, jittered.backoff.Delay(1, rand.New(rand.NewPCG(1, 2))), ms(300), "the draw the wait budget cuts")
	wait, reason := c.admit(&target{raUntil: t0.Add(ms(300))}, t0, 0, 1)
	assert.Equal(t, Reason(0), reason)
	assert.Equal(t, ms(300), wait)
}

func TestPayChargesTheBudgetAndSpendsTheWaitBudget(t *testing.T) {
	rec := &originRecord{}
	b := &rec.budget
	b.params.Store(newBudgetParams(BudgetConfig{MinRetries: 1}))
	c := &call{route: route{applier: applier{p: resolvePolicy(Policy{MaxRetries: 3, Backoff: Fixed(ms(100))})}, maxRetries: 3}, limits: limits{waitLeft: ms(250)}}
	c.targets = []target{{rec: rec, budgeted: true, tried: true}}
	p, res, reason := c.pay(t0, 0)
	require.Equal(t, Reason(0), reason)
	assert.Equal(t, plan{to: 0, wait: ms(100), kind: EventRetry}, p)
	assert.Equal(t, b, res.b, "the reservation is the loop's to refund")
	assert.Equal(t, 1, c.drawn)
	assert.Equal(t, ms(150), c.waitLeft)
	_, _, reason = c.pay(t0, 0)
	assert.Equal(t, ReasonBudget, reason, "MinRetries 1 and no requests: one grant")
	assert.Equal(t, 1, c.drawn, "a refusal draws nothing")
	assert.Equal(t, ms(150), c.waitLeft)
}

// next decides where the attempt after a failure goes, at fixed instants:
// a candidate not yet tried first (no draw, no wait), then round the
// candidates from the ring, passing over those that cannot take it.
func TestNextAtFixedInstants(t *testing.T) {
	fixed := resolvePolicy(Policy{MaxRetries: 3, Backoff: Fixed(ms(100)).Unbudgeted(), MaxRetryAfter: 30 * time.Second})
	type cand struct {
		tried     bool
		raUntil   time.Duration // after t0; 0: none
		raTooLong bool
		moved     bool // a fallback; the others are the own origin
	}
	tests := []struct {
		name     string
		cands    []cand
		ring     int
		drawn    int
		deadline time.Duration // after t0; 0: none
		drain    time.Duration
		hedge    bool
		same     bool // Hedge.SameOrigin
		refused  []Reason
		want     plan
		reason   Reason
	}{
		{name: "one candidate: a resend", cands: []cand{{tried: true}}, want: plan{to: 0, wait: ms(100), kind: EventRetry}},
		{name: "untried first, no wait", cands: []cand{{tried: true}, {}, {}}, want: plan{to: 1, wait: 0, kind: EventFallback}},
		{name: "an untried candidate needs no pool", cands: []cand{{tried: true}, {}}, drawn: 3, want: plan{to: 1, wait: 0, kind: EventFallback}},
		{name: "an untried candidate ignores Retry-After", cands: []cand{{tried: true}, {raTooLong: true}}, want: plan{to: 1, wait: 0, kind: EventFallback}},
		{name: "an untried candidate past the deadline", cands: []cand{{tried: true}, {}}, deadline: ms(50), drain: ms(50), reason: ReasonDeadline},
		{name: "all tried: from the ring", cands: []cand{{tried: true}, {tried: true}, {tried: true}}, ring: 1, want: plan{to: 1, wait: ms(100), kind: EventRetry}},
		{name: "the ring wraps", cands: []cand{{tried: true}, {tried: true}}, ring: 2, want: plan{to: 0, wait: ms(100), kind: EventRetry}},
		{name: "Retry-After too long passes over", cands: []cand{{tried: true, raTooLong: true}, {tried: true}}, want: plan{to: 1, wait: ms(100), kind: EventRetry}},
		{name: "a budget that refused passes over", cands: []cand{{tried: true}, {tried: true}}, refused: []Reason{ReasonBudget, 0}, want: plan{to: 1, wait: ms(100), kind: EventRetry}},
		{name: "every candidate passed over: the first one's reason", cands: []cand{{tried: true, raTooLong: true}, {tried: true}},
			refused: []Reason{0, ReasonBudget}, reason: ReasonRetryAfterTooLong},
		{name: "the pool ends the request", cands: []cand{{tried: true}, {tried: true}}, drawn: 3, reason: ReasonExhausted},
		{name: "Retry-After lengthens the wait", cands: []cand{{tried: true, raUntil: ms(400)}}, want: plan{to: 0, wait: ms(400), kind: EventRetry}},
		{name: "the wait crosses the deadline", cands: []cand{{tried: true}}, deadline: ms(100), reason: ReasonDeadline},
		{name: "a copy to an untried candidate", cands: []cand{{tried: true}, {}}, hedge: true, want: plan{to: 1, wait: 0, kind: EventHedge}},
		{name: "a copy draws on the pool", cands: []cand{{tried: true}, {}}, hedge: true, drawn: 3, reason: ReasonExhausted},
		{name: "a copy round the candidates", cands: []cand{{tried: true}}, hedge: true, want: plan{to: 0, wait: 0, kind: EventHedge}},
		{name: "a copy cannot wait out a Retry-After", cands: []cand{{tried: true, raUntil: ms(10)}}, hedge: true, reason: ReasonRetryAfterTooLong},
		{name: "SameOrigin: a copy stays home, a fallback untried", cands: []cand{{tried: true}, {moved: true}}, hedge: true, same: true,
			want: plan{to: 0, wait: 0, kind: EventHedge}},
		{name: "SameOrigin: home, wherever the ring is", cands: []cand{{tried: true}, {tried: true, moved: true}}, ring: 1, hedge: true, same: true,
			want: plan{to: 0, wait: 0, kind: EventHedge}},
		{name: "SameOrigin: home when demotion moved it last", cands: []cand{{tried: true, moved: true}, {}}, hedge: true, same: true,
			want: plan{to: 1, wait: 0, kind: EventHedge}},
		{name: "SameOrigin: home's Retry-After, no copy elsewhere", cands: []cand{{tried: true, raUntil: ms(10)}, {moved: true}}, hedge: true, same: true,
			reason: ReasonRetryAfterTooLong},
		{name: "SameOrigin: a copy draws on the pool", cands: []cand{{tried: true}, {moved: true}}, hedge: true, same: true, drawn: 3,
			reason: ReasonExhausted},
		{name: "SameOrigin: resends still go to the fallbacks", cands: []cand{{tried: true}, {moved: true}}, same: true,
			want: plan{to: 1, wait: 0, kind: EventFallback}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &call{route: route{applier: applier{p: fixed}, maxRetries: 3}, limits: limits{drawn: tt.drawn, waitLeft: -1}, candidates: candidates{ring: tt.ring}}
			if tt.same {
				same := *fixed
				same.hedge = Hedge{After: ms(10), SameOrigin: true}
				c.p = &same
			}
			if tt.deadline != 0 {
				c.deadline = t0.Add(tt.deadline)
			}
			for _, cd := range tt.cands {
				tg := target{tried: cd.tried, raTooLong: cd.raTooLong, moved: cd.moved}
				if cd.raUntil != 0 {
					tg.raUntil = t0.Add(cd.raUntil)
				}
				c.targets = append(c.targets, tg)
			}
			before := append([]target(nil), c.targets...)
			p, reason := c.next(t0, tt.drain, tt.refused)
			if tt.hedge {
				require.Zero(t, tt.drain, "a copy never drains")
				require.Nil(t, tt.refused, "a copy has no refusals to pass over")
				p, reason = c.nextCopy(t0)
			}
			assert.Equal(t, tt.reason, reason)
			assert.Equal(t, tt.want, p)
			assert.Equal(t, before, c.targets, "next changes nothing")
			assert.Equal(t, tt.drawn, c.drawn)
		})
	}
}

// Point 16: a jittered wait lengthened to Retry-After is drawn from
// [RA, RA + max(ceiling, RA/10)], cut to end before the deadline.
func TestRetryAfterWaitSpreadsACrowd(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	b := ExponentialJitter(ms(100), 2*time.Second)
	var lo, hi time.Duration = time.Hour, 0
	for range 10000 {
		w := b.retryAfterWait(1, time.Second, maxDuration, r)
		lo, hi = min(lo, w), max(hi, w)
	}
	assert.GreaterOrEqual(t, lo, time.Second, "never earlier than asked")
	assert.Less(t, lo, time.Second+ms(1))
	assert.LessOrEqual(t, hi, time.Second+ms(100), "spread max(ceiling 100ms, RA/10 100ms)")
	assert.Greater(t, hi, time.Second+ms(99))

	for range 1000 {
		w := b.retryAfterWait(1, 10*time.Second, maxDuration, r)
		require.GreaterOrEqual(t, w, 10*time.Second)
		require.LessOrEqual(t, w, 11*time.Second, "RA/10 when it exceeds the ceiling")
		w = b.retryAfterWait(5, time.Second, maxDuration, r)
		require.LessOrEqual(t, w, 2600*time.Millisecond, "the ceiling of resend 5 is 1.6s")
		w = b.retryAfterWait(1, time.Second, time.Second+ms(10), r)
		require.Less(t, w, time.Second+ms(10), "the spread is cut at the deadline")
	}
	assert.Equal(t, time.Second, Fixed(ms(100)).retryAfterWait(1, time.Second, maxDuration, r), "deterministic: exactly RA")
	assert.Equal(t, time.Second, NoBackoff().retryAfterWait(1, time.Second, maxDuration, r))
	assert.Equal(t, time.Second, b.retryAfterWait(1, time.Second, time.Second, r), "no room for a spread")
}

func TestStrongerFailure(t *testing.T) {
	resp := func(ra string) *http.Response {
		h := http.Header{}
		if ra != "" {
			h.Set("Retry-After", ra)
		}
		return &http.Response{StatusCode: 503, Header: h}
	}
	judged := func(o outcome) outcome {
		o.read(o.resp, t0)
		return o
	}
	e := outcome{err: errors.New("reset")}
	tests := []struct {
		name string
		x, y outcome
		want bool
	}{
		{"an answer beats an error", outcome{resp: resp("")}, e, true},
		{"an error does not beat an answer", e, outcome{resp: resp("5")}, false},
		{"the later error", e, outcome{err: errors.New("earlier")}, true},
		{"the longer Retry-After", outcome{resp: resp("10")}, outcome{resp: resp("2")}, true},
		{"not the shorter", outcome{resp: resp("2")}, outcome{resp: resp("10")}, false},
		{"any Retry-After beats none", outcome{resp: resp("")}, outcome{resp: resp("1")}, false},
		{"the later of two without", outcome{resp: resp("")}, outcome{resp: resp("")}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, stronger(judged(tt.x), judged(tt.y)))
		})
	}
}

// The order of the checks: a GetBody that fails is a "no" at the body
// step, before MaxRetries, Retry-After and the deadline are judged.
func TestBodyIsJudgedBeforeRetryAfterAndThePool(t *testing.T) {
	for _, tc := range []struct {
		name      string
		ra        string
		retry     int
		failAfter int // GetBody calls that succeed
	}{{"Retry-After too long", "3600", 3, 0}, {"pool spent", "", 1, 1}} {
		t.Run(tc.name, func(t *testing.T) {
			base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
				io.Copy(io.Discard, r.Body)
				r.Body.Close()
				return fakeResponse(r, 503, http.Header{"Retry-After": {tc.ra}}, "busy"), nil
			})
			var rec recorder
			p := fastPolicy(tc.retry)
			rt := New(base, WithPolicy(p), WithObserver(rec.observe))
			req, _ := http.NewRequest(http.MethodPut, "http://h.test/", strings.NewReader("x"))
			calls := 0
			req.GetBody = func() (io.ReadCloser, error) {
				if calls++; calls > tc.failAfter {
					return nil, errors.New("body gone")
				}
				return io.NopCloser(strings.NewReader("x")), nil
			}
			resp, err := rt.RoundTrip(req)
			require.NoError(t, err)
			readAll(t, resp)
			assert.Equal(t, ReasonBodyNotReplayable, rec.giveUp(t))
		})
	}
}

// untried is the next candidate not yet tried, those another request's
// probe deferred after the others, the first candidate included.
func TestUntried(t *testing.T) {
	tests := []struct {
		name    string
		targets []target
		want    int
		ok      bool
	}{
		{"the first", []target{{}, {}}, 0, true},
		{"past the tried", []target{{tried: true}, {}}, 1, true},
		{"the deferred after the others", []target{{deferred: true}, {}}, 1, true},
		{"the deferred first when alone", []target{{deferred: true}, {tried: true}}, 0, true},
		{"none", []target{{tried: true}, {tried: true, deferred: true}}, -1, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &candidates{targets: tt.targets}
			k, ok := c.untried()
			assert.Equal(t, tt.ok, ok)
			if ok {
				assert.Equal(t, tt.want, k)
			}
		})
	}
}

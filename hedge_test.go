package httpretry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func hedgePolicy(after time.Duration, copies, retries int) Policy {
	p := fastPolicy(retries)
	p.Hedge = Hedge{After: after, Max: copies}
	return p
}

// contexts records the context of every attempt a scripted base saw.
type contexts struct {
	mu   sync.Mutex
	ctxs []context.Context
}

func (c *contexts) add(ctx context.Context) {
	c.mu.Lock()
	c.ctxs = append(c.ctxs, ctx)
	c.mu.Unlock()
}

func (c *contexts) canceled() []bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []bool
	for _, ctx := range c.ctxs {
		out = append(out, ctx.Err() != nil)
	}
	return out
}

// slowThenFast hangs the attempts in slow until canceled or until hold
// passes, and answers the others at once with code.
func slowThenFast(ctxs *contexts, slow map[int]time.Duration, code int) func(*http.Request, int) (*http.Response, error) {
	return func(r *http.Request, n int) (*http.Response, error) {
		ctxs.add(r.Context())
		if hold, ok := slow[n]; ok {
			select {
			case <-time.After(hold):
				return fakeResponse(r, http.StatusOK, nil, fmt.Sprintf("slow %d", n)), nil
			case <-r.Context().Done():
				return nil, r.Context().Err()
			}
		}
		return fakeResponse(r, code, nil, fmt.Sprintf("fast %d", n)), nil
	}
}

// concurrentScripted is a scripted base safe for concurrent attempts.
type concurrentScripted struct {
	answer func(r *http.Request, n int) (*http.Response, error)
	n      atomic.Int32
}

func (s *concurrentScripted) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		io.Copy(io.Discard, r.Body)
		r.Body.Close()
	}
	return s.answer(r, int(s.n.Add(1)))
}

func TestHedgeAnswersFromTheCopyAndCancelsTheSlowAttempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var ctxs contexts
		base := &concurrentScripted{answer: slowThenFast(&ctxs, map[int]time.Duration{1: time.Minute}, 200)}
		var rec recorder
		start := time.Now()
		resp, err := get(t, New(base, WithPolicy(hedgePolicy(ms(20), 1, 3)), WithObserver(rec.observe)), context.Background())
		require.NoError(t, err)
		assert.Equal(t, ms(20), time.Since(start))
		assert.Equal(t, "fast 2", readAll(t, resp))
		assert.EqualValues(t, 2, base.n.Load())
		assert.Equal(t, []bool{true, true}, ctxs.canceled(), "the loser at once, the winner once its body is closed")
		assert.Equal(t, []Event{{Kind: EventHedge, Attempt: 2, Request: rec.all()[0].Request, Origin: "http://api.example.com", Delay: ms(20)}}, rec.all())
	})
}

func TestHedgeSendsAtMostMaxCopies(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var ctxs contexts
		hang := map[int]time.Duration{1: time.Second, 2: time.Second, 3: time.Second}
		base := &concurrentScripted{answer: slowThenFast(&ctxs, hang, 200)}
		start := time.Now()
		resp, err := get(t, New(base, WithPolicy(hedgePolicy(ms(20), 2, 5))), context.Background())
		require.NoError(t, err)
		assert.Equal(t, "slow 1", readAll(t, resp))
		assert.Equal(t, time.Second, time.Since(start))
		assert.EqualValues(t, 3, base.n.Load(), "the attempt and 2 copies")
	})
}

func TestHedgesCountAgainstMaxRetries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var ctxs contexts
		hang := map[int]time.Duration{1: time.Second, 2: time.Second}
		base := &concurrentScripted{answer: slowThenFast(&ctxs, hang, 200)}
		var rec recorder
		resp, err := get(t, New(base, WithPolicy(hedgePolicy(ms(20), 3, 1)), WithObserver(rec.observe)), context.Background())
		require.NoError(t, err)
		resp.Body.Close()
		assert.EqualValues(t, 2, base.n.Load(), "1 + MaxRetries calls at most")
		kinds := rec.all()
		require.Len(t, kinds, 2)
		assert.Equal(t, ReasonExhausted, kinds[1].Reason)
	})
}

// A request with no resends allowed (MaxRetries 0 for it) is not hedged,
// its time bounds kept: one attempt, and no copy told of, sent or refused.
func TestARequestWithoutResendsIsNotHedged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var ctxs contexts
		base := &concurrentScripted{answer: slowThenFast(&ctxs, map[int]time.Duration{1: time.Second}, 200)}
		p := hedgePolicy(ms(20), 1, 3)
		p.PerTryTimeout = time.Minute
		var rec recorder
		resp, err := get(t, New(base, WithPolicy(p), WithObserver(rec.observe)), WithMaxRetries(context.Background(), 0))
		require.NoError(t, err)
		assert.Equal(t, "slow 1", readAll(t, resp))
		assert.EqualValues(t, 1, base.n.Load())
		assert.Empty(t, rec.all())
	})
}

func TestHedgeRefusedByTheBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var ctxs contexts
		base := &concurrentScripted{answer: slowThenFast(&ctxs, map[int]time.Duration{1: ms(500)}, 200)}
		p := hedgePolicy(ms(20), 1, 3)
		p.Budget = BudgetConfig{MinRetries: -1} // a quiet window grants nothing
		var rec recorder
		start := time.Now()
		resp, err := get(t, New(base, WithPolicy(p), WithObserver(rec.observe)), context.Background())
		require.NoError(t, err)
		assert.Equal(t, "slow 1", readAll(t, resp))
		assert.Equal(t, ms(500), time.Since(start))
		assert.EqualValues(t, 1, base.n.Load())
		events := rec.all()
		require.Len(t, events, 1)
		assert.Equal(t, EventHedge, events[0].Kind)
		assert.Equal(t, ReasonBudget, events[0].Reason)
	})
}

func TestARetryableCopyDoesNotEndTheOthers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var ctxs contexts
		// Attempt 1 answers 200 after 100 ms; the copy fails at once.
		base := &concurrentScripted{answer: slowThenFast(&ctxs, map[int]time.Duration{1: ms(100)}, 503)}
		start := time.Now()
		resp, err := get(t, New(base, WithPolicy(hedgePolicy(ms(20), 3, 5))), context.Background())
		require.NoError(t, err)
		assert.Equal(t, "slow 1", readAll(t, resp))
		assert.Equal(t, ms(100), time.Since(start))
		assert.EqualValues(t, 2, base.n.Load(), "a failing upstream gets no further copies")
	})
}

func TestWhenEveryCopyFailsTheRetryLoopGoesOn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := &concurrentScripted{answer: func(r *http.Request, n int) (*http.Response, error) {
			switch n {
			case 1:
				time.Sleep(ms(50))
				return fakeResponse(r, 503, nil, "busy"), nil
			case 2:
				time.Sleep(ms(40))
				return fakeResponse(r, 503, nil, "busy"), nil
			}
			return fakeResponse(r, 200, nil, "ok"), nil
		}}
		p := hedgePolicy(ms(20), 1, 3)
		p.Backoff = Fixed(ms(100))
		var rec recorder
		start := time.Now()
		resp, err := get(t, New(base, WithPolicy(p), WithObserver(rec.observe)), context.Background())
		require.NoError(t, err)
		assert.Equal(t, "ok", readAll(t, resp))
		assert.Equal(t, ms(160), time.Since(start), "round of 60 ms, wait of 100 ms")
		assert.EqualValues(t, 3, base.n.Load())
		assert.Equal(t, []EventKind{EventHedge, EventRetry}, rec.kinds())
	})
}

func TestCancelStopsEveryCopy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var ctxs contexts
		hang := map[int]time.Duration{1: time.Hour, 2: time.Hour}
		base := &concurrentScripted{answer: slowThenFast(&ctxs, hang, 200)}
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(ms(50), cancel)
		start := time.Now()
		resp, err := get(t, New(base, WithPolicy(hedgePolicy(ms(20), 1, 3))), ctx)
		assert.Nil(t, resp)
		assert.ErrorIs(t, err, context.Canceled)
		assert.Equal(t, ms(50), time.Since(start))
		assert.Equal(t, []bool{true, true}, ctxs.canceled())
	})
}

func TestUnkeyedPostIsNotHedged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var ctxs contexts
		base := &concurrentScripted{answer: slowThenFast(&ctxs, map[int]time.Duration{1: ms(300)}, 200)}
		req, _ := http.NewRequest(http.MethodPost, "http://api.example.com/orders", strings.NewReader("x"))
		resp, err := New(base, WithPolicy(hedgePolicy(ms(20), 1, 3))).RoundTrip(req)
		require.NoError(t, err)
		resp.Body.Close()
		assert.EqualValues(t, 1, base.n.Load())
	})
}

func TestEveryCopyGetsTheWholeBody(t *testing.T) {
	for _, tc := range []struct {
		name    string
		getBody bool
	}{{"recorded", false}, {"GetBody", true}} {
		t.Run(tc.name, func(t *testing.T) {
			payload := strings.Repeat("0123456789", 10_000)
			var first sync.Once
			stall := make(chan struct{})
			up := newUpstream(t, func(w http.ResponseWriter, r *http.Request, n int) {
				stalled := false
				first.Do(func() { stalled = true })
				if stalled {
					select {
					case <-r.Context().Done():
					case <-stall:
					}
					return
				}
				io.WriteString(w, "ok")
			})
			defer close(stall)
			var body io.Reader = strings.NewReader(payload)
			if !tc.getBody {
				body = io.NopCloser(body)
			}
			req, _ := http.NewRequest(http.MethodPut, up.URL, body)
			resp, err := (&http.Client{Transport: New(nil, WithPolicy(hedgePolicy(ms(50), 1, 3)))}).Do(req)
			require.NoError(t, err)
			assert.Equal(t, "ok", readAll(t, resp))
			got := up.received()
			require.Len(t, got, 2)
			for _, b := range got {
				assert.Equal(t, payload, string(b))
			}
		})
	}
}

// TestHedgingCutsTheTailOverLoopback is the measurement: one
// request in ten stalls 500 ms; hedging after 20 ms brings the p99 under
// 100 ms for about 10 % more upstream calls (logged). Asserted, with
// margins no loaded machine eats: the tail is cut to under half the stall
// (measured p99 under two busy loops and -race: 36–65 ms), every stalled
// request was hedged, and the budget's 20 % and floor of 10 cap the rest
// (measured under load: 1.100–1.112; at most 1.15 asserted before, which a
// loaded machine's extra hedges of slow first answers could pass).
func TestHedgingCutsTheTailOverLoopback(t *testing.T) {
	const requests = 500
	var mu sync.Mutex
	seen := map[string]bool{}
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request, _ int) {
		i := r.URL.Query().Get("i")
		mu.Lock()
		first := !seen[i]
		seen[i] = true
		mu.Unlock()
		if first && strings.HasSuffix(i, "3") { // one in ten, on first arrival
			select {
			case <-time.After(500 * time.Millisecond):
			case <-r.Context().Done():
				return
			}
		}
		io.WriteString(w, "ok")
	})
	p := DefaultPolicy()
	p.Hedge = Hedge{After: 20 * time.Millisecond, Max: 1}
	base := &http.Transport{MaxIdleConnsPerHost: 16}
	defer base.CloseIdleConnections()
	c := &http.Client{Transport: New(base, WithPolicy(p))}
	latencies := make([]time.Duration, 0, requests)
	for i := range requests {
		start := time.Now()
		resp, err := c.Get(fmt.Sprintf("%s/?i=%d", up.URL, i))
		require.NoError(t, err)
		require.Equal(t, "ok", readAll(t, resp))
		latencies = append(latencies, time.Since(start))
	}
	slices.Sort(latencies)
	p99 := latencies[requests*99/100]
	ratio := float64(up.calls.Load()) / requests
	t.Logf("p50 %v, p99 %v, upstream calls %d for %d requests (%.3f)", latencies[requests/2], p99, up.calls.Load(), requests, ratio)
	assert.Less(t, p99, 250*time.Millisecond)
	assert.GreaterOrEqual(t, up.calls.Load(), int64(requests+requests/10))
	assert.LessOrEqual(t, up.calls.Load(), int64(requests+requests*20/100+10))
}

func TestHedgeValidation(t *testing.T) {
	for _, tc := range []struct {
		hedge Hedge
		want  string
	}{
		{Hedge{After: -1}, "Hedge.After -1ns is negative"},
		{Hedge{After: ms(10), Max: -1}, "Hedge.Max -1 is outside 0..16"},
		{Hedge{After: ms(10), Max: 17}, "Hedge.Max 17 is outside 0..16"},
		{Hedge{Max: 2}, "Hedge.Max 2 needs Hedge.After"},
		{Hedge{SameOrigin: true}, "Hedge.SameOrigin true needs Hedge.After or Hedge.Quantile"},
	} {
		err := Policy{MaxRetries: 1, Hedge: tc.hedge}.Validate()
		assert.ErrorContains(t, err, tc.want)
	}
	assert.NoError(t, Policy{MaxRetries: 1, Hedge: Hedge{After: ms(10)}}.Validate())
	assert.Equal(t, 1, Hedge{After: ms(10)}.copies())
	assert.Equal(t, 0, Hedge{}.copies())
}

// TestHedgingAnUpstreamSlowForEveryoneStaysWithinTheBudget: when every
// request is slow, every request wants a copy; the budget grants
// max(MinRetries, Percent·requests/100) of them and no more.
func TestHedgingAnUpstreamSlowForEveryoneStaysWithinTheBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := &concurrentScripted{answer: func(r *http.Request, n int) (*http.Response, error) {
			select {
			case <-time.After(ms(100)):
				return fakeResponse(r, 200, nil, "ok"), nil
			case <-r.Context().Done():
				return nil, r.Context().Err()
			}
		}}
		p := DefaultPolicy() // budget: 20 %, at least 10, per 10 s
		p.Hedge = Hedge{After: ms(20), Max: 1}
		var hedges atomic.Int32
		rt := New(base, WithPolicy(p), WithObserver(func(e Event) {
			if e.Kind == EventHedge && e.Reason == 0 {
				hedges.Add(1)
			}
		}))
		const requests = 90 // 9 s of virtual time: one budget window
		for range requests {
			resp, err := get(t, rt, context.Background())
			require.NoError(t, err)
			resp.Body.Close()
		}
		assert.EqualValues(t, 18, hedges.Load(), "max(10, 20 % of 90)")
		assert.EqualValues(t, requests+18, base.n.Load())
	})
}

func TestTheWinnersContextLastsUntilItsBodyIsClosed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var ctxs contexts
		base := &concurrentScripted{answer: slowThenFast(&ctxs, map[int]time.Duration{1: time.Minute}, 200)}
		resp, err := get(t, New(base, WithPolicy(hedgePolicy(ms(20), 1, 3))), context.Background())
		require.NoError(t, err)
		assert.Equal(t, []bool{true, false}, ctxs.canceled(), "the loser at once, the winner not yet")
		time.Sleep(time.Minute)
		assert.Equal(t, []bool{true, false}, ctxs.canceled())
		assert.Equal(t, "fast 2", readAll(t, resp))
		assert.Equal(t, []bool{true, true}, ctxs.canceled())
	})
}

func TestHedgedCopiesHaveTheirOwnPerTryTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var ctxs contexts
		hang := map[int]time.Duration{1: time.Hour, 2: time.Hour}
		base := &concurrentScripted{answer: slowThenFast(&ctxs, hang, 200)}
		p := hedgePolicy(ms(20), 1, 3)
		p.PerTryTimeout = ms(100)
		p.Backoff = Fixed(ms(50))
		var rec recorder
		start := time.Now()
		resp, err := get(t, New(base, WithPolicy(p), WithObserver(rec.observe)), context.Background())
		require.NoError(t, err)
		assert.Equal(t, "fast 3", readAll(t, resp))
		// Attempt 1 times out at 100 ms, its copy at 120 ms; then a 50 ms wait.
		assert.Equal(t, ms(170), time.Since(start))
		assert.Equal(t, []EventKind{EventHedge, EventRetry}, rec.kinds())
		assert.ErrorIs(t, rec.all()[1].Err, ErrAttemptTimeout)
	})
}

func TestHedgedRoundEndsAtTheDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var ctxs contexts
		hang := map[int]time.Duration{1: time.Hour, 2: time.Hour}
		base := &concurrentScripted{answer: slowThenFast(&ctxs, hang, 200)}
		p := hedgePolicy(ms(20), 1, 3)
		p.Deadline = ms(80)
		var rec recorder
		start := time.Now()
		resp, err := get(t, New(base, WithPolicy(p), WithObserver(rec.observe)), context.Background())
		assert.Nil(t, resp)
		assert.ErrorIs(t, err, ErrDeadline)
		assert.Equal(t, ms(80), time.Since(start))
		assert.Equal(t, []bool{true, true}, ctxs.canceled())
		assert.Equal(t, ReasonDeadline, rec.giveUp(t))
	})
}

func TestRetryAfterFromAFailedRoundIsHonoured(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := &concurrentScripted{answer: func(r *http.Request, n int) (*http.Response, error) {
			if n == 1 {
				return fakeResponse(r, 503, http.Header{"Retry-After": {"2"}}, "busy"), nil
			}
			return fakeResponse(r, 200, nil, "ok"), nil
		}}
		start := time.Now()
		resp, err := get(t, New(base, WithPolicy(hedgePolicy(ms(20), 1, 3))), context.Background())
		require.NoError(t, err)
		assert.Equal(t, "ok", readAll(t, resp))
		assert.Equal(t, 2*time.Second, time.Since(start))
		assert.EqualValues(t, 2, base.n.Load())
	})
}

// A copy answers 503 with Retry-After, then the slow first attempt fails
// with an error: the round keeps the answer, and the resend waits what it
// asked, or the answer comes back at once when it asks too much.
func TestHedgedRoundKeepsTheStrongestRetryAfter(t *testing.T) {
	for _, tc := range []struct {
		ra      string
		perTry  time.Duration
		status  int
		calls   int32
		elapsed time.Duration
		reason  Reason
	}{
		{"2", 0, 200, 3, 2*time.Second + ms(20), 0},
		{"2", ms(100), 200, 3, 2*time.Second + ms(20), 0},
		{"3600", 0, 503, 2, ms(50), ReasonRetryAfterTooLong},
	} {
		t.Run(fmt.Sprint(tc.ra, "/", tc.perTry), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				base := &concurrentScripted{answer: func(r *http.Request, n int) (*http.Response, error) {
					switch n {
					case 1:
						select {
						case <-time.After(ms(50)):
							return nil, errors.New("read: connection reset by peer")
						case <-r.Context().Done():
							return nil, r.Context().Err()
						}
					case 2:
						return fakeResponse(r, 503, http.Header{"Retry-After": {tc.ra}}, "busy"), nil
					}
					return fakeResponse(r, 200, nil, "ok"), nil
				}}
				p := hedgePolicy(ms(20), 1, 3)
				p.PerTryTimeout = tc.perTry
				var rec recorder
				start := time.Now()
				resp, err := get(t, New(base, WithPolicy(p), WithObserver(rec.observe)), context.Background())
				require.NoError(t, err)
				readAll(t, resp)
				assert.Equal(t, tc.status, resp.StatusCode)
				assert.Equal(t, tc.calls, base.n.Load())
				elapsed := time.Since(start)
				assert.GreaterOrEqual(t, elapsed, tc.elapsed, "never earlier than asked")
				assert.LessOrEqual(t, elapsed, tc.elapsed+ms(200), "the spread is at most RA/10")
				assert.Equal(t, tc.reason, rec.giveUp(t))
			})
		})
	}
}

// A copy that cannot be sent, because the recorded body outgrew
// MaxReplayBytes, is not charged to the budget.
func TestACopyThatCannotBeSentIsNotCharged(t *testing.T) {
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request, n int) {
		time.Sleep(ms(300))
		io.WriteString(w, "ok")
	})
	bs := NewBudgets()
	p := DefaultPolicy()
	p.MaxRetries = 2
	p.MaxReplayBytes = 1024
	p.Budget = BudgetConfig{MinRetries: 5}
	p.Hedge = Hedge{After: ms(50), Max: 1}
	var rec recorder
	body := newTrackedBody(strings.Repeat("x", 8192))
	req, _ := http.NewRequest(http.MethodPut, up.URL, body)
	req.ContentLength = -1
	resp, err := New(nil, WithPolicy(p), WithBudgets(bs), WithObserver(rec.observe)).RoundTrip(req)
	require.NoError(t, err)
	assert.Equal(t, "ok", readAll(t, resp))
	assert.EqualValues(t, 1, up.calls.Load())
	assert.Equal(t, 0, bs.For(req.URL.Host, p.Budget).Stats().Retries)
	require.Len(t, rec.all(), 1)
	assert.Equal(t, ReasonBodyNotReplayable, rec.all()[0].Reason)
}

// The give-up error counts the attempts sent, hedged copies included.
func TestGiveUpErrorCountsEveryAttemptSent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := &concurrentScripted{answer: func(r *http.Request, n int) (*http.Response, error) {
			select {
			case <-time.After(ms(50)):
				return nil, errors.New("read: connection reset by peer")
			case <-r.Context().Done():
				return nil, r.Context().Err()
			}
		}}
		_, err := get(t, New(base, WithPolicy(hedgePolicy(ms(20), 1, 1))), context.Background())
		assert.EqualError(t, err, "httpretry: exhausted after 2 attempt(s): read: connection reset by peer")
		assert.EqualValues(t, 2, base.n.Load())
	})
}

// With Hedge.SameOrigin a copy stays at the request's own origin, over
// loopback: a slow first answer gets its copy there, never at the
// fallback, which serves only the request that failed at home.
func TestHedgeSameOriginKeepsCopiesHome(t *testing.T) {
	primary := newUpstream(t, func(w http.ResponseWriter, r *http.Request, n int) {
		switch n {
		case 1: // slow: the copy must come here
			<-r.Context().Done()
			return
		case 3: // failing: the fallback takes it
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		io.WriteString(w, "primary")
	})
	standby := newUpstream(t, func(w http.ResponseWriter, r *http.Request, n int) {
		io.WriteString(w, "standby")
	})
	base := &http.Transport{}
	defer base.CloseIdleConnections()
	p := hedgePolicy(20*time.Millisecond, 1, 2)
	p.Hedge.SameOrigin = true
	p.Fallbacks = []string{standby.URL}
	var rec recorder
	rt := New(base, WithPolicy(p), WithObserver(rec.observe))
	get := func() string {
		req, _ := http.NewRequest(http.MethodGet, primary.URL+"/", nil)
		resp, err := rt.RoundTrip(req)
		require.NoError(t, err)
		return readAll(t, resp)
	}

	assert.Equal(t, "primary", get(), "the copy's answer, from home")
	assert.Equal(t, int64(2), primary.calls.Load())
	assert.Zero(t, standby.calls.Load(), "no copy went to the fallback")
	require.Equal(t, []EventKind{EventHedge}, rec.kinds())
	assert.Equal(t, "http://"+hostOf(primary.URL), rec.all()[0].Origin)

	assert.Equal(t, "standby", get(), "a failure still goes to the fallback")
	assert.Equal(t, int64(3), primary.calls.Load())
	assert.Equal(t, int64(1), standby.calls.Load())
}

// Hedge.SameOrigin reads and writes its JSON as "sameOrigin".
func TestHedgeSameOriginJSON(t *testing.T) {
	c, err := ParseConfig([]byte(`{"default": {"maxRetries": 2, "hedge": {"after": "20ms", "sameOrigin": true}}}`))
	require.NoError(t, err)
	assert.Equal(t, Hedge{After: 20 * time.Millisecond, SameOrigin: true}, c.Default.Hedge)
	assert.Contains(t, nestedJSON(t, c.Default, "hedge"), `"sameOrigin":true`)
	_, err = ParseConfig([]byte(`{"default": {"maxRetries": 2, "hedge": {"sameOrigin": true}}}`))
	assert.ErrorContains(t, err, "default.hedge.sameOrigin: true needs Hedge.After or Hedge.Quantile")
}

// An Upgrade request (Connection: upgrade with an Upgrade header) is never
// hedged (DESIGN point 21), over loopback: a handshake slower than the
// hedge delay gets no copy, and its 101 comes back untouched.
func TestAnUpgradeRequestIsNeverHedged(t *testing.T) {
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request, n int) {
		time.Sleep(100 * time.Millisecond) // five hedge delays
		conn, rw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		rw.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: test\r\n\r\nhello")
		rw.Flush()
	})
	base := &http.Transport{}
	defer base.CloseIdleConnections()
	var rec recorder
	rt := New(base, WithPolicy(hedgePolicy(20*time.Millisecond, 2, 3)), WithObserver(rec.observe))
	req, _ := http.NewRequest(http.MethodGet, up.URL+"/ws", nil)
	req.Header.Set("Connection", "keep-alive, Upgrade")
	req.Header.Set("Upgrade", "test")
	resp, err := rt.RoundTrip(req)
	require.NoError(t, err)
	assert.Equal(t, http.StatusSwitchingProtocols, resp.StatusCode)
	_, ok := resp.Body.(io.ReadWriteCloser)
	assert.True(t, ok, "the upgraded connection, untouched")
	assert.Equal(t, "hello", readAll(t, resp))
	assert.Equal(t, int64(1), up.calls.Load(), "no copy")
	assert.Empty(t, rec.all())
}

// An Upgrade request may be resent only when its attempt got no response:
// an answer, a retryable one too, is returned as it is.
func TestAnUpgradeRequestIsResentOnlyWithoutAResponse(t *testing.T) {
	for _, tc := range []struct {
		name    string
		first   func(r *http.Request) (*http.Response, error)
		calls   int
		status  int
		giveUps []Reason
	}{
		{"503: returned", func(r *http.Request) (*http.Response, error) {
			return fakeResponse(r, http.StatusServiceUnavailable, nil, "busy"), nil
		}, 1, http.StatusServiceUnavailable, []Reason{ReasonNotRetryable}},
		{"refused: resent", func(*http.Request) (*http.Response, error) { return nil, errRefused }, 2, http.StatusSwitchingProtocols, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var calls atomic.Int32
			base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
				if calls.Add(1) == 1 {
					return tc.first(r)
				}
				return &http.Response{StatusCode: http.StatusSwitchingProtocols, Header: http.Header{}, Body: http.NoBody, Request: r}, nil
			})
			var rec recorder
			p := hedgePolicy(20*time.Millisecond, 1, 2)
			p.Fallbacks = []string{"http://b.test"}
			rt := New(base, WithPolicy(p), WithObserver(rec.observe))
			req, _ := http.NewRequest(http.MethodGet, "http://a.test/ws", nil)
			req.Header.Set("Connection", "Upgrade")
			req.Header.Set("Upgrade", "websocket")
			resp, err := rt.RoundTrip(req)
			require.NoError(t, err)
			assert.Equal(t, tc.status, resp.StatusCode)
			resp.Body.Close()
			assert.Equal(t, tc.calls, int(calls.Load()))
			var giveUps []Reason
			for _, e := range ofKind(rec.all(), EventGiveUp) {
				giveUps = append(giveUps, e.Reason)
			}
			assert.Equal(t, tc.giveUps, giveUps)
		})
	}
}

func TestUpgrades(t *testing.T) {
	for _, tc := range []struct {
		connection, upgrade []string
		want                bool
	}{
		{[]string{"Upgrade"}, []string{"websocket"}, true},
		{[]string{"keep-alive, upgrade"}, []string{"h2c"}, true},
		{[]string{"keep-alive", " UPGRADE "}, []string{"websocket"}, true},
		{[]string{"Upgrade"}, nil, false},
		{nil, []string{"websocket"}, false},
		{[]string{"upgrades, keep-alive"}, []string{"websocket"}, false},
	} {
		req := &http.Request{Header: http.Header{}}
		if tc.connection != nil {
			req.Header["Connection"] = tc.connection
		}
		if tc.upgrade != nil {
			req.Header["Upgrade"] = tc.upgrade
		}
		assert.Equal(t, tc.want, upgrades(req), "Connection %q, Upgrade %q", tc.connection, tc.upgrade)
	}
}

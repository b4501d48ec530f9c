package httpretry

import (
	"context"
	"encoding/json"
	"net/http"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// holdPolicy is a budgeted policy with fixed waits, so that the hold's
// instants are exact: 3 resends 100 ms apart, the default budget and hold.
func holdPolicy() Policy {
	p := DefaultPolicy()
	p.Backoff = Fixed(ms(100))
	return p
}

// A lone client's second resend at an origin that failed twice hears
// nothing (nothing else is in flight, and its gap is a whole window): it
// listens to the end of its wait + HoldFor, then decides blind on the
// floor credit its reservation already took. That second is the hold's
// price for a CLI.
func TestALoneClientsHeldResendListensThenGoes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := newScripted(statusThenOK(503, nil, 100))
		var rec recorder
		budgets := NewBudgets()
		rt := New(base, WithPolicy(holdPolicy()), WithBudgets(budgets), WithObserver(rec.observe))
		resp, err := get(t, rt, context.Background())
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, []time.Duration{0, ms(100), ms(1200), ms(2300)}, base.sentAt)
		assert.Equal(t, ReasonExhausted, rec.giveUp(t))
		s := budgets.For("api.example.com", holdPolicy().Budget).Stats()
		assert.Equal(t, 4, s.Streak)
		assert.Equal(t, 0, s.Parked)
	})
}

// At a down origin with nothing in flight, a resend gives up at once
// (rule 1) with ReasonHold and the last response, body intact; without a
// deadline the request does not park, and returns when the waits of the
// resends it had left are over (rule 11): 3 × 100 ms.
func TestADownOriginGivesUpAtTheWaitsPace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := newScripted(statusThenOK(503, nil, 100))
		budgets := NewBudgets()
		rt := New(base, WithPolicy(holdPolicy()), WithBudgets(budgets))
		resp, err := get(t, rt, context.Background()) // makes the streak 4: down
		require.NoError(t, err)
		resp.Body.Close()

		var rec recorder
		rt2 := New(base, WithPolicy(holdPolicy()), WithBudgets(budgets), WithObserver(rec.observe))
		start := time.Now()
		resp, err = get(t, rt2, context.Background())
		require.NoError(t, err)
		assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
		assert.Equal(t, "busy", readAll(t, resp))
		assert.Equal(t, ms(300), time.Since(start), "paced by its three waits")
		assert.Len(t, base.sentAt, 5, "one attempt: the resend gave up at once")
		assert.Equal(t, ReasonHold, rec.giveUp(t))
		assert.Equal(t, []EventKind{EventGiveUp}, rec.kinds())
	})
}

// With Hold -1 nothing is held: the same two requests resend as before
// point 22, at the backoff's pace, and the streak is still counted.
func TestHoldMinusOneIsTheBehaviourBefore(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := newScripted(statusThenOK(503, nil, 100))
		p := holdPolicy()
		p.Budget.Hold = -1
		budgets := NewBudgets()
		rt := New(base, WithPolicy(p), WithBudgets(budgets))
		for range 2 {
			resp, err := get(t, rt, context.Background())
			require.NoError(t, err)
			resp.Body.Close()
		}
		assert.Equal(t, []time.Duration{0, ms(100), ms(200), ms(300), ms(300), ms(400), ms(500), ms(600)}, base.sentAt)
		assert.Equal(t, 8, budgets.For("api.example.com", p.Budget).Stats().Streak)
	})
}

// A closed loop keeps its work: a worker sending one request at a time,
// each with a 30 s deadline, through a 20 s outage, loses no item; while
// the origin is down it parks, probes once per P (HoldFor, 1 s, here:
// 10·gap₀ is 10 × 10 s / 1000 requests), and the first answer after the
// outage is heard within one P.
func TestAClosedLoopParksThroughAnOutage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		var calls, outageCalls atomic.Int64
		var firstAnswer atomic.Int64
		down := func() bool { e := time.Since(start); return e >= 10*time.Second && e < 30*time.Second }
		base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
			calls.Add(1)
			if down() {
				outageCalls.Add(1)
				return fakeResponse(r, 503, nil, "down"), nil
			}
			if since := time.Since(start); since >= 30*time.Second {
				firstAnswer.CompareAndSwap(0, int64(since))
			}
			return fakeResponse(r, 200, nil, "ok"), nil
		})
		p := holdPolicy()
		p.Deadline = 30 * time.Second
		budgets := NewBudgets()
		rt := New(base, WithPolicy(p), WithBudgets(budgets))
		var lost, items, maxParked int
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() { // an operator reading Stats
			defer close(done)
			for {
				select {
				case <-stop:
					return
				case <-time.After(ms(50)):
					maxParked = max(maxParked, budgets.For("api.example.com", p.Budget).Stats().Parked)
				}
			}
		}()
		for time.Since(start) < 40*time.Second {
			items++
			resp, err := get(t, rt, context.Background())
			if err != nil || resp.StatusCode != 200 {
				lost++
			}
			if err == nil {
				resp.Body.Close()
			}
			time.Sleep(ms(10)) // a healthy item's work: 100 items/s
		}
		close(stop)
		<-done
		assert.Zero(t, lost, "of %d items", items)
		assert.Equal(t, 1, maxParked)
		// The onset: 2 failures in a row hold; 4 make the origin down; then
		// one probe per second for 20 s.
		assert.LessOrEqual(t, outageCalls.Load(), int64(4+20+2), "attempts on the dead origin")
		assert.LessOrEqual(t, time.Duration(firstAnswer.Load()), 31*time.Second, "first answer after the outage")
		t.Logf("%d items, %d calls, %d in the outage, first answer at %v", items, calls.Load(), outageCalls.Load(),
			time.Duration(firstAnswer.Load()))
	})
}

// An open loop does not park: a request's first attempt at the down
// origin with requests parked there and no token is an open loop's
// arrival, which ends the parked requests as they would have ended
// without a deadline (here: ReasonHold, paced by three waits of 100 ms
// from its give-up) and closes the parking until an answer.
func TestAnArrivalWithoutATokenEndsTheParking(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := newScripted(statusThenOK(503, nil, 1000))
		p := holdPolicy()
		p.Deadline = 30 * time.Second
		budgets := NewBudgets()
		rt := New(base, WithPolicy(p), WithBudgets(budgets))
		// Down: 4 failures in a row, from a request without a deadline,
		// which does not park, so its end grants no token.
		resp, err := get(t, New(base, WithPolicy(holdPolicy()), WithBudgets(budgets)), context.Background())
		require.NoError(t, err)
		resp.Body.Close()

		parked := make(chan time.Duration)
		start := time.Now()
		go func() {
			resp, err := get(t, rt, context.Background())
			if err == nil {
				resp.Body.Close()
			}
			parked <- time.Since(start)
		}()
		synctest.Wait()
		stats := func() BudgetStats { return budgets.For("api.example.com", p.Budget).Stats() }
		require.Equal(t, 1, stats().Parked, "a request with a deadline parks at the down origin")
		time.Sleep(ms(50))
		resp, err = get(t, rt, context.Background()) // an arrival: no parked request ended, so no token
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, ms(300), <-parked, "the parked request ended at its give-up's pace")
		assert.Equal(t, 0, stats().Parked)
	})
}

// After an arrival closed the parking, no request parks at the origin
// until an answer ends its streak: the next request with a deadline ends
// at its waits' pace too.
func TestAClosedParkingStaysClosedUntilAnAnswer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := newScripted(statusThenOK(503, nil, 1000))
		p := holdPolicy()
		p.Deadline = 30 * time.Second
		budgets := NewBudgets()
		host := "api.example.com"
		resp, err := get(t, New(base, WithPolicy(holdPolicy()), WithBudgets(budgets)), context.Background())
		require.NoError(t, err)
		resp.Body.Close()
		rec := budgets.For(host, p.Budget).rec
		rec.arrive(time.Now()) // nothing parked: nothing to close
		require.False(t, rec.out.closed)
		rec.out.mu.Lock()
		rec.out.closed = true // as an arrival without a token leaves it
		rec.out.mu.Unlock()
		start := time.Now()
		resp, err = get(t, New(base, WithPolicy(p), WithBudgets(budgets)), context.Background())
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, ms(300), time.Since(start), "not parked: paced, then returned")
		rec.settle(false, markAnswer)
		assert.False(t, rec.out.closed, "an answer that ends the streak reopens it")
	})
}

// A hedged copy to an origin whose streak has reached Hold is not sent,
// and is told as refused by the hold.
func TestAHedgedCopyToAFailingOriginIsHeld(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := newScripted(func(r *http.Request, n int) (*http.Response, error) {
			if n <= 2 {
				return fakeResponse(r, 503, nil, "busy"), nil
			}
			time.Sleep(ms(200)) // slow enough to be hedged
			return fakeResponse(r, 200, nil, "ok"), nil
		})
		budgets := NewBudgets()
		two := holdPolicy()
		two.MaxRetries = 1
		resp, err := get(t, New(base, WithPolicy(two), WithBudgets(budgets)), context.Background())
		require.NoError(t, err) // two 503s: a streak of 2
		resp.Body.Close()
		p := holdPolicy()
		p.Hedge = Hedge{After: ms(50), Max: 1}
		var rec recorder
		resp, err = get(t, New(base, WithPolicy(p), WithBudgets(budgets), WithObserver(rec.observe)), context.Background())
		require.NoError(t, err)
		assert.Equal(t, "ok", readAll(t, resp))
		assert.Len(t, base.sentAt, 3, "no copy went")
		var held int
		for _, e := range rec.all() {
			if e.Kind == EventHedge && e.Reason == ReasonHold {
				held++
			}
		}
		assert.Equal(t, 1, held, "%v", rec.kinds())
	})
}

func TestHoldConfig(t *testing.T) {
	var p Policy
	require.NoError(t, json.Unmarshal([]byte(`{"budget": {"hold": 3, "holdFor": "250ms"}}`), &p))
	assert.Equal(t, 3, p.Budget.Hold)
	assert.Equal(t, ms(250), p.Budget.HoldFor)
	p.Budget.HoldFor = -time.Second
	assert.ErrorContains(t, p.Validate(), "Budget.HoldFor -1s is negative")
	assert.Equal(t, BudgetConfig{Percent: 20, MinRetries: 10, Window: 10 * time.Second, Hold: 2, HoldFor: time.Second},
		BudgetConfig{}.withDefaults())
	assert.Equal(t, -1, BudgetConfig{Hold: -7}.withDefaults().Hold)
}

package httpretry

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// These tests run the attempt loop against a fake base in a synctest
// bubble: time is virtual, so waits are asserted exactly and cost nothing.

// scripted answers attempt n (1-based) with answer(n) and records when each
// attempt was sent, in virtual time.
type scripted struct {
	answer func(r *http.Request, n int) (*http.Response, error)
	n      atomic.Int32
	sentAt []time.Duration
	start  time.Time
}

func (s *scripted) RoundTrip(r *http.Request) (*http.Response, error) {
	n := int(s.n.Add(1))
	s.sentAt = append(s.sentAt, time.Since(s.start))
	if r.Body != nil {
		r.Body.Close()
	}
	return s.answer(r, n)
}

func newScripted(answer func(r *http.Request, n int) (*http.Response, error)) *scripted {
	return &scripted{answer: answer, start: time.Now()}
}

func statusThenOK(code int, header http.Header, failures int) func(*http.Request, int) (*http.Response, error) {
	return func(r *http.Request, n int) (*http.Response, error) {
		if n <= failures {
			return fakeResponse(r, code, header.Clone(), "busy"), nil
		}
		return fakeResponse(r, http.StatusOK, nil, "ok"), nil
	}
}

func get(t *testing.T, rt http.RoundTripper, ctx context.Context) (*http.Response, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://api.example.com/items", nil)
	require.NoError(t, err)
	return rt.RoundTrip(req)
}

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

func TestExponentialWaitsExactly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := newScripted(statusThenOK(503, nil, 10))
		p := fastPolicy(4)
		p.Backoff = Exponential(ms(100), ms(1000))
		var rec recorder
		resp, err := get(t, New(base, WithPolicy(p), WithObserver(rec.observe)), context.Background())
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, []time.Duration{0, ms(100), ms(300), ms(700), ms(1500)}, base.sentAt)
		var delays []time.Duration
		for _, e := range rec.all() {
			if e.Kind == EventRetry {
				delays = append(delays, e.Delay)
			}
		}
		assert.Equal(t, []time.Duration{ms(100), ms(200), ms(400), ms(800)}, delays)
	})
}

func TestWaitBudgetShortensTheWaitThatOverrunsIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := newScripted(statusThenOK(503, nil, 10))
		p := fastPolicy(4)
		p.Backoff = Exponential(ms(100), ms(1000)).WithWaitBudget(ms(250))
		var rec recorder
		resp, err := get(t, New(base, WithPolicy(p), WithObserver(rec.observe)), context.Background())
		require.NoError(t, err)
		resp.Body.Close()
		// Waits 100, 150 (what is left), then gives up rather than
		// resending at once (point 19): the last 503 is the answer.
		assert.Equal(t, []time.Duration{0, ms(100), ms(250)}, base.sentAt)
		assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
		last := rec.all()[len(rec.all())-1]
		assert.Equal(t, EventGiveUp, last.Kind)
		assert.Equal(t, ReasonWaitBudget, last.Reason)
	})
}

func TestASpentWaitBudgetNeverHammers(t *testing.T) {
	tests := []struct {
		name    string
		backoff Backoff
		sentAt  []time.Duration
	}{
		// The attack's case: three resends in the same millisecond before.
		{"fixed 2s, budget 1s", Fixed(2 * time.Second).WithWaitBudget(time.Second), []time.Duration{0, time.Second}},
		{"budget 0 is spent from the start", Fixed(time.Second).WithWaitBudget(0), []time.Duration{0}},
		{"jitter, budget 0", ExponentialJitter(ms(100), ms(200)).WithWaitBudget(0), []time.Duration{0}},
		{"no backoff has no wait budget", NoBackoff(), []time.Duration{0, 0, 0, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				base := newScripted(statusThenOK(503, nil, 10))
				p := fastPolicy(3)
				p.Backoff = tt.backoff
				var rec recorder
				resp, err := get(t, New(base, WithPolicy(p), WithObserver(rec.observe)), context.Background())
				require.NoError(t, err)
				resp.Body.Close()
				assert.Equal(t, tt.sentAt, base.sentAt)
				last := rec.all()[len(rec.all())-1]
				assert.Equal(t, EventGiveUp, last.Kind)
				if len(tt.sentAt) == 4 {
					assert.Equal(t, ReasonExhausted, last.Reason)
				} else {
					assert.Equal(t, ReasonWaitBudget, last.Reason)
				}
			})
		})
	}
}

func TestASpentWaitBudgetStillTriesEveryFallback(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := newScripted(statusThenOK(503, nil, 10))
		p := fastPolicy(3)
		p.Backoff = Fixed(time.Second).WithWaitBudget(0)
		p.Fallbacks = []string{"http://b.example", "http://c.example"}
		var rec recorder
		resp, err := get(t, New(base, WithPolicy(p), WithObserver(rec.observe)), context.Background())
		require.NoError(t, err)
		resp.Body.Close()
		// Every candidate once, at once; then no resend to one already tried.
		assert.Equal(t, []time.Duration{0, 0, 0}, base.sentAt)
		last := rec.all()[len(rec.all())-1]
		assert.Equal(t, ReasonWaitBudget, last.Reason)
	})
}

func TestJitteredWaitsStayUnderTheCeiling(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := newScripted(statusThenOK(503, nil, 10))
		p := fastPolicy(3)
		p.Backoff = ExponentialJitter(ms(100), ms(1000))
		resp, err := get(t, New(base, WithPolicy(p)), context.Background())
		require.NoError(t, err)
		resp.Body.Close()
		require.Len(t, base.sentAt, 4)
		for i, ceiling := range []time.Duration{ms(100), ms(200), ms(400)} {
			wait := base.sentAt[i+1] - base.sentAt[i]
			assert.GreaterOrEqual(t, wait, time.Duration(0))
			assert.LessOrEqual(t, wait, ceiling, "resend %d", i+1)
		}
	})
}

func TestRetryAfterLengthensTheWait(t *testing.T) {
	for _, tc := range []struct {
		name  string
		value func(now time.Time) string
		want  time.Duration
	}{
		{"delay-seconds", func(time.Time) string { return "2" }, 2 * time.Second},
		{"HTTP-date", func(now time.Time) string { return now.Add(3 * time.Second).UTC().Format(http.TimeFormat) }, 3 * time.Second},
		{"a date in the past", func(now time.Time) string { return now.Add(-time.Hour).UTC().Format(http.TimeFormat) }, ms(50)},
		{"garbage", func(time.Time) string { return "soon" }, ms(50)},
		{"negative", func(time.Time) string { return "-1" }, ms(50)},
		{"shorter than the backoff", func(time.Time) string { return "0" }, ms(50)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := http.Header{"Retry-After": {tc.value(time.Now())}}
				base := newScripted(statusThenOK(429, h, 1))
				p := fastPolicy(2)
				p.Backoff = Fixed(ms(50))
				resp, err := get(t, New(base, WithPolicy(p)), context.Background())
				require.NoError(t, err)
				resp.Body.Close()
				assert.Equal(t, []time.Duration{0, tc.want}, base.sentAt)
			})
		})
	}
}

func TestRetryAfterBeyondMaxRetryAfterReturnsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := newScripted(statusThenOK(503, http.Header{"Retry-After": {"3600"}}, 1))
		var rec recorder
		start := time.Now()
		resp, err := get(t, New(base, WithPolicy(fastPolicy(3)), WithObserver(rec.observe)), context.Background())
		require.NoError(t, err)
		assert.Equal(t, 503, resp.StatusCode)
		assert.Equal(t, "busy", readAll(t, resp))
		assert.Zero(t, time.Since(start))
		assert.EqualValues(t, 1, base.n.Load())
		assert.Equal(t, ReasonRetryAfterTooLong, rec.giveUp(t))
	})
}

func TestRetryAfterThatCrossesTheDeadlineReturnsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := newScripted(statusThenOK(503, http.Header{"Retry-After": {"5"}}, 1))
		p := fastPolicy(3)
		p.Deadline = 2 * time.Second
		var rec recorder
		resp, err := get(t, New(base, WithPolicy(p), WithObserver(rec.observe)), context.Background())
		require.NoError(t, err)
		resp.Body.Close()
		assert.EqualValues(t, 1, base.n.Load())
		assert.Equal(t, ReasonDeadline, rec.giveUp(t))
	})
}

func TestDeadlineEndsTheLoopBeforeAWaitCrossesIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := newScripted(statusThenOK(503, nil, 10))
		p := fastPolicy(10)
		p.Backoff = Fixed(ms(400))
		p.Deadline = time.Second
		var rec recorder
		start := time.Now()
		resp, err := get(t, New(base, WithPolicy(p), WithObserver(rec.observe)), context.Background())
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, []time.Duration{0, ms(400), ms(800)}, base.sentAt)
		assert.Equal(t, ms(800), time.Since(start), "no wait that would cross the deadline")
		assert.Equal(t, ReasonDeadline, rec.giveUp(t))
	})
}

func TestContextDeadlineBoundsTheLoopToo(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := newScripted(statusThenOK(503, nil, 10))
		p := fastPolicy(10)
		p.Backoff = Fixed(ms(400))
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		var rec recorder
		resp, err := get(t, New(base, WithPolicy(p), WithObserver(rec.observe)), ctx)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, []time.Duration{0, ms(400), ms(800)}, base.sentAt)
		assert.Equal(t, ReasonDeadline, rec.giveUp(t))
	})
}

// hangUntilCanceled answers attempts listed in hang only when their
// context ends.
func hangUntilCanceled(hang map[int]bool) func(*http.Request, int) (*http.Response, error) {
	return func(r *http.Request, n int) (*http.Response, error) {
		if hang[n] {
			<-r.Context().Done()
			return nil, r.Context().Err()
		}
		return fakeResponse(r, http.StatusOK, nil, "ok"), nil
	}
}

func TestPerTryTimeoutIsReArmedForEachAttempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := newScripted(hangUntilCanceled(map[int]bool{1: true, 2: true}))
		p := fastPolicy(3)
		p.PerTryTimeout = ms(300)
		var rec recorder
		resp, err := get(t, New(base, WithPolicy(p), WithObserver(rec.observe)), context.Background())
		require.NoError(t, err)
		assert.Equal(t, "ok", readAll(t, resp))
		assert.Equal(t, []time.Duration{0, ms(300), ms(600)}, base.sentAt)
		for _, e := range rec.all() {
			assert.ErrorIs(t, e.Err, ErrAttemptTimeout)
		}
	})
}

func TestDeadlineCancelsTheAttemptWaitingForHeaders(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := newScripted(hangUntilCanceled(map[int]bool{1: true}))
		p := fastPolicy(3)
		p.Deadline = ms(700)
		var rec recorder
		start := time.Now()
		resp, err := get(t, New(base, WithPolicy(p), WithObserver(rec.observe)), context.Background())
		assert.Nil(t, resp)
		assert.ErrorIs(t, err, ErrDeadline)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Equal(t, ms(700), time.Since(start))
		assert.Equal(t, ReasonDeadline, rec.giveUp(t))
	})
}

// closeCounter is a response body that counts its Closes.
type closeCounter struct {
	closes atomic.Int32
}

func (c *closeCounter) Read([]byte) (int, error) { return 0, errors.New("unread") }
func (c *closeCounter) Close() error             { c.closes.Add(1); return nil }

func TestCancelDuringAWaitReturnsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		body := &closeCounter{}
		base := newScripted(func(r *http.Request, n int) (*http.Response, error) {
			return &http.Response{StatusCode: 503, Header: http.Header{}, Body: body, ContentLength: -1}, nil
		})
		p := fastPolicy(3)
		p.Backoff = Fixed(10 * time.Second)
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(time.Second, cancel)
		var rec recorder
		start := time.Now()
		resp, err := get(t, New(base, WithPolicy(p), WithObserver(rec.observe)), ctx)
		assert.Nil(t, resp)
		assert.ErrorIs(t, err, context.Canceled)
		assert.Equal(t, time.Second, time.Since(start))
		assert.EqualValues(t, 1, body.closes.Load(), "the discarded response is closed")
		assert.Equal(t, []EventKind{EventRetry, EventGiveUp}, rec.kinds())
		assert.Equal(t, ReasonCanceled, rec.giveUp(t))
		assert.Equal(t, 503, rec.all()[1].Status, "the give-up reports the status the attempt ended with")
	})
}

func TestCanceledAttemptIsNotRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := newScripted(hangUntilCanceled(map[int]bool{1: true}))
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(ms(100), cancel)
		var rec recorder
		resp, err := get(t, New(base, WithPolicy(fastPolicy(3)), WithObserver(rec.observe)), ctx)
		assert.Nil(t, resp)
		assert.ErrorIs(t, err, context.Canceled)
		assert.EqualValues(t, 1, base.n.Load())
		assert.Equal(t, ReasonCanceled, rec.giveUp(t))
	})
}

func TestReturnedBodyKeepsItsAttemptContextUntilClosed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var attemptCtx context.Context
		base := newScripted(func(r *http.Request, n int) (*http.Response, error) {
			attemptCtx = r.Context()
			return fakeResponse(r, http.StatusOK, nil, "ok"), nil
		})
		p := fastPolicy(3)
		p.PerTryTimeout = ms(100)
		resp, err := get(t, New(base, WithPolicy(p)), context.Background())
		require.NoError(t, err)
		time.Sleep(time.Second) // long past PerTryTimeout
		assert.NoError(t, attemptCtx.Err(), "the body is governed by the caller's context")
		assert.Equal(t, "ok", readAll(t, resp))
		assert.ErrorIs(t, attemptCtx.Err(), context.Canceled, "released once the body is closed")
	})
}

// trickling answers 503 with Retry-After: 1 and a body whose rest never
// comes: discarding it takes the whole drain time.
func trickling(r *http.Request, n int) (*http.Response, error) {
	pr, pw := io.Pipe()
	go func() {
		pw.Write(make([]byte, 10))
		<-r.Context().Done()
		pw.Close()
	}()
	return &http.Response{StatusCode: 503, Header: http.Header{"Retry-After": {"1"}},
		Body: pr, ContentLength: 100, Request: r}, nil
}

// The time it takes to drain the failed response counts against the
// deadline: a wait that fits before the drain but not after it ends the
// loop at once, with the response, which the caller can still read.
func TestTheDrainCountsAgainstTheDeadline(t *testing.T) {
	for _, tc := range []struct {
		name   string
		policy time.Duration
		ctx    time.Duration
	}{{"policy Deadline", 1050 * time.Millisecond, 0}, {"context deadline", 0, 1050 * time.Millisecond}} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				base := newScripted(trickling)
				p := fastPolicy(3)
				p.Deadline = tc.policy
				ctx := context.Background()
				if tc.ctx > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, tc.ctx)
					defer cancel()
				}
				var rec recorder
				start := time.Now()
				resp, err := get(t, New(base, WithPolicy(p), WithObserver(rec.observe)), ctx)
				require.NoError(t, err)
				assert.Equal(t, 503, resp.StatusCode)
				assert.Equal(t, time.Duration(0), time.Since(start), "at once")
				assert.EqualValues(t, 1, base.n.Load())
				assert.Equal(t, ReasonDeadline, rec.giveUp(t))
				b := make([]byte, 10)
				_, err = io.ReadFull(resp.Body, b)
				assert.NoError(t, err, "the body is intact")
				resp.Body.Close()
			})
		})
	}
}

// An observer slower than the room left: the deadline is checked again
// right before the wait.
func TestTheDeadlineIsCheckedAgainRightBeforeTheWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := newScripted(statusThenOK(503, nil, 1))
		p := fastPolicy(3)
		p.Backoff = Fixed(ms(100))
		p.Deadline = ms(350) // room for the drain (100ms) and the wait
		slow := func(e Event) {
			if e.Kind == EventRetry {
				time.Sleep(ms(300))
			}
		}
		var rec recorder
		resp, err := get(t, New(base, WithPolicy(p), WithObserver(slow), WithObserver(rec.observe)), context.Background())
		require.NoError(t, err, "a deadline not yet reached: the last response, whole")
		assert.Equal(t, 503, resp.StatusCode)
		assert.Equal(t, "busy", readAll(t, resp))
		assert.EqualValues(t, 1, base.n.Load(), "no attempt after the deadline")
		assert.Equal(t, []EventKind{EventRetry, EventGiveUp}, rec.kinds())
		assert.Equal(t, ReasonDeadline, rec.giveUp(t))
		assert.Equal(t, 503, rec.all()[1].Status)
	})
}

// A resend charged to the budget and then canceled during its wait was
// never sent: its charge, and the floor credit it spent, are given back.
func TestACancelDuringTheWaitRefundsTheBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := newScripted(statusThenOK(503, nil, 5))
		p := fastPolicy(3)
		p.Backoff = Fixed(10 * time.Second)
		p.Budget = BudgetConfig{MinRetries: 2}
		bs := NewBudgets()
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(time.Second, cancel)
		_, err := get(t, New(base, WithPolicy(p), WithBudgets(bs)), ctx)
		assert.ErrorIs(t, err, context.Canceled)
		st := bs.For("api.example.com", p.Budget).Stats()
		assert.Equal(t, 0, st.Retries)
		assert.Equal(t, 2, st.Credit)
	})
}

// A caller who cancels while a resend with no wait is announced gets no
// resend: the context is looked at even when there is nothing to wait.
// Repeated, since a wait of zero must not be a race between a timer and
// the context.
func TestACancelBeforeAResendWithoutWaitSendsNothingMore(t *testing.T) {
	for range 20 {
		base := newScripted(statusThenOK(503, nil, 5))
		ctx, cancel := context.WithCancel(context.Background())
		var rec recorder
		observe := func(e Event) {
			rec.observe(e)
			if e.Kind == EventRetry {
				cancel()
			}
		}
		resp, err := get(t, New(base, WithPolicy(fastPolicy(3)), WithObserver(observe)), ctx)
		cancel()
		require.Nil(t, resp)
		require.ErrorIs(t, err, context.Canceled)
		require.EqualValues(t, 1, base.n.Load(), "no attempt after the cancel")
		require.Equal(t, []EventKind{EventRetry, EventGiveUp}, rec.kinds())
		require.Equal(t, ReasonCanceled, rec.giveUp(t))
	}
}

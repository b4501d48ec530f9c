package httpretry

import (
	"context"
	"errors"
	"net/http"
	"time"
)

// The decisions of the attempt loop, each a function of the call's state
// and an instant it is given: what an outcome is (judge), may it be resent
// at all (refusal), what comes next, to which candidate, after how long,
// announced how (next and nextCopy, which ask admit or admitCopy of each
// candidate). They change no state of the call or its origins; two call
// out: a backoff with jitter draws randomness, and judge calls the
// policy's RetryIf. loop.go pays for what they decide (pay, reserve) and
// acts on it, and verdict.go applies what judge decided.

// judge makes an outcome of what attempt a came back with, judged at now
// (see call.clock): whether it is a failure worth another attempt, and its
// Retry-After, parsed once. It decides only: the verdict is applied by
// whoever holds the outcome (see apply), where a panic cannot lose it. A
// RetryIf that panics leaves resp closed and a ended.
func (c *call) judge(a *attempt, resp *http.Response, err error, now time.Time) outcome {
	if c.p.retryIf != nil {
		defer a.releaseOnPanic(resp)
	}
	o := outcome{a: a, resp: resp, err: err, failure: c.failed(resp, err)}
	if c.p.retryIf != nil && resp != nil {
		rewind(resp) // RetryIf may have read an answer read whole
	}
	o.read(resp, now)
	return o
}

// failed reports whether an outcome is a failure worth another attempt. The
// caller's context ending always is one, so that the loop reports it.
func (c *call) failed(resp *http.Response, err error) bool {
	if err == nil {
		return !c.p.answers(resp)
	}
	if c.p.retryIf == nil || c.req.Context().Err() != nil {
		return true
	}
	return c.p.retryIf(nil, err)
}

// refusal judges a failed outcome: the reason it may not be resent at
// all, or 0. An answer to a request that asks to switch protocols is
// never resent: only an attempt that got no response is.
func (c *call) refusal(o outcome) Reason {
	if o.err != nil {
		if ctxErr := c.req.Context().Err(); ctxErr != nil {
			if errors.Is(ctxErr, context.DeadlineExceeded) {
				return ReasonDeadline
			}
			return ReasonCanceled
		}
		if o.a.fired.Load() && o.a.byDeadline {
			return ReasonDeadline
		}
		if c.body != nil && c.body.ReadErr() != nil {
			return ReasonBodyNotReplayable
		}
		if c.p.retryIf == nil && permanent(o.err) {
			return ReasonNotRetryable
		}
	}
	if o.resp != nil && c.upgrade {
		return ReasonNotRetryable
	}
	if !c.resendable && !o.a.neverSent(o.err, c.body) {
		return ReasonNotIdempotent
	}
	return 0
}

// next decides, at now, the attempt after a failed outcome: the first
// candidate not yet tried, or a resend round the candidates from where the
// last one went, passing over a candidate that cannot take it (its
// Retry-After, the deadline, or its budget: refused is the set of
// candidates whose budget said no to this very attempt). drain is how long
// discarding the failed response may still take. next changes nothing:
// the loop pays for the plan, then commits it.
func (c *call) next(now time.Time, drain time.Duration, refused []Reason) (plan, Reason) {
	if k, ok := c.untried(); ok {
		if !c.deadline.IsZero() && !now.Add(drain).Before(c.deadline) {
			return plan{}, ReasonDeadline
		}
		return plan{to: k, kind: EventFallback}, 0
	}
	if c.drawn >= c.maxRetries {
		return plan{}, ReasonExhausted
	}
	return c.around(EventRetry, refused, func(tg *target) (time.Duration, Reason) {
		return c.admit(tg, now, drain, c.drawn+1)
	})
}

// nextCopy decides, at now, a copy of an attempt still in flight, which
// never waits: to the first candidate not yet tried, or round the
// candidates as a resend goes; with Hedge.SameOrigin, to the request's
// own origin, wherever the round began. A copy to a new candidate is
// still drawn on the pool.
func (c *call) nextCopy(now time.Time) (plan, Reason) {
	if c.drawn >= c.maxRetries {
		return plan{}, ReasonExhausted
	}
	if c.p.hedge.SameOrigin {
		k := c.ownIndex()
		if reason := c.admitHedge(&c.targets[k], now); reason != 0 {
			return plan{}, reason
		}
		return plan{to: k, kind: EventHedge}, 0
	}
	if k, ok := c.untried(); ok {
		if reason := c.admitHedge(&c.targets[k], now); reason != 0 {
			return plan{}, reason
		}
		return plan{to: k, kind: EventHedge}, 0
	}
	return c.around(EventHedge, nil, func(tg *target) (time.Duration, Reason) {
		return 0, c.admitHedge(tg, now)
	})
}

// nextResume decides, at now, the next request of a body that resumes,
// to the call's one origin, after stuck failures in a row with no byte
// between: after progress it goes at once, as a copy does; otherwise it
// waits the backoff of that many failures, as a resend does. It draws on
// no pool.
func (c *call) nextResume(now time.Time, stuck int) (plan, Reason) {
	tg := &c.targets[0]
	if stuck == 0 {
		return plan{kind: EventResume}, c.admitCopy(tg, now)
	}
	wait, reason := c.admit(tg, now, 0, stuck)
	return plan{wait: wait, kind: EventResume}, reason
}

// admit decides whether attempt n after the first, counted as the
// backoff counts, may go to tg at now, and after how long: the backoff's
// wait, shortened to the wait budget left, lengthened to what tg's
// Retry-After still asks. drain is how long discarding the failed
// response may still take. The wait, and the drain before it, must end
// before the deadline. The backoff draws from the call's source of
// randomness. The pool is next's to check.
func (c *call) admit(tg *target, now time.Time, drain time.Duration, n int) (time.Duration, Reason) {
	switch {
	case c.waitLeft == 0:
		// Spent: resending at once would hammer an origin that failed.
		return 0, ReasonWaitBudget
	case tg.raTooLong:
		return 0, ReasonRetryAfterTooLong
	}
	room := c.room(now, drain)
	wait := c.p.backoff.Delay(n, c.rng)
	if c.waitLeft >= 0 {
		wait = min(wait, c.waitLeft)
	}
	if ra := tg.raUntil.Sub(now); ra > wait {
		if ra >= room {
			return 0, ReasonDeadline
		}
		wait = c.p.backoff.retryAfterWait(n, ra, room, c.rng)
	}
	if wait >= room {
		return 0, ReasonDeadline
	}
	return wait, 0
}

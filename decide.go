package httpretry

import (
	"context"
	"errors"
	"net/http"
	"time"
)

// The decisions of the attempt loop, each a function of the call's state
// and an instant, with no side effect: is an outcome a failure worth
// another attempt (failed), may it be resent at all (refusal), and what
// comes next: which candidate, after how long, announced how (next, which
// asks admit of each candidate). loop.go acts on what they decide.

// answers reports whether resp, which came without an error, is an answer
// to return rather than a failure to retry.
func (p *hostPolicy) answers(resp *http.Response) bool {
	if p.retryIf != nil {
		return !p.retryIf(resp, nil)
	}
	return !p.retryOn.has(resp.StatusCode)
}

// answersGuarded is answers for a response no attempt holds yet: a RetryIf
// that panics leaves it closed.
func (p *hostPolicy) answersGuarded(resp *http.Response) bool {
	if p.retryIf != nil {
		defer (*attempt)(nil).releaseOnPanic(resp)
	}
	return p.answers(resp)
}

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
	o.readRetryAfter(now)
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
// all, or 0.
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
		if c.body != nil && c.body.readErr() != nil {
			return ReasonBodyNotReplayable
		}
		if c.p.retryIf == nil && permanent(o.err) {
			return ReasonNotRetryable
		}
	}
	if !c.resendable && !c.neverSent(o.a, o.err) {
		return ReasonNotIdempotent
	}
	return 0
}

// plan is what the loop does after a failed outcome, as next decides it:
// the attempt it sends, to which candidate, after how long, and how that
// attempt is announced and paid for. An EventFallback plan is a
// candidate's first attempt: a request in that origin's budget, with no
// draw on MaxRetries and no wait. An EventRetry plan (a resend) or an
// EventHedge plan (a copy) draws on the one pool of MaxRetries and is
// reserved on the budget of the origin it goes to.
type plan struct {
	to   int // index in c.targets
	wait time.Duration
	kind EventKind
}

// next decides, at now, the attempt after a failed outcome (hedge: a
// copy of an attempt still in flight, which never waits): the first
// candidate not yet tried, or a resend round the candidates from where
// the last one went, passing over a candidate that cannot take it (its
// Retry-After, the deadline, or its budget, which refused is the set of
// candidates whose budget said no to this very attempt). When none can,
// the reason is the first one's in ring order; the pool and the wait
// budget are the request's and end it at once; a candidate's reason comes
// with that candidate in the plan's to, for the give-up to name it. drain
// is how long
// discarding the failed response may still take. next changes nothing: the
// loop pays for the plan, then commits it.
func (c *call) next(now time.Time, drain time.Duration, hedge bool, refused []bool) (plan, Reason) {
	kind := EventRetry
	if hedge {
		kind, drain = EventHedge, 0
	}
	for k := range c.targets {
		tg := &c.targets[k]
		if tg.tried {
			continue
		}
		switch {
		case hedge:
			// A copy to a new candidate is still drawn on the pool.
			if _, reason := c.admit(tg, now, 0, true); reason != 0 {
				return plan{}, reason
			}
			return plan{to: k, kind: kind}, 0
		case !c.deadline.IsZero() && !now.Add(drain).Before(c.deadline):
			return plan{}, ReasonDeadline
		}
		return plan{to: k, kind: EventFallback}, 0
	}
	var (
		first Reason
		by    int // the candidate that gave first
	)
	for i := range c.targets {
		k := (c.ring + i) % len(c.targets)
		var wait time.Duration
		reason := ReasonBudget
		if refused == nil || !refused[k] {
			wait, reason = c.admit(&c.targets[k], now, drain, hedge)
		}
		switch reason {
		case 0:
			return plan{to: k, wait: wait, kind: kind}, 0
		case ReasonExhausted, ReasonWaitBudget:
			return plan{}, reason // the request's, not a candidate's
		}
		if first == 0 {
			first, by = reason, k
		}
	}
	return plan{to: by}, first // to: whom the reason is about
}

// admit decides whether one more attempt drawn on the pool of MaxRetries
// may go to tg at now, and after how long: the backoff's wait, shortened
// to the wait budget left, lengthened to what tg's Retry-After still asks.
// drain is how long discarding the failed response may still take; a
// hedged copy (hedge) does not wait. The wait, and the drain before it,
// must end before the deadline.
func (c *call) admit(tg *target, now time.Time, drain time.Duration, hedge bool) (time.Duration, Reason) {
	if c.drawn >= c.maxRetries {
		return 0, ReasonExhausted
	}
	if !hedge && c.waitLeft == 0 {
		// Spent: resending at once would hammer an origin that failed.
		return 0, ReasonWaitBudget
	}
	if tg.raTooLong {
		return 0, ReasonRetryAfterTooLong
	}
	room := maxDuration
	if !c.deadline.IsZero() {
		room = c.deadline.Sub(now) - drain
	}
	var wait time.Duration
	if hedge && tg.raUntil.After(now) {
		// A copy cannot wait: any Retry-After still running is too long
		// for it.
		return 0, ReasonRetryAfterTooLong
	}
	if !hedge {
		n := c.drawn + 1
		wait = c.p.backoff.Delay(n, c.rng)
		if c.waitLeft >= 0 {
			wait = min(wait, c.waitLeft)
		}
		if ra := tg.raUntil.Sub(now); ra > wait {
			if ra >= room {
				return 0, ReasonDeadline
			}
			wait = c.p.backoff.retryAfterWait(n, ra, room, c.rng)
		}
	}
	if wait >= room {
		return 0, ReasonDeadline
	}
	return wait, 0
}

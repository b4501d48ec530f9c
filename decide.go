package httpretry

import (
	"context"
	"errors"
	"io"
	"net/http"
	"time"
)

// The attempt loop decides, then acts. After a failed attempt it asks the
// questions of the package documentation in their order: is the outcome a
// failure worth another attempt (failed), is a resend safe (verdict), can
// the body be had again (nextBody), which origin (route: see fallback.go),
// may a resend go to that origin now and after how long (admit), and does
// the origin's budget grant it (take). Only nextBody, take and route,
// through take, act: the first fetches a body, take charges the budget and
// spends the wait budget; the others are functions of the call's state and
// an instant.

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

// verdict judges a failed outcome: the reason it may not be resent, or 0.
func (c *call) verdict(o outcome) Reason {
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

// nextBody returns the body of a resend after the failed outcome o. A
// recorded body that a discarded attempt's transport is still uploading
// is taken from it first (see replayBody.revoke); since that upload may
// have gone past the limit, o's response is read into memory beforehand,
// so that it can still be returned whole.
func (c *call) nextBody(o *outcome) (io.ReadCloser, Reason) {
	if c.body != nil && c.body.replayable() && c.body.busy() {
		if o.resp != nil && !keep(o.resp) {
			o.resp, o.err = nil, errBodyGone
		}
		c.body.revoke()
	}
	return c.copyBody()
}

// copyBody returns a body for another attempt, hedged copies included.
func (c *call) copyBody() (io.ReadCloser, Reason) {
	r := c.req
	switch {
	case c.body != nil:
		if rr := c.body.reader(); rr != nil {
			return rr, 0
		}
		return nil, ReasonBodyNotReplayable
	case r.Body == nil || r.Body == http.NoBody:
		return r.Body, 0
	}
	b, err := r.GetBody()
	if err != nil {
		return nil, ReasonBodyNotReplayable
	}
	if b == nil {
		b = http.NoBody
	}
	return b, 0
}

// admit decides whether one more attempt drawn on the pool of MaxRetries
// may go to tg at now, and after how long: the backoff's wait, shortened
// to the wait budget left, lengthened to what tg's Retry-After still asks.
// drain is how long discarding the failed response may still take; a
// hedged copy (copy) does not wait. The wait, and the drain before it,
// must end before the deadline.
func (c *call) admit(tg *target, now time.Time, drain time.Duration, copy bool) (time.Duration, Reason) {
	if c.drawn >= c.maxRetries {
		return 0, ReasonExhausted
	}
	if !copy && c.waitLeft == 0 {
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
	if copy && tg.raUntil.After(now) {
		// A copy cannot wait: any Retry-After still running is too long
		// for it.
		return 0, ReasonRetryAfterTooLong
	}
	if !copy {
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

// grant admits one attempt to tg at now (see admit) and takes it.
func (c *call) grant(tg *target, now time.Time, drain time.Duration, copy bool) (time.Duration, Reason) {
	wait, reason := c.admit(tg, now, drain, copy)
	if reason == 0 {
		reason = c.take(tg, now, wait)
	}
	return wait, reason
}

// take charges an admitted attempt to tg's budget at now, keeping the
// reservation in case the attempt is never sent, and spends its wait from
// the wait budget; it reports ReasonBudget if the budget refuses.
func (c *call) take(tg *target, now time.Time, wait time.Duration) Reason {
	c.reserved = reservation{}
	if tg.budget != nil {
		var ok bool
		if c.reserved, ok = tg.budget.reserveAt(now); !ok {
			return ReasonBudget
		}
	}
	c.drawn++
	if c.waitLeft >= 0 {
		c.waitLeft = max(c.waitLeft-wait, 0)
	}
	return 0
}

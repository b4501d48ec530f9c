package httpretry

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// limits are what a request spends across its attempts: draws on the
// pool of MaxRetries, the wait budget, the time before its deadline.
type limits struct {
	drawn    int           // attempts drawn on the pool of maxRetries
	waitLeft time.Duration // what is left of the wait budget; negative: unbounded
	deadline time.Time     // the earlier of policyDeadline and the context's; zero: none
}

// setBounds starts the wait budget, and the deadline: the earlier of the
// policy's Deadline and that of ctx, the request's context.
func (l *limits) setBounds(ctx context.Context, waitBudget time.Duration, policyDeadline time.Time) {
	l.waitLeft = waitBudget
	l.deadline = policyDeadline
	if d, ok := ctx.Deadline(); ok && (l.deadline.IsZero() || d.Before(l.deadline)) {
		l.deadline = d
	}
}

// admitCopy decides whether an attempt that cannot wait, a copy, may go
// to tg at now: any Retry-After still running is too long for it, and it
// must go before the deadline. The pool is nextCopy's to check.
func (l *limits) admitCopy(tg *target, now time.Time) Reason {
	switch {
	case tg.raTooLong, tg.raUntil.After(now):
		return ReasonRetryAfterTooLong
	case l.room(now, 0) <= 0:
		return ReasonDeadline
	}
	return 0
}

// room is how long is left at now, after drain, before the deadline.
func (l *limits) room(now time.Time, drain time.Duration) time.Duration {
	if l.deadline.IsZero() {
		return maxDuration
	}
	return l.deadline.Sub(now) - drain
}

// crosses reports whether d from now would reach the deadline.
func (l *limits) crosses(d time.Duration) bool {
	return !l.deadline.IsZero() && !time.Now().Add(d).Before(l.deadline)
}

// sleep waits d before the next attempt, in ctx, the request's context.
// It fails at once if the wait would cross the deadline, the time taken
// since the wait was decided (draining) included, and early if the
// context ends first. A deadline not yet reached is no context error:
// the error does not wrap one.
func (l *limits) sleep(ctx context.Context, d time.Duration) (Reason, error) {
	if l.crosses(d) {
		return ReasonDeadline, fmt.Errorf("the wait of %v would cross the deadline", d)
	}
	if d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
			return 0, nil
		case <-ctx.Done():
		}
	}
	if err := ctx.Err(); err != nil {
		reason := ReasonCanceled
		if errors.Is(err, context.DeadlineExceeded) {
			reason = ReasonDeadline
		}
		return reason, fmt.Errorf("context ended while waiting to resend: %w", err)
	}
	return 0, nil
}

// spend takes what paid plan s costs: a resend or a copy draws on the
// pool, a resume request on none, and each but a fallback's probe spends
// its wait from the wait budget.
func (l *limits) spend(s plan) {
	switch s.kind {
	case EventFallback:
		return
	case EventRetry, EventHedge:
		l.drawn++
	}
	if l.waitLeft >= 0 {
		l.waitLeft = max(l.waitLeft-s.wait, 0)
	}
}

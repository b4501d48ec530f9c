package httpretry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"
)

// The attempt loop acts on a request's outcomes: it applies each one's
// verdict to its origin (a hedged round does so for the attempts that
// lost), asks decide.go what comes next, pays for it (a request or a
// reservation on the origin's budget), announces it, checks the deadline
// again, discards what the failed attempt left, waits, and sends. A wait
// that cannot be had gives back what was paid.

// afterFast goes on from the fast path's first outcome, which was not an
// answer, at now (zero: not read yet).
func (c *call) afterFast(resp *http.Response, err error, now time.Time) (*http.Response, error) {
	if c.demotes {
		defer c.releaseProbes() // claimed as attempts go; a panic must not keep them
	}
	c.targets[0].tried = true
	if now.IsZero() {
		now = c.clock(resp)
	}
	if resp != nil {
		o := outcome{a: &c.first, resp: resp, failure: true} // answersGuarded said so
		o.read(resp, now)
		return c.loop(o)
	}
	return c.loop(c.judge(&c.first, nil, err, now))
}

// start sends the first attempt at now and goes on from its outcome.
func (c *call) start(now time.Time) (*http.Response, error) {
	if c.demotes {
		defer c.releaseProbes()
	}
	if c.body != nil {
		// Deferred here, not in the loop: a callback that panics in the
		// first round must leave the caller's body closed too.
		defer c.body.Finish()
	}
	first := &c.targets[0]
	if c.reorder {
		first = c.firstTarget(now) // only a reordered first may be a probe
	}
	if b := c.budgetOf(first); c.reorder && b != nil {
		// Its first attempt is this origin's request (point 18).
		b.recordAt((*instant)(&now))
	}
	first.tried = true
	return c.loop(c.round(1, first, c.firstBody(c.req)))
}

// loop applies each outcome's verdict and resends while the checks allow
// it.
func (c *call) loop(o outcome) (*http.Response, error) {
	var next pending
	// An observer that panics, on any event, leaves the outcome it was
	// told of released, the next attempt's body closed (so that the
	// caller's is) and its charge given back.
	defer func() {
		if v := recover(); v != nil {
			if o.a != nil {
				o.a.discard(o.resp)
			}
			next.release()
			panic(v)
		}
	}()
	defer c.leavePark()
	for {
		c.apply(&o)
		if !o.failure {
			return c.deliver(o)
		}
		var t turn
		p, uploading, reason := plan{}, false, Reason(0)
		if o.parkTry {
			t = c.parkAgain(&o)
		} else if p, uploading, reason = c.payNext(&o, &next); reason != 0 {
			about := o.a.tg
			if reason == ReasonBudget || reason == ReasonHold {
				about = &c.targets[p.to] // the origin whose budget or hold refused
			}
			t = c.stop(&o, reason, about, reservation{}, nil, 0)
		}
		if o.parkTry || reason != 0 {
			if !t.again {
				return t.resp, t.err
			}
			o = t.next
			continue
		}
		tg := &c.targets[p.to]
		c.emit(Event{Kind: p.kind, Attempt: o.a.n, Status: status(o.resp), Err: o.err, Delay: p.wait}, tg)
		if reason := c.stillDue(&o, &next, p.wait, uploading); reason != 0 {
			next.release()
			return c.giveUp(o, reason, o.a.tg)
		}
		if p.held != nil {
			if t, ok := c.afterHeld(&o, &next, p); !ok {
				if !t.again {
					return t.resp, t.err
				}
				o = t.next
				continue
			}
		} else if err := c.wait(&o, &next, p.wait); err != nil {
			return nil, err
		}
		body := next.body
		next = pending{} // the round's now
		o = c.round(c.sent+1, tg, body)
	}
}

// pending is what the loop holds for the next attempt between paying for
// it and sending it: its body and its charge.
type pending struct {
	body io.ReadCloser
	res  reservation
}

// release closes the body and gives back the charge of an attempt that
// will not be sent.
func (n *pending) release() {
	closeBody(n.body)
	n.res.refund()
	*n = pending{}
}

// deliver ends the loop on an outcome that is not a failure: its answer,
// with a body that resumes if it breaks, or its error.
func (c *call) deliver(o outcome) (*http.Response, error) {
	if o.err != nil {
		return nil, fmt.Errorf("httpretry: %w", o.err)
	}
	resp := o.a.deliver(o.resp)
	if !c.nested { // the outer httpretry resumes, or no one
		c.wrapResumable(o.a.tg, o.a.n, c.sent, resp)
	}
	return resp, nil
}

// payNext decides the attempt after the failed outcome o and pays for it
// into next: nothing when o may not be resent at all (see refusal);
// otherwise the plan pay makes, with its body taken at once, or, while
// the failed attempt still uploads the recorded body, once the attempt is
// announced and still due (see stillDue).
func (c *call) payNext(o *outcome, next *pending) (p plan, uploading bool, reason Reason) {
	now := o.at // judged just now, unless a hedged round kept it a while
	if c.hedged {
		now = c.clock(o.resp)
	}
	if reason = c.refusal(*o); reason != 0 {
		return p, false, reason
	}
	switch uploading = c.uploading(); {
	case uploading && !c.body.Records():
		// Nothing is recorded: the upload's next byte makes the body
		// unreplayable, and a takeover would lose the response for
		// nothing.
		return p, true, ReasonBodyNotReplayable
	case uploading:
		p, next.res, reason = c.pay(now, drainBound(o.resp))
	default:
		p, next.body, next.res, reason = c.prepare(o, now)
	}
	return p, uploading, reason
}

// prepare takes the body of the attempt after the failed outcome o, then
// pays for it at now (see pay): an attempt without a body is never
// charged.
func (c *call) prepare(o *outcome, now time.Time) (plan, io.ReadCloser, reservation, Reason) {
	body, reason := c.copyBody(c.req)
	if reason != 0 {
		return plan{}, nil, reservation{}, reason
	}
	p, res, reason := c.pay(now, drainBound(o.resp))
	if reason != 0 {
		closeBody(body)
		return p, nil, res, reason
	}
	return p, body, res, 0
}

// stillDue checks that the attempt just announced is still due: the
// observers may have taken the time its wait needed, and then the caller
// gets the last outcome, as when the wait was decided. A body still being
// uploaded is taken over only now (see takeOver).
func (c *call) stillDue(o *outcome, next *pending, wait time.Duration, uploading bool) Reason {
	if c.crosses(drainBound(o.resp) + wait) {
		return ReasonDeadline
	}
	if uploading {
		var reason Reason
		if next.body, reason = c.takeOver(o, c.req); reason != 0 {
			return reason
		}
	}
	return 0
}

// wait lets go of the failed outcome o and waits d before the next
// attempt. An error ends the request: the next attempt's body and charge
// are given back, and the give-up is told.
func (c *call) wait(o *outcome, next *pending, d time.Duration) error {
	st := status(o.resp)
	c.drop(*o)
	o.resp = nil
	reason, err := c.sleep(c.req.Context(), d)
	if err == nil {
		return nil
	}
	next.release()
	c.emit(Event{Kind: EventGiveUp, Attempt: o.a.n, Status: st, Err: err, Reason: reason}, o.a.tg)
	if ctxErr := c.req.Context().Err(); ctxErr != nil && errors.Is(err, ctxErr) {
		return fmt.Errorf("httpretry: %w", err)
	}
	return giveUpError(c.req.Context(), c.sent, reason, o.a.tg, err) // the wait would cross a deadline
}

// pay pays for the plan next decides at now, and commits it: a
// candidate's first attempt counts as a request in its origin's budget; a
// resend is reserved on it, and when that budget refuses, next decides
// again without that candidate. The reservation is the loop's to give back
// (refund) if the attempt is never sent. A hedged copy is paid by its
// round instead (hedgedRound.charge): it is charged to the request it
// copies.
func (c *call) pay(now time.Time, drain time.Duration) (plan, reservation, Reason) {
	var refused []Reason // made on the first refusal: rare, and candidates few
	for {
		s, reason := c.next(now, drain, refused)
		if reason != 0 {
			return s, reservation{}, reason
		}
		tg := &c.targets[s.to]
		if s.kind == EventFallback {
			if !tg.claimProbe(now) {
				continue // deferred: next decides again
			}
			if b := c.budgetOf(tg); b != nil {
				b.recordAt((*instant)(&now))
			}
			c.attempted(s)
			c.spend(s)
			return s, reservation{}, 0
		}
		why := ReasonBudget
		if res, ok := c.reserve(tg, now); ok {
			if s.held, why = c.holdAt(tg, s, now); why == 0 {
				c.attempted(s)
				c.spend(s)
				return s, res, 0
			}
			res.refund()
		}
		if refused == nil {
			refused = make([]Reason, len(c.targets))
		}
		refused[s.to] = why
	}
}

// reserve charges one resend or resume request drawn on the pool to tg's
// budget at now, for the loop to refund if the attempt never goes. ok is
// false when the budget refuses; a disabled budget charges nothing. A
// hedged copy is charged by hedgedRound.charge.
func (c *call) reserve(tg *target, now time.Time) (reservation, bool) {
	b := c.budgetOf(tg)
	if b == nil {
		return reservation{}, true
	}
	res, refused := b.reserveAt(now, 0)
	return res, refused == 0
}

// clock is the instant an outcome with resp is judged at and the decisions
// after it are taken at, or the zero time when none of them depends on
// it: no Retry-After, deadline, budget or demotion. On a virtual machine's
// clock (kvm-clock) a read costs about 50 ns, an eighth of what a resend
// adds to its two calls.
func (c *call) clock(resp *http.Response) time.Time {
	need := !c.deadline.IsZero() || c.demotes || hasRetryAfter(resp)
	for i := 0; i < len(c.targets) && !need; i++ {
		tg := &c.targets[i]
		need = tg.budgeted || !tg.raUntil.IsZero()
	}
	return judgedAt(need)
}

// drop lets go of a failed outcome's response. With fallbacks, a short one
// is kept in memory first: an answer beats an error, so a request that
// ends on a transport error returns the latest answer any origin gave.
func (c *call) drop(o outcome) {
	if o.resp == nil || len(c.targets) == 1 {
		o.a.discard(o.resp)
		return
	}
	if keep(o.resp) {
		c.answer = o.resp
	}
	o.a.end() // keep closed the response either way
}

// giveUp ends the loop on a failed outcome that is not resent: the caller
// gets its response, body intact, or the latest answer kept, or its error.
// The event is about the origin of o's attempt, or of the budget that
// refused the resend.
func (c *call) giveUp(o outcome, reason Reason, about *target) (*http.Response, error) {
	c.emit(Event{Kind: EventGiveUp, Attempt: o.a.n, Status: status(o.resp), Err: o.err, Reason: reason}, about)
	if o.resp != nil {
		return o.a.deliver(o.resp), nil
	}
	o.a.end()
	if c.answer != nil && c.req.Context().Err() == nil {
		return c.answer, nil // a caller who gave up gets its context's error
	}
	return nil, giveUpError(c.req.Context(), c.sent, reason, about, o.err)
}

// giveUpError is the error a request that ends on err for reason, after
// sent attempts, returns: it says why, whose budget for a spent one, and
// wraps err and the error of ctx, the request's context, if it ended.
func giveUpError(ctx context.Context, sent int, reason Reason, about *target, err error) error {
	why := reason.String()
	switch reason {
	case ReasonBudget:
		why = "retry budget of " + about.host + " spent"
	case ReasonWaitBudget:
		why = "wait budget spent"
	}
	if ctxErr := ctx.Err(); ctxErr != nil && !errors.Is(err, ctxErr) {
		return fmt.Errorf("httpretry: %s after %d attempt(s): %w: %w", why, sent, err, ctxErr)
	}
	return fmt.Errorf("httpretry: %s after %d attempt(s): %w", why, sent, err)
}

// round sends attempt n to tg and, while it goes without response headers for
// the round's delay (Hedge.After, or tg's learned one), copies of it, each
// decided by nextCopy and paid for like a resend. The first outcome that is
// not a failure wins and the other attempts are canceled, their responses
// discarded, before round returns: no attempt outlives it but the winner. If
// every attempt fails, round returns the failure it kept: a response rather
// than an error, and of two responses the one whose Retry-After asks more,
// since the loop must honour the strongest instruction the upstream gave.
func (c *call) round(n int, tg *target, body io.ReadCloser) outcome {
	if !c.hedged {
		a, r := c.newAttempt(n, tg, body, false)
		c.sent = n
		resp, err := c.do(a, r)
		return c.judge(a, resp, err, c.clock(resp))
	}
	h := hedgedRound{c: c, outcomes: make(chan outcome, 1+c.p.hedge.copies()), origin: tg}
	return h.run(n, tg, body)
}

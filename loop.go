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

// loop applies each outcome's verdict and resends while the checks allow
// it.
func (c *call) loop(o outcome) (*http.Response, error) {
	var (
		body io.ReadCloser // the next attempt's, once taken
		res  reservation   // what the next attempt was charged, once paid
	)
	// An observer that panics, on any event, leaves the outcome it was
	// told of released, the next attempt's body closed (so that the
	// caller's is) and its charge given back.
	defer func() {
		if v := recover(); v != nil {
			if o.a != nil {
				o.a.discard(o.resp)
			}
			closeBody(body)
			res.refund()
			panic(v)
		}
	}()
	for {
		c.apply(&o)
		if !o.failure {
			if o.err != nil {
				return nil, fmt.Errorf("httpretry: %w", o.err)
			}
			resp := o.a.deliver(o.resp)
			if !c.nested { // the outer httpretry resumes, or no one
				c.wrapResumable(o.a.tg, o.a.n, c.sent, resp)
			}
			return resp, nil
		}
		now := o.at // judged just now, unless a hedged round kept it a while
		if c.hedged {
			now = c.clock(o.resp)
		}
		reason := c.refusal(o)
		var p plan
		uploading := reason == 0 && c.uploading()
		switch {
		case reason != 0:
		case uploading && c.body.limit == 0:
			// Nothing is recorded: the upload's next byte makes the body
			// unreplayable, and a takeover would lose the response for
			// nothing.
			reason = ReasonBodyNotReplayable
		case uploading:
			// The body is taken from the upload once the attempt is
			// announced and still due (see takeOver).
			p, res, reason = c.pay(now, drainBound(o.resp))
		default:
			p, body, res, reason = c.prepare(&o, now)
		}
		if reason != 0 {
			about := o.a.tg
			if reason == ReasonBudget {
				about = &c.targets[p.to] // the origin whose budget refused
			}
			return c.giveUp(o, reason, about)
		}
		tg := &c.targets[p.to]
		c.emit(Event{Kind: p.kind, Attempt: o.a.n, Status: status(o.resp), Err: o.err, Delay: p.wait}, tg)
		if c.crosses(drainBound(o.resp) + p.wait) {
			// The observers took the time the wait needed: the caller
			// gets the last outcome, as when the wait was decided.
			res.refund()
			closeBody(body)
			body, res = nil, reservation{}
			return c.giveUp(o, ReasonDeadline, o.a.tg)
		}
		if uploading {
			if body, reason = c.takeOver(&o); reason != 0 {
				res.refund()
				res = reservation{}
				return c.giveUp(o, reason, o.a.tg)
			}
		}
		st := status(o.resp)
		c.drop(o)
		o.resp = nil
		if reason, err := c.sleep(p.wait); err != nil {
			res.refund()
			closeBody(body)
			body, res = nil, reservation{}
			c.emit(Event{Kind: EventGiveUp, Attempt: o.a.n, Status: st, Err: err, Reason: reason}, o.a.tg)
			return nil, err
		}
		next := body
		body, res = nil, reservation{} // the round's now
		o = c.round(c.sent+1, tg, next)
	}
}

// pay pays for the plan next decides at now, and commits it: a
// candidate's first attempt counts as a request in its origin's budget; a
// resend is reserved on it, and when that budget refuses, next decides
// again without that candidate. The reservation is the loop's to give back
// (refund) if the attempt is never sent. A hedged copy is paid by its
// round instead (hedgedRound.charge): it is charged to the request it
// copies.
func (c *call) pay(now time.Time, drain time.Duration) (plan, reservation, Reason) {
	var refused []bool // made on the first refusal: rare, and candidates few
	for {
		s, reason := c.next(now, drain, refused)
		if reason != 0 {
			return s, reservation{}, reason
		}
		tg := &c.targets[s.to]
		if s.kind == EventFallback {
			if b := c.budgetOf(tg); b != nil {
				b.Record()
			}
			c.commit(s)
			return s, reservation{}, 0
		}
		if res, ok := c.reserve(tg, now, 0); ok {
			c.commit(s)
			return s, res, 0
		}
		if refused == nil {
			refused = make([]bool, len(c.targets))
		}
		refused[s.to] = true
	}
}

// commit applies a paid plan to the call: its candidate has had an
// attempt; a resend or a copy draws on the pool and spends its wait from
// the wait budget, and one to a candidate already tried moves the ring on
// past it.
func (c *call) commit(s plan) {
	tg := &c.targets[s.to]
	again := tg.tried
	tg.tried = true
	if s.kind == EventFallback {
		return
	}
	c.drawn++
	if c.waitLeft >= 0 {
		c.waitLeft = max(c.waitLeft-s.wait, 0)
	}
	if again {
		c.ring = s.to + 1
	}
}

// clock is the instant an outcome with resp is judged at and the decisions
// after it are taken at, or the zero time when none of them depends on
// it: no Retry-After, deadline, budget or demotion. On a virtual machine's
// clock (kvm-clock) a read costs about 50 ns, an eighth of what a resend
// adds to its two calls.
func (c *call) clock(resp *http.Response) time.Time {
	if !c.deadline.IsZero() || c.demoting() {
		return time.Now()
	}
	if t := clockFor(resp); !t.IsZero() {
		return t
	}
	for i := range c.targets {
		if tg := &c.targets[i]; tg.budgeted || !tg.raUntil.IsZero() {
			return time.Now()
		}
	}
	return time.Time{}
}

// clockFor is the instant resp is judged at when it has a Retry-After to
// read, or the zero time.
func clockFor(resp *http.Response) time.Time {
	if resp != nil && resp.Header["Retry-After"] != nil {
		return time.Now()
	}
	return time.Time{}
}

// instant is the instant v was judged at, read now if nothing needed it
// then.
func (v *verdict) instant() time.Time {
	if v.at.IsZero() {
		v.at = time.Now()
	}
	return v.at
}

// crosses reports whether d from now would reach the deadline.
func (c *call) crosses(d time.Duration) bool {
	return !c.deadline.IsZero() && !time.Now().Add(d).Before(c.deadline)
}

// sleep waits d before the next attempt. It fails at once if the wait
// would cross the deadline, the time taken since the wait was decided
// (draining) included, and early if the context ends first. A deadline
// not yet reached is no context error: the error does not wrap one.
func (c *call) sleep(d time.Duration) (Reason, error) {
	if c.crosses(d) {
		return ReasonDeadline, fmt.Errorf("httpretry: %s after %d attempt(s): the wait of %v would cross it",
			ReasonDeadline, c.sent, d)
	}
	ctx := c.req.Context()
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
		return reason, fmt.Errorf("httpretry: context ended while waiting to resend: %w", err)
	}
	return 0, nil
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
	return nil, c.giveUpError(reason, o.err)
}

func (c *call) giveUpError(reason Reason, err error) error {
	if ctxErr := c.req.Context().Err(); ctxErr != nil && !errors.Is(err, ctxErr) {
		return fmt.Errorf("httpretry: %s after %d attempt(s): %w: %w", reason, c.sent, err, ctxErr)
	}
	return fmt.Errorf("httpretry: %s after %d attempt(s): %w", reason, c.sent, err)
}

// emit tells the observers of e, which concerns an attempt to tg. An
// event no observer wants is not completed: its Origin is a string to
// build.
func (r *route) emit(e Event, tg *target) {
	if len(r.t.observers) == 0 || !r.t.observers.want(r.req.Context(), e.Kind) {
		return
	}
	e.Request = r.req
	e.Origin = tg.origin()
	r.t.observers.emit(e)
}

func status(resp *http.Response) int {
	if resp == nil {
		return 0
	}
	return resp.StatusCode
}

func closeBody(b io.ReadCloser) {
	if b != nil {
		b.Close()
	}
}

// round sends attempt n to tg and, while it goes without response
// headers for the round's delay (Hedge.After, or tg's learned one), copies
// of it, each decided by next and paid for like a resend. The first outcome that is not a failure wins and the other
// attempts are canceled, their responses discarded, before round returns:
// no attempt outlives it but the winner. If every attempt fails, round
// returns the failure to judge: a response rather than an error, and of
// two responses the one whose Retry-After asks more, since the loop must
// honour the strongest instruction the upstream gave.
func (c *call) round(n int, tg *target, body io.ReadCloser) outcome {
	if !c.hedged {
		a, r := c.newAttempt(n, tg, body)
		c.sent = n
		resp, err := c.do(a, r)
		return c.judge(a, resp, err, c.clock(resp))
	}
	h := hedgedRound{c: c, outcomes: make(chan outcome, 1+c.p.hedge.copies()), origin: tg}
	h.launch(n, tg, body)
	h.after, h.hedging = c.hedgeAfter(tg)
	var fire <-chan time.Time // nil, never ready, when no copy goes
	timer := time.NewTimer(h.after)
	defer timer.Stop()
	if h.hedging {
		fire = timer.C
	}
	// A callback that panics (RetryIf, an observer) leaves no attempt of
	// the round in flight.
	defer func() {
		if v := recover(); v != nil {
			if h.held != nil {
				h.held.a.discard(h.held.resp)
			}
			h.cancelLosers(nil)
			panic(v)
		}
	}()
	for h.pending > 0 {
		select {
		case o := <-h.outcomes:
			if w, won := h.receive(o); won {
				return w
			}
		case <-fire:
			// An outcome that came with the timer wins over a copy.
			select {
			case o := <-h.outcomes:
				if w, won := h.receive(o); won {
					return w
				}
				continue
			default:
			}
			if h.hedging && h.hedge() {
				timer.Reset(h.after)
			}
		}
	}
	return h.kept
}

package httpretry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// What a request does when its origin holds it back (DESIGN point 22): a
// held resend waits for evidence (hold.go), a request with a deadline
// parks at a down origin (park.go), and a give-up at a down origin is
// never faster than the waits it had left (rule 11).

// parkState is what a request keeps while it parks, or after it parked:
// the origin, the reservation it holds, why it gave up, and the instant
// its give-up would have returned at had it not parked.
type parkState struct {
	rec     *originRecord // nil: the request never parked
	tg      *target
	res     reservation
	reason  Reason
	pace    time.Time
	evicted bool // an open loop's arrival ended it: no token
}

// holdAt decides whether resend s to tg, reserved at now, is held (rules
// 1 to 5): h is its note; why is ReasonHold when rule 1 gives it up at
// once.
func (c *call) holdAt(tg *target, s plan, now time.Time) (h *held, why Reason) {
	if s.kind != EventRetry || !tg.budgeted {
		return nil, 0
	}
	v, ok := holds(tg.rec, now)
	switch {
	case !ok:
		return nil, 0
	case v.giveUpAtOnce():
		return nil, ReasonHold
	}
	return &v, 0
}

// admitHedge is admitCopy for a hedged copy, which is not sent to an
// origin whose streak has reached Hold.
func (c *call) admitHedge(tg *target, now time.Time) Reason {
	if reason := c.admitCopy(tg, now); reason != 0 {
		return reason
	}
	if tg.budgeted && tg.rec != nil {
		if h := tg.rec.budget.loadParams().hold; h > 0 && tg.rec.out.streak.Load() >= h {
			return ReasonHold
		}
	}
	return 0
}

// awaitHeld waits out held resend p after failed outcome o, whose
// response it keeps whole in memory meanwhile (see held.await). It
// reports 0 when the resend goes, with o's response let go; otherwise why
// not, with next's body closed and its reservation kept for stop.
func (c *call) awaitHeld(o *outcome, next *pending, p plan) (Reason, error) {
	if o.resp != nil {
		if _, ok := hold(o.resp); !ok {
			o.resp, o.err = nil, errAnswerLost
		}
	}
	v, err := p.held.await(c.req.Context(), p.wait, c.policyDeadline)
	if err == nil {
		err = c.req.Context().Err() // ended at the instant the wait did
	}
	if err != nil {
		return ctxReason(err), err
	}
	reason := ReasonHold
	switch v {
	case holdGo:
		reason = 0
	case holdBlind:
		if b := c.budgetOf(&c.targets[p.to]); b != nil && b.takeCredit(next.res) {
			reason = 0
		}
	case holdDeadline:
		reason = ReasonDeadline
	}
	if reason == 0 {
		c.drop(*o)
		o.resp = nil
		return 0, nil
	}
	closeBody(next.body)
	next.body = nil
	return reason, nil
}

// ctxReason is the reason a request whose context ended with err ends
// with.
func ctxReason(err error) Reason {
	if errors.Is(err, context.DeadlineExceeded) {
		return ReasonDeadline
	}
	return ReasonCanceled
}

// stop ends the loop on failed outcome o, not resent for reason, which is
// about the origin of about; res is the reservation of a held resend that
// gave up, and h its note (nil: the resend was refused before it was
// decided). A request with room parks (rule 6) and goes on with the
// outcome of its probe or release (again true). Otherwise it ends, at the
// pace of the waits it had left if about's origin is down (rule 11).
func (c *call) stop(o *outcome, reason Reason, about *target, res reservation, h *held, wait time.Duration) turn {
	now := time.Now()
	pace := c.paceEnd(reason, about, now, h, wait)
	if c.mayPark(o, reason, about, now, false) {
		c.pk = parkState{rec: about.rec, tg: about, res: res, reason: reason, pace: pace}
		if t, parked := c.park(o, false); parked {
			return t
		}
		c.pk = parkState{} // the parking is closed
	}
	res.refund()
	return c.endPaced(o, reason, about, pace)
}

// parkAgain parks the request whose probe or release failed with o
// again, first in line, unless o may not be resent at all or its
// deadline has passed.
func (c *call) parkAgain(o *outcome) turn {
	if reason := c.refusal(*o); reason != 0 {
		return c.endPaced(o, reason, o.a.tg, time.Time{})
	}
	if !c.mayPark(o, c.pk.reason, c.pk.tg, time.Now(), true) {
		return c.endPaced(o, ReasonDeadline, o.a.tg, time.Time{})
	}
	t, _ := c.park(o, true) // first in line: never closed to it
	return t
}

// turn is where the loop goes after a request stopped or parked: on with
// next (again), or to the caller with resp or err.
type turn struct {
	next  outcome
	again bool
	resp  *http.Response
	err   error
}

// endPaced gives up on o for reason once pace has passed (zero: at once);
// the caller's context ending first returns its error at once.
func (c *call) endPaced(o *outcome, reason Reason, about *target, pace time.Time) turn {
	if err := sleepUntil(c.req.Context(), pace); err != nil {
		c.emit(Event{Kind: EventGiveUp, Attempt: o.a.n, Status: status(o.resp), Err: err, Reason: ctxReason(err)}, about)
		o.a.discard(o.resp)
		o.resp = nil
		return turn{err: fmt.Errorf("httpretry: %w", err)}
	}
	resp, err := c.giveUp(*o, reason, about)
	o.resp = nil // the caller's now
	return turn{resp: resp, err: err}
}

// paceEnd is when a give-up for reason at about's origin, decided at now,
// returns (rule 11): zero unless the reason is the hold's or the budget's
// and the origin is down. From the decision of the resend given up (h's,
// or now), it waits that resend's wait, then one backoff draw per resend
// left, within the wait budget and the policy's Deadline.
func (c *call) paceEnd(reason Reason, about *target, now time.Time, h *held, wait time.Duration) time.Time {
	if reason != ReasonHold && reason != ReasonBudget || about.rec == nil || !about.rec.down() {
		return time.Time{}
	}
	from, left := now, c.maxRetries-c.drawn
	if h != nil {
		from = h.decided
	} else {
		wait = c.p.backoff.Delay(c.drawn+1, c.rng)
		if ra := about.raUntil.Sub(now); ra > wait {
			wait = ra
		}
		left--
	}
	for n := c.maxRetries - left + 1; n <= c.maxRetries; n++ {
		wait += c.p.backoff.Delay(n, c.rng)
	}
	if c.waitLeft >= 0 {
		wait = min(wait, c.waitLeft)
	}
	end := from.Add(wait)
	if !c.policyDeadline.IsZero() && end.After(c.policyDeadline) {
		end = c.policyDeadline
	}
	return end
}

// mayPark reports whether a request whose failed outcome o is not resent
// for reason at tg's origin parks there at now (rule 6): it has room (a
// deadline not passed), MaxRetries of at least 1 and a body it can send
// again, and the hold gave its resend up, or the origin is down and the
// budget refused it or its resends or wait budget are spent. again: its
// probe or release failed, and it parks even on a 429.
func (c *call) mayPark(o *outcome, reason Reason, tg *target, now time.Time, again bool) bool {
	switch {
	case tg.rec == nil || !tg.budgeted || c.nested || c.maxRetries < 1:
		return false
	case c.deadline.IsZero() || !now.Before(c.deadline):
		return false
	case !c.resendable || !c.replayable(c.req) || tg.rec.budget.loadParams().hold == 0:
		return false
	case tg.raTooLong: // the origin asked for more than MaxRetryAfter
		return false
	case c.uploading(): // the failed attempt still reads the caller's body
		return false
	case again:
		return true
	case status(o.resp) == http.StatusTooManyRequests:
		return false
	}
	switch reason {
	case ReasonHold:
		return true
	case ReasonBudget, ReasonExhausted, ReasonWaitBudget:
		return tg.rec.down()
	}
	return false
}

// park parks the request at c.pk's origin, its last response held (see
// hold), until it probes or is released, and returns that attempt's
// outcome (again true). It returns nothing at all when the parking is
// closed, for stop to end the request; otherwise the request's end: at the
// policy's Deadline its last response, at its context's end that error,
// and when an arrival evicts it, the end it gave up for, at its pace.
func (c *call) park(o *outcome, again bool) (turn, bool) {
	pk := &parker{wake: make(chan wake, 1)}
	if !c.pk.rec.park(pk, again, time.Now()) {
		return turn{}, false
	}
	return c.parked(o, pk), true
}

// parked waits, parked as pk, and goes on as park says.
func (c *call) parked(o *outcome, pk *parker) turn {
	if o.resp != nil {
		if _, ok := hold(o.resp); !ok {
			o.resp, o.err = nil, errAnswerLost
		}
	}
	w, err := c.waitParked(pk)
	switch {
	case err != nil:
		c.emit(Event{Kind: EventGiveUp, Attempt: o.a.n, Err: err, Reason: ctxReason(err)}, o.a.tg)
		o.a.discard(o.resp)
		o.resp = nil
		return turn{err: fmt.Errorf("httpretry: %w", err)}
	case w == 0:
		resp, err := c.giveUp(*o, ReasonDeadline, o.a.tg)
		o.resp = nil // the caller's now
		return turn{resp: resp, err: err}
	case w == wakeEvict:
		c.pk.evicted = true
		c.pk.res.refund()
		c.pk.res = reservation{}
		return c.endPaced(o, c.pk.reason, c.pk.tg, c.pk.pace)
	}
	// Woken as the deadline came, or to an attempt whose Retry-After would
	// keep it past the deadline.
	if !c.deadline.IsZero() && (!time.Now().Before(c.deadline) || !c.pk.tg.raUntil.Before(c.deadline)) {
		resp, err := c.giveUp(*o, ReasonDeadline, o.a.tg)
		o.resp = nil
		return turn{resp: resp, err: err}
	}
	c.drop(*o) // the probe's or release's outcome is the last one now
	o.resp = nil
	if err := sleepUntil(c.req.Context(), c.pk.tg.raUntil); err != nil {
		c.emit(Event{Kind: EventGiveUp, Attempt: o.a.n, Err: err, Reason: ctxReason(err)}, o.a.tg)
		return turn{err: fmt.Errorf("httpretry: %w", err)}
	}
	next, reason := c.sendParked(w)
	if reason != 0 {
		resp, err := c.giveUp(*o, reason, o.a.tg)
		return turn{resp: resp, err: err}
	}
	return turn{next: next, again: true}
}

// waitParked waits until pk is woken, or until the policy's Deadline
// (0, nil) or the context's end (its error), when it leaves the queue.
func (c *call) waitParked(pk *parker) (wake, error) {
	var at <-chan time.Time
	if !c.policyDeadline.IsZero() {
		t := time.NewTimer(time.Until(c.policyDeadline))
		defer t.Stop()
		at = t.C
	}
	var err error
	select {
	case w := <-pk.wake:
		return w, nil
	case <-at:
	case <-c.req.Context().Done():
		err = c.req.Context().Err()
	}
	if !c.pk.rec.unpark(pk) {
		if w := <-pk.wake; w == wakeEvict && err == nil {
			return w, nil
		}
	}
	return 0, err
}

// sendParked sends the probe or released resend w asks for to the
// parked request's origin: never hedged, drawing on no resend of
// MaxRetries. A release spends the request's reservation, or is charged
// in the window without asking. The reason is why it was not sent: the
// request's context or deadline ended while the observers were told, or
// its body can no longer be replayed.
func (c *call) sendParked(w wake) (outcome, Reason) {
	tg := c.pk.tg
	// Told before it is paid for and its body taken, so that an observer
	// that panics leaves no charge and no reader of the caller's body; an
	// observer that took the time leaves it unsent.
	c.emit(Event{Kind: EventRetry, Attempt: c.sent}, tg)
	if err := c.req.Context().Err(); err != nil {
		return outcome{}, ctxReason(err)
	}
	if c.crosses(0) {
		return outcome{}, ReasonDeadline
	}
	body, reason := c.copyBody(c.req) // a recording may have run past its limit since
	if reason != 0 {
		return outcome{}, reason
	}
	if w == wakeRelease {
		if c.pk.res.b != nil {
			c.pk.res = reservation{}
		} else if b := c.budgetOf(tg); b != nil {
			b.chargeAt(time.Now())
		}
	}
	a, r := c.newAttempt(c.sent+1, tg, body, false)
	c.sent = a.n
	resp, err := c.do(a, r)
	o := c.judge(a, resp, err, c.clock(resp))
	o.parkTry = true
	return o, 0
}

// leavePark settles a request that parked as it returns: its reservation
// is given back, and unless an arrival evicted it, its end grants the
// origin a token (rule 7).
func (c *call) leavePark() {
	if c.pk.rec == nil {
		return
	}
	c.pk.res.refund()
	if !c.pk.evicted {
		c.pk.rec.grant(time.Now())
	}
}

// afterHeld waits out held resend p after failed outcome o (see
// awaitHeld): ok when the resend goes; otherwise where the loop goes, the
// request stopped with the hold's reason, or its context's error.
func (c *call) afterHeld(o *outcome, next *pending, p plan) (turn, bool) {
	reason, err := c.awaitHeld(o, next, p)
	switch {
	case err != nil:
		next.release()
		c.emit(Event{Kind: EventGiveUp, Attempt: o.a.n, Status: status(o.resp), Err: err, Reason: reason}, o.a.tg)
		o.a.discard(o.resp)
		return turn{err: fmt.Errorf("httpretry: %w", err)}, false
	case reason == 0:
		return turn{}, true
	}
	res := next.res
	*next = pending{}
	about := o.a.tg
	if reason == ReasonHold {
		about = &c.targets[p.to] // the held origin
	}
	return c.stop(o, reason, about, res, p.held, p.wait), false
}

// sleepUntil waits until t (zero or past: not at all), in ctx; the
// context's end returns its error at once. A wait that would reach the
// context's deadline waits for the context: its end comes first.
func sleepUntil(ctx context.Context, t time.Time) error {
	d := time.Until(t)
	if t.IsZero() || d <= 0 {
		return nil
	}
	if end, ok := ctx.Deadline(); ok && !t.Before(end) {
		<-ctx.Done()
		return ctx.Err()
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

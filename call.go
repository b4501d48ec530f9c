package httpretry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"time"
)

// call is the state of one request across its attempts.
type call struct {
	t          *RetryTransport
	req        *http.Request // the caller's, never modified
	p          *hostPolicy
	maxRetries int
	// targets are the candidates: the request's own origin first, then
	// its usable fallbacks; one holds the own origin when there are none.
	targets []target
	one     [1]target
	ring    int            // where the next resend goes round targets
	answer  *http.Response // with fallbacks: the latest failed answer, kept in memory
	first   attempt        // attempt 1, held here to save it an allocation
	// reserved is the budget charge of the latest attempt taken.
	reserved reservation

	sent           int           // attempts sent, hedged copies included
	drawn          int           // attempts drawn on the pool of maxRetries
	resendable     bool          // the method or a key makes a resend safe
	demoting       bool          // Demote may reorder the candidates, and counts their failures
	nested         bool          // req is an outer httpretry's resend: see fromOuterResend
	hedged         bool          // attempts are hedged: see hedges
	header         http.Header   // req.Header plus an added idempotency key; nil: req.Header
	body           *replayBody   // nil: no body, or GetBody replays it
	waitLeft       time.Duration // what is left of the wait budget; negative: unbounded
	policyDeadline time.Time     // zero: none
	deadline       time.Time     // the earlier of policyDeadline and the context's; zero: none
	rng            *rand.Rand    // for the waits; nil: the shared source (tests fix it)
}

// outcome is what one attempt came back with: a response or an error, and
// whether that is a failure worth another attempt, judged once.
type outcome struct {
	a       *attempt
	resp    *http.Response
	err     error
	failure bool
}

// judge makes an outcome of what attempt a came back with.
func (c *call) judge(a *attempt, resp *http.Response, err error) outcome {
	if c.p.retryIf != nil {
		defer a.releaseOnPanic(resp)
	}
	o := outcome{a, resp, err, c.failed(resp, err)}
	c.demoteVerdict(o)
	return o
}

// releaseOnPanic, deferred, discards resp and ends attempt a if a callback
// of the caller's (RetryIf, an observer) panics, so that no connection or
// goroutine outlives the panic, which then goes on.
func (a *attempt) releaseOnPanic(resp *http.Response) {
	if v := recover(); v != nil {
		if resp != nil {
			resp.Body.Close()
		}
		if a != nil {
			a.end()
		}
		panic(v)
	}
}

// sendsAsIs reports whether the first attempt of r can be r itself: no
// body to record, no context of its own (no timer, no hedge) and no header
// to add. A request that is not resendable needs no trace either, without a
// timer: whether it left is told by its error (see neverSent).
func sendsAsIs(r *http.Request, p *hostPolicy) bool {
	return p.untimed &&
		(r.Body == nil || r.Body == http.NoBody || r.GetBody != nil) &&
		(p.autoKeyHeader == "" || resendable(r, p.idemHeaders))
}

// newCall sets up what the attempts after the first need; start is when
// the first attempt was sent.
//
// The candidates are set last, since whether the request may probe a
// demoted origin depends on its body; pinned keeps the own origin first.
func newCall(t *RetryTransport, r *http.Request, own origin, p *hostPolicy, fallbacks []origin, budget *Budget, maxRetries int, start time.Time, pinned bool) *call {
	c := &call{t: t, req: r, p: p, maxRetries: maxRetries, sent: 1}
	c.resendable = resendable(r, p.idemHeaders)
	if !c.resendable && keyable(r.Method) && p.autoKeyHeader != "" {
		c.header = r.Header.Clone()
		if c.header == nil {
			c.header = make(http.Header, 1)
		}
		c.header.Set(p.autoKeyHeader, newIdempotencyKey())
		c.resendable = true
	}
	if r.Body != nil && r.Body != http.NoBody && r.GetBody == nil {
		limit := p.maxReplay
		if !c.resendable {
			// It may be resent only if it never left: count, don't keep.
			limit = 0
		}
		c.body = newReplayBody(r.Body, limit, r.ContentLength)
	}
	c.setTargets(fallbacks, target{scheme: own.scheme, host: own.host, budget: budget}, pinned)
	c.first.n, c.first.tg = 1, &c.targets[0] // as sent by the fast path
	c.hedged = c.hedges()
	c.waitLeft = p.waitBudget
	if p.deadline > 0 {
		c.policyDeadline = start.Add(p.deadline)
	}
	c.deadline = c.policyDeadline
	if d, ok := r.Context().Deadline(); ok && (c.deadline.IsZero() || d.Before(c.deadline)) {
		c.deadline = d
	}
	return c
}

func (c *call) firstBody() io.ReadCloser {
	if c.body != nil {
		return c.body.reader() // a fresh body is always replayable
	}
	return c.req.Body
}

// loop judges each outcome and resends while the checks allow it.
func (c *call) loop(o outcome) (*http.Response, error) {
	if c.body != nil {
		defer c.body.finish()
	}
	if c.demoting {
		defer c.releaseProbes()
	}
	// An observer that panics leaves the outcome it was told of released.
	defer func() {
		if v := recover(); v != nil {
			if o.a != nil {
				o.a.discard(o.resp)
			}
			panic(v)
		}
	}()
	for {
		if !o.failure {
			if o.err != nil {
				return nil, fmt.Errorf("httpretry: %w", o.err)
			}
			return o.a.deliver(o.resp), nil
		}
		now := c.clock(o.resp)
		o.a.tg.noteRetryAfter(o.resp, now, c.p.maxRetryAfter)
		reason := c.verdict(o)
		var body io.ReadCloser
		if reason == 0 {
			body, reason = c.nextBody(&o)
		}
		var (
			tg   *target
			wait time.Duration
			kind EventKind
		)
		if reason == 0 {
			if tg, wait, kind, reason = c.route(now, drainBound(o.resp)); reason != 0 {
				closeBody(body)
			}
		}
		if reason != 0 {
			return c.giveUp(o, reason)
		}
		if c.observed(kind) {
			c.emit(Event{Kind: kind, Attempt: o.a.n, Status: status(o.resp), Err: o.err, Delay: wait}, tg)
		}
		st := status(o.resp)
		c.discard(o)
		o.resp = nil
		if reason, err := c.sleep(wait); err != nil {
			c.reserved.refund()
			closeBody(body)
			c.emit(Event{Kind: EventGiveUp, Attempt: o.a.n, Status: st, Err: err, Reason: reason}, o.a.tg)
			return nil, err
		}
		o = c.round(c.sent+1, tg, body)
	}
}

// clock is the instant the decisions after a failure with resp are taken
// at, or the zero time when none of them depends on it: no Retry-After,
// deadline or budget. On a virtual machine's clock (kvm-clock) a read
// costs about 50 ns, an eighth of what a resend adds to its two calls.
func (c *call) clock(resp *http.Response) time.Time {
	if !c.deadline.IsZero() || resp != nil && resp.Header["Retry-After"] != nil {
		return time.Now()
	}
	for i := range c.targets {
		if tg := &c.targets[i]; tg.budget != nil || !tg.raUntil.IsZero() {
			return time.Now()
		}
	}
	return time.Time{}
}

// sleep waits d before the next attempt. It fails at once if the wait
// would cross the deadline, the time taken since the wait was decided
// (draining, observers) included, and early if the context ends first.
func (c *call) sleep(d time.Duration) (Reason, error) {
	if !c.deadline.IsZero() && !time.Now().Add(d).Before(c.deadline) {
		return ReasonDeadline, fmt.Errorf("httpretry: %s after %d attempt(s): the wait of %v would cross it: %w",
			ReasonDeadline, c.sent, d, context.DeadlineExceeded)
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

// discard drops a failed outcome's response. With fallbacks, a short one
// is kept in memory first: an answer beats an error, so a request that
// ends on a transport error returns the latest answer any origin gave.
func (c *call) discard(o outcome) {
	if o.resp != nil && len(c.targets) > 1 && keep(o.resp) {
		o.a.end()
		c.answer = o.resp
		return
	}
	o.a.discard(o.resp)
}

// giveUp ends the loop on a failed outcome that is not resent: the caller
// gets its response, body intact, or the latest answer kept, or its error.
func (c *call) giveUp(o outcome, reason Reason) (*http.Response, error) {
	c.emit(Event{Kind: EventGiveUp, Attempt: o.a.n, Status: status(o.resp), Err: o.err, Reason: reason}, o.a.tg)
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

// observed reports whether anyone is told of events, so that a resend
// need not build one for nobody.
func (c *call) observed(kind EventKind) bool {
	return len(c.t.observers) > 0 && c.t.observers.want(c.req.Context(), kind)
}

// emit tells the observers of e, which concerns an attempt to tg.
func (c *call) emit(e Event, tg *target) {
	if !c.observed(e.Kind) {
		return
	}
	e.Request = c.req
	e.Origin = tg.origin()
	c.t.observers.emit(e)
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

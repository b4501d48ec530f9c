package httpretry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-cleanhttp"
)

// Errors of RetryTransport's own making. Errors returned by RoundTrip wrap
// their cause, so errors.Is finds it (for example context.Canceled).
var (
	// ErrAttemptTimeout ends an attempt that got no response headers within
	// PerTryTimeout; it is retried like a network failure. The error also
	// wraps context.DeadlineExceeded.
	ErrAttemptTimeout = errors.New("httpretry: attempt timed out waiting for response headers")
	// ErrDeadline ends an attempt still waiting for headers at the policy's
	// Deadline. The error also wraps context.DeadlineExceeded.
	ErrDeadline = errors.New("httpretry: request deadline exceeded")

	errNilRequest  = errors.New("httpretry: nil request")
	errNilURL      = errors.New("httpretry: nil request URL")
	errNilResponse = errors.New("httpretry: base RoundTripper returned neither a response nor an error")
)

// RetryTransport is an http.RoundTripper that resends failed requests when
// it is safe and the host's retry budget allows. Build it with New; it is
// immutable afterwards and safe for concurrent use.
type RetryTransport struct {
	base      http.RoundTripper
	policies  policyTable
	budgets   *Budgets
	observers observers
}

var _ http.RoundTripper = (*RetryTransport)(nil)

// New returns a RetryTransport sending through base, or through
// cleanhttp.DefaultPooledTransport() when base is nil. Without WithPolicy
// every host gets DefaultPolicy(). New panics if an option holds an invalid
// policy or host, as regexp.MustCompile does: it is a programming error,
// best found at start-up.
func New(base http.RoundTripper, opts ...Option) *RetryTransport {
	c := newConfig(opts)
	return c.transport(base, c.buildPolicies())
}

// Middleware returns a constructor that wraps a base RoundTripper in a
// RetryTransport, for middleware chains. It checks opts at once and panics
// like New. Each transport it makes has its own budgets unless opts hold
// WithBudgets.
func Middleware(opts ...Option) func(http.RoundTripper) http.RoundTripper {
	c := newConfig(opts)
	policies := c.buildPolicies()
	return func(base http.RoundTripper) http.RoundTripper { return c.transport(base, policies) }
}

// transport builds a RetryTransport from resolved options.
func (c *config) transport(base http.RoundTripper, policies policyTable) *RetryTransport {
	if base == nil {
		base = cleanhttp.DefaultPooledTransport()
	}
	budgets := c.budgets
	if budgets == nil {
		budgets = NewBudgets()
	}
	return &RetryTransport{base: base, policies: policies, budgets: budgets, observers: c.observers}
}

// CloseIdleConnections closes the idle connections of the base transport, if
// it has such a method.
func (t *RetryTransport) CloseIdleConnections() {
	if c, ok := t.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// RoundTrip sends req, and resends it while the outcome is retryable and
// the policy, the request's safety and the host's budget allow. It returns
// the first response that is not retried, or the last response or error
// when it stops, with the response body unread. It never modifies req, and
// closes req.Body on every path.
func (t *RetryTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req == nil {
		return nil, errNilRequest
	}
	if req.URL == nil {
		closeBody(req.Body)
		return nil, errNilURL
	}
	p := t.policies.lookup(req.URL)
	maxRetries := p.maxRetries
	if n, ok := maxRetriesFrom(req.Context()); ok {
		maxRetries = n
	}
	if maxRetries == 0 {
		resp, err := t.base.RoundTrip(req)
		if resp == nil && err == nil {
			err = errNilResponse
		}
		return resp, err
	}

	var budget *Budget
	if !p.budget.Disabled {
		budget = t.budgets.For(req.URL.Host, p.budget)
		budget.Record()
	}
	if sendsAsIs(req, p) {
		// The fast path: the caller's own request goes out untouched, and a
		// first answer that is not retried costs nothing more.
		resp, err := t.base.RoundTrip(req)
		if err == nil && resp != nil && !p.retryOn.has(resp.StatusCode) {
			return resp, nil
		}
		// No Deadline on this path, so the start time is not needed.
		c := newCall(t, req, p, budget, maxRetries, time.Time{})
		return c.loop(&attempt{n: 1}, resp, checkOutcome(resp, err))
	}
	c := newCall(t, req, p, budget, maxRetries, time.Now())
	return c.loop(c.round(1, c.firstBody()))
}

// call is the state of one request across its attempts.
type call struct {
	t          *RetryTransport
	req        *http.Request // the caller's, never modified
	p          *hostPolicy
	budget     *Budget // nil when the budget is disabled
	maxRetries int

	sent           int           // attempts sent, hedged copies included
	resendable     bool          // the method or a key makes a resend safe
	hedged         bool          // attempts are hedged: see hedges
	header         http.Header   // req.Header plus an added idempotency key; nil: req.Header
	body           *replayBody   // nil: no body, or GetBody replays it
	waitLeft       time.Duration // what is left of the wait budget; negative: unbounded
	policyDeadline time.Time     // zero: none
	deadline       time.Time     // the earlier of policyDeadline and the context's; zero: none
}

// sendsAsIs reports whether the first attempt of r can be r itself: no
// body to record, no context of its own (no timer, no trace, no hedge) and
// no header to add.
func sendsAsIs(r *http.Request, p *hostPolicy) bool {
	return p.untimed &&
		(r.Body == nil || r.Body == http.NoBody || r.GetBody != nil) &&
		resendable(r, p.idemHeaders)
}

// newCall sets up what the attempts after the first need; start is when
// the first attempt was sent.
func newCall(t *RetryTransport, r *http.Request, p *hostPolicy, budget *Budget, maxRetries int, start time.Time) *call {
	c := &call{t: t, req: r, p: p, budget: budget, maxRetries: maxRetries, sent: 1}
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

// nextBody returns the body of a resend, or false if it cannot be had.
func (c *call) nextBody() (io.ReadCloser, bool) {
	r := c.req
	switch {
	case c.body != nil:
		if rr := c.body.reader(); rr != nil {
			return rr, true
		}
		return nil, false
	case r.Body == nil || r.Body == http.NoBody:
		return r.Body, true
	}
	b, err := r.GetBody()
	if err != nil {
		return nil, false
	}
	if b == nil {
		b = http.NoBody
	}
	return b, true
}

// attempt is one sending of the request.
type attempt struct {
	n          int
	cancel     context.CancelFunc // nil: the attempt used the caller's context
	timed      bool               // a timer bounds the wait for headers
	timeout    time.Duration      // after which the timer fires
	fired      atomic.Bool        // the attempt's timer ended it before headers
	byDeadline bool               // the timer was the policy's Deadline
	traced     bool               // gotConn is tracked
	gotConn    atomic.Bool
}

// send makes attempt n with body.
func (c *call) send(n int, body io.ReadCloser) (*attempt, *http.Response, error) {
	a, r := c.newAttempt(n, body)
	resp, err := c.do(a, r)
	return a, resp, err
}

// newAttempt prepares attempt n with body. The attempt gets a context of
// its own when a timer bounds it, when it may have to be canceled as a
// losing hedge, or when only a trace can tell whether it reached the wire.
func (c *call) newAttempt(n int, body io.ReadCloser) (*attempt, *http.Request) {
	a := &attempt{n: n}
	r := c.req
	ctx := r.Context()
	if c.p.perTry > 0 {
		a.timeout, a.timed = c.p.perTry, true
	}
	if !c.policyDeadline.IsZero() {
		if left := time.Until(c.policyDeadline); !a.timed || left < a.timeout {
			a.timeout, a.timed, a.byDeadline = left, true, true
		}
	}
	if a.timed || !c.resendable || c.hedged {
		ctx, a.cancel = context.WithCancel(ctx)
		if !c.resendable {
			a.traced = true
			ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
				GotConn: func(httptrace.GotConnInfo) { a.gotConn.Store(true) },
			})
		}
	}
	if a.cancel != nil || n > 1 || c.body != nil || c.header != nil {
		r = r.WithContext(ctx)
		r.Body = body
		if c.header != nil {
			r.Header = c.header
		}
	}
	return a, r
}

// do sends r for attempt a, bounded by a's timer if it has one.
func (c *call) do(a *attempt, r *http.Request) (*http.Response, error) {
	var timer *time.Timer
	if a.timed {
		cancel := a.cancel
		timer = time.AfterFunc(a.timeout, func() {
			a.fired.Store(true)
			cancel()
		})
	}
	resp, err := c.t.base.RoundTrip(r)
	if timer != nil && !timer.Stop() {
		a.fired.Store(true)
		if resp != nil {
			discard(resp)
			resp = nil
		}
		if a.byDeadline {
			err = fmt.Errorf("%w: %w", ErrDeadline, context.DeadlineExceeded)
		} else {
			err = fmt.Errorf("%w (%v): %w", ErrAttemptTimeout, c.p.perTry, context.DeadlineExceeded)
		}
	}
	return resp, checkOutcome(resp, err)
}

// checkOutcome holds the base to the RoundTripper contract: exactly one of
// a response and an error.
func checkOutcome(resp *http.Response, err error) error {
	if err != nil && resp != nil {
		discard(resp)
	}
	if err == nil && resp == nil {
		return errNilResponse
	}
	return err
}

// loop decides after each attempt whether to resend, and resends.
func (c *call) loop(a *attempt, resp *http.Response, err error) (*http.Response, error) {
	if c.body != nil {
		defer c.body.finish()
	}
	for {
		if err == nil && !c.p.retryOn.has(resp.StatusCode) {
			return a.deliver(resp), nil
		}
		wait, body, reason := c.decide(a, resp, err)
		if reason != 0 {
			c.emit(Event{Kind: EventGiveUp, Attempt: a.n, Status: status(resp), Err: err, Reason: reason})
			if resp != nil {
				return a.deliver(resp), nil
			}
			a.end()
			return nil, c.giveUpError(reason, a.n, err)
		}
		c.emit(Event{Kind: EventRetry, Attempt: a.n, Status: status(resp), Err: err, Delay: wait})
		a.discard(resp)
		if err := c.sleep(wait); err != nil {
			closeBody(body)
			reason := ReasonCanceled
			if errors.Is(err, context.DeadlineExceeded) {
				reason = ReasonDeadline
			}
			c.emit(Event{Kind: EventGiveUp, Attempt: a.n, Err: err, Reason: reason})
			return nil, err
		}
		c.sent++
		a, resp, err = c.round(c.sent, body)
	}
}

// decide runs the checks of DESIGN.md §1 in their order after a failed
// attempt. It returns the wait and the body of the resend, or the reason
// there will be none. A granted resend has been charged to the budget.
func (c *call) decide(a *attempt, resp *http.Response, err error) (time.Duration, io.ReadCloser, Reason) {
	if err != nil {
		if ctxErr := c.req.Context().Err(); ctxErr != nil {
			if errors.Is(ctxErr, context.DeadlineExceeded) {
				return 0, nil, ReasonDeadline
			}
			return 0, nil, ReasonCanceled
		}
		if a.fired.Load() && a.byDeadline {
			return 0, nil, ReasonDeadline
		}
		if c.body != nil && c.body.readErr() != nil {
			return 0, nil, ReasonBodyNotReplayable
		}
		if permanent(err) {
			return 0, nil, ReasonNotRetryable
		}
	}
	if !c.resendable && !c.neverSent(a, err) {
		return 0, nil, ReasonNotIdempotent
	}
	if c.body != nil && !c.body.replayable() {
		return 0, nil, ReasonBodyNotReplayable
	}
	if c.sent > c.maxRetries {
		return 0, nil, ReasonExhausted
	}
	now := time.Now()
	wait := c.p.backoff.Delay(c.sent, nil)
	if c.waitLeft >= 0 {
		wait = min(wait, c.waitLeft)
	}
	if resp != nil {
		if ra, ok := retryAfter(resp.Header, now); ok {
			if ra > c.p.maxRetryAfter {
				return 0, nil, ReasonRetryAfterTooLong
			}
			wait = max(wait, ra)
		}
	}
	if !c.deadline.IsZero() && !now.Add(wait).Before(c.deadline) {
		return 0, nil, ReasonDeadline
	}
	body, ok := c.nextBody()
	if !ok {
		return 0, nil, ReasonBodyNotReplayable
	}
	if c.budget != nil && !c.budget.tryReserveAt(now) {
		closeBody(body)
		return 0, nil, ReasonBudget
	}
	if c.waitLeft >= 0 {
		c.waitLeft = max(c.waitLeft-wait, 0)
	}
	return wait, body, 0
}

// neverSent reports whether attempt a provably never reached the wire: it
// failed to dial, no connection was obtained, and no body byte was read.
func (c *call) neverSent(a *attempt, err error) bool {
	return err != nil && a.traced && !a.gotConn.Load() && dialFailure(err) &&
		(c.body == nil || c.body.untouched())
}

// sleep waits d, or returns early with an error wrapping the context's if
// the context ends first.
func (c *call) sleep(d time.Duration) error {
	ctx := c.req.Context()
	if d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
			return nil
		case <-ctx.Done():
		}
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("httpretry: context ended while waiting to resend: %w", err)
	}
	return nil
}

func (c *call) giveUpError(reason Reason, attempts int, err error) error {
	if ctxErr := c.req.Context().Err(); ctxErr != nil && !errors.Is(err, ctxErr) {
		return fmt.Errorf("httpretry: %s after %d attempt(s): %w: %w", reason, attempts, err, ctxErr)
	}
	return fmt.Errorf("httpretry: %s after %d attempt(s): %w", reason, attempts, err)
}

func (c *call) emit(e Event) {
	if len(c.t.observers) == 0 {
		return
	}
	e.Request = c.req
	c.t.observers.emit(e)
}

// deliver hands resp to the caller. An attempt with a context of its own
// keeps it until the caller closes the body, as http.Client does with its
// timeout; a 101 response is returned untouched, its context left alone.
func (a *attempt) deliver(resp *http.Response) *http.Response {
	if a.cancel == nil || resp.StatusCode == http.StatusSwitchingProtocols {
		return resp
	}
	if resp.Body == nil || resp.Body == http.NoBody {
		a.cancel()
		return resp
	}
	resp.Body = &cancelOnClose{ReadCloser: resp.Body, cancel: a.cancel}
	return resp
}

// end releases the attempt's context, once its response is discarded.
func (a *attempt) end() {
	if a.cancel != nil {
		a.cancel()
	}
}

// discard drains and closes resp, if any, and ends the attempt.
func (a *attempt) discard(resp *http.Response) {
	if resp != nil {
		discard(resp)
	}
	a.end()
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

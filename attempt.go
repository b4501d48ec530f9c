package httpretry

import (
	"context"
	"io"
	"net/http"
	"net/http/httptrace"
	"sync/atomic"
	"time"

	"github.com/httpretry/httpretry/internal/bodyrec"
)

// attempt is one sending of the request.
type attempt struct {
	n          int
	tg         *target            // where it went
	cancel     context.CancelFunc // nil: the attempt used the caller's context
	timed      bool               // a timer bounds the wait for headers
	timeout    time.Duration      // after which the timer fires
	fired      atomic.Bool        // the attempt's timer ended it before headers
	byDeadline bool               // the timer was the policy's Deadline
	// start is when the attempt was made, read only when the policy's
	// Deadline bounds it or a learned hedge delay times it; took is how
	// long it took to come back, and received says its round received
	// its outcome (see hedgedRound.learn).
	start    time.Time
	took     time.Duration
	received bool
	getConn  atomic.Bool // the trace saw the transport look for a connection
	gotConn  atomic.Bool // and find one
	// probes says the attempt is a hedged round's probe of a demoted
	// origin, which runs on to its own verdict when another attempt wins
	// (see hedgedRound.cancelLosers): its context is cut from the
	// caller's only until then, by detach, which reports whether the
	// caller's had not ended first. alone is then its candidate, with
	// the claim, apart from the request's.
	probes bool
	detach func() bool
	alone  *target
	// rec is the record of the origin the attempt went to, and counted
	// says its start was counted in flight there (see outage.started),
	// until its outcome or its end settles it.
	rec     *originRecord
	counted atomic.Bool
	// ctx is the attempt's own context, which tells AttemptFromContext
	// its number; it lives inside the attempt so that it costs no
	// allocation of its own.
	ctx attemptContext
}

// newAttempt prepares attempt n to tg with body; probes says it is a
// hedged round's probe of tg. The attempt gets a context of its own when
// a timer bounds it or when it may have to be canceled as a losing hedge.
// A probe's keeps the caller's values but ends with the caller's only
// until it is detached. A request that may be resent only if it never
// reached the wire is traced when a timer bounds it: a timer that fires
// during the dial leaves an error that does not say so, while a refused
// dial or a failed lookup says so by its error. The trace costs about
// 1 KB and 9 allocations, so it is never installed otherwise.
func (c *call) newAttempt(n int, tg *target, body io.ReadCloser, probes bool) (*attempt, *http.Request) {
	a, slot := c.attemptFor(n)
	a.n, a.tg, a.probes = n, tg, probes
	if !c.policyDeadline.IsZero() || c.learns() {
		a.start = time.Now() // one read for both, before the goroutine that reads it
	}
	c.bound(a)
	r := c.req
	ctx := c.attemptCtx(a, probes)
	// Attempt 1 goes to a fallback when demotion put one first: it too
	// needs its own request, with the fallback's URL.
	if a.cancel != nil || n > 1 || tg.moved || c.body != nil || c.header != nil || c.nested || c.marks {
		a.ctx = attemptContext{ctx, n}
		if slot != nil {
			// Copied out of a clone that stays on the stack.
			*slot = *r.WithContext(&a.ctx)
			r = slot
		} else {
			r = r.WithContext(&a.ctx)
		}
		c.lent = c.lent || a == &c.first
		r.Body = body
		if c.header != nil {
			r.Header = c.header
		}
		if tg.moved {
			u := *r.URL
			u.Scheme, u.Host = tg.scheme, tg.host
			r.URL = &u
			if r.Host == c.req.URL.Host {
				r.Host = "" // the candidate's, unless the caller chose another
			}
		}
	}
	return a, r
}

// attemptCtx is the context attempt a is sent with: the request's own
// when nothing may cut the attempt alone; a cancellable one when a timer
// or a hedged round may; for a probe, one that follows the caller only
// until its round is won (see settleProbes). A timed attempt of a request
// that may be resent only if it never left also traces its dial.
func (c *call) attemptCtx(a *attempt, probes bool) context.Context {
	ctx := c.req.Context()
	switch {
	case probes:
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(context.WithoutCancel(ctx))
		stop := context.AfterFunc(c.req.Context(), cancel)
		a.cancel = func() { stop(); cancel() }
		a.detach = stop
	case a.timed || c.hedged:
		ctx, a.cancel = context.WithCancel(ctx)
		if a.timed && !c.resendable {
			ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
				GetConn: func(string) { a.getConn.Store(true) },
				GotConn: func(httptrace.GotConnInfo) { a.gotConn.Store(true) },
			})
		}
	}
	return ctx
}

// attemptFor is where attempt n lives, and where its own request does if
// it needs one: attempt 1 in the call, with no room for a request (it is
// usually the caller's); any later one beside its request, in one
// allocation, since a later attempt always needs a request of its own
// (measured with BenchmarkResend, the one allocation less took a resend
// from 1.47× to 1.40× its two bare calls). An attempt is never reused for
// the next: its context, held inside it, may still be read by the base
// transport's goroutines after its response was discarded.
func (c *call) attemptFor(n int) (*attempt, *http.Request) {
	if n == 1 {
		return &c.first, nil
	}
	s := new(sending)
	return &s.attempt, &s.req
}

// sending is an attempt after the first and the request it sends.
type sending struct {
	attempt
	req http.Request
}

// bound sets the timer of attempt a: PerTryTimeout, or what is left of
// the policy's Deadline when that comes first. Without PerTryTimeout, a
// probe that may run on after its request is bounded by the length of
// the demotion it probes (DESIGN point 23): a black-holed origin is
// demoted again when the bound cuts it.
func (c *call) bound(a *attempt) {
	switch {
	case c.p.perTry > 0:
		a.timeout, a.timed = c.p.perTry, true
	case a.probes:
		a.timeout, a.timed = a.tg.rec.demotion.Lasted(a.tg.probe, c.p.demote.Base), true
	}
	if !c.policyDeadline.IsZero() {
		if left := c.policyDeadline.Sub(a.start); !a.timed || left < a.timeout {
			a.timeout, a.timed, a.byDeadline = left, true, true
		}
	}
}

// do sends r for attempt a, bounded by a's timer if it has one. It returns
// a response or an error, never both.
func (c *call) do(a *attempt, r *http.Request) (*http.Response, error) {
	var timer *time.Timer
	if a.timed {
		cancel := a.cancel
		timer = time.AfterFunc(a.timeout, func() {
			a.fired.Store(true)
			cancel()
		})
	}
	c.starting(a)
	resp, err := c.t.base.RoundTrip(r)
	if c.learns() {
		a.took = time.Since(a.start)
	}
	if timer != nil && !timer.Stop() {
		a.fired.Store(true)
		if resp != nil {
			discard(resp)
			resp = nil
		}
		if a.byDeadline {
			err = &attemptTimeout{sentinel: ErrDeadline}
		} else {
			err = &attemptTimeout{sentinel: ErrAttemptTimeout, after: a.timeout}
		}
	}
	if resp, err = checkOutcome(resp, err); err == nil && c.p.sized(resp) && !c.noPrefetch &&
		c.p.prefetchable(c.req, resp, c.resendable, c.upgrade) {
		if err = c.readAhead(r.Context(), resp); err != nil {
			resp = nil
		}
	}
	return resp, err
}

// readAhead reads resp whole (see prefetch), within ctx, the attempt's
// context, and the policy's Deadline.
func (c *call) readAhead(ctx context.Context, resp *http.Response) error {
	if !c.policyDeadline.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, c.policyDeadline)
		defer cancel()
	}
	return prefetch(ctx, resp, c.p.resume.idle)
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

// deliver hands resp to the caller. An attempt with a context of its own
// keeps it until the caller closes the body, as http.Client does with its
// timeout. A 101 response is returned untouched and its context released
// at once: the upgraded connection belongs to the caller now, and
// http.Transport no longer watches the request's context.
func (a *attempt) deliver(resp *http.Response) *http.Response {
	if a.cancel == nil {
		return resp
	}
	if resp.Body == nil || resp.Body == http.NoBody || resp.StatusCode == http.StatusSwitchingProtocols {
		a.cancel()
		return resp
	}
	resp.Body = &cancelOnClose{ReadCloser: resp.Body, cancel: a.cancel}
	return resp
}

// end releases the attempt's context, once its response is discarded. An
// attempt ended without a verdict (a losing copy, one the caller ended)
// leaves its origin's in-flight count with no word on its streak.
func (a *attempt) end() {
	if a.cancel != nil {
		a.cancel()
	}
	if a.counted.CompareAndSwap(true, false) {
		a.rec.settle(true, markNone)
	}
}

// answered counts resp, an answer a's origin gave that no verdict applies
// (a resume request's range), on its streak.
func (a *attempt) answered(resp *http.Response) {
	if a.rec != nil {
		a.rec.settle(a.counted.CompareAndSwap(true, false), answerMark(resp))
	}
}

// starting counts attempt a's start at its origin (see outage.started): a
// request's first attempt at a down origin where requests are parked is
// an arrival (see originRecord.arrive).
func (c *call) starting(a *attempt) {
	var now instant
	rec := a.tg.rec
	if a.rec = rec; rec == nil || !rec.out.started(&now) {
		return
	}
	a.counted.Store(true)
	if a.n == 1 && rec.out.parked.Load() > 0 && rec.down() {
		rec.arrive(now.read())
	}
}

// discard drains and closes resp, if any, and ends the attempt.
func (a *attempt) discard(resp *http.Response) {
	if resp != nil {
		discard(resp)
	}
	a.end()
}

// neverSent reports whether a provably never reached the wire: no
// connection was obtained, because the transport failed to get one (the
// trace, if any, saw it look and not find one) or the error says the dial
// failed, and no byte of body, the request's recorder (nil: none), was
// read.
func (a *attempt) neverSent(err error, body *bodyrec.Recorder) bool {
	return err != nil && !a.gotConn.Load() &&
		(a.getConn.Load() || dialFailure(err)) &&
		(body == nil || body.Untouched())
}

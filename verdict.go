package httpretry

import (
	"net/http"
	"time"

	"github.com/httpretry/httpretry/internal/demotion"
)

// outcome is what one attempt came back with: a response or an error,
// whether that is a failure worth another attempt, and the response's
// Retry-After, each judged once (see judge). told says its verdict has
// been applied (see apply).
type outcome struct {
	a       *attempt
	resp    *http.Response
	err     error
	failure bool
	retryAfterAt
	told bool
}

// retryAfterAt is a response's Retry-After read once (see read): ra, the
// longest it carries, as of at, the instant it was judged at; hasRA is
// false when it carries none readable. at is zero when nothing depended on
// the time (see call.clock).
type retryAfterAt struct {
	ra    time.Duration
	hasRA bool
	at    time.Time
}

// read parses resp's Retry-After at now, once: every later use reads ra.
// now is the zero time only when resp has none.
func (r *retryAfterAt) read(resp *http.Response, now time.Time) {
	r.at = now
	if resp != nil && resp.Header["Retry-After"] != nil {
		r.ra, r.hasRA = retryAfter(resp.Header, now)
	}
}

// apply applies o's verdict, once (see applyTo).
func (r *route) apply(o *outcome) {
	if o.told {
		return
	}
	o.told = true
	r.applyTo(o.a.tg, o.verdict())
}

// verdict is what an outcome says of its origin, as applyTo takes it: a
// value, so that the fast path's answer, which has no attempt of its own,
// puts none on the heap.
type verdict struct {
	n, status int
	err       error
	failure   bool
	cut       bool // the policy's Deadline cut the attempt: no verdict
	// alone says the attempt was a probe that ran on after its request
	// returned: the caller's context no longer bears on it.
	alone bool
	retryAfterAt
}

func (o *outcome) verdict() verdict {
	return verdict{n: o.a.n, status: status(o.resp), err: o.err, failure: o.failure,
		cut: o.a.fired.Load() && o.a.byDeadline, retryAfterAt: o.retryAfterAt}
}

// applyTo applies verdict v of an attempt to tg: a failure's Retry-After
// is noted on the candidate, and the origin is told what v says of it when
// the request orders its candidates by demotion (see tell). It is the one
// place verdicts are applied: the loop, a hedged round and the fast path
// each come here under a guard that releases what a panicking observer
// would leave.
func (r *route) applyTo(tg *target, v verdict) {
	if v.failure {
		tg.noteRetryAfter(&v.retryAfterAt, r.p.maxRetryAfter)
	}
	if r.demoting() {
		r.tell(tg, &v)
	}
}

// noteRetryAfter remembers what v, read from a failure from tg, asks of
// the next call to tg: the strongest instruction wins, since a resend must
// never come earlier than any answer asked.
func (tg *target) noteRetryAfter(v *retryAfterAt, maxRetryAfter time.Duration) {
	switch until := v.at.Add(v.ra); {
	case !v.hasRA:
	case v.ra > maxRetryAfter:
		tg.raTooLong = true
	case until.After(tg.raUntil):
		tg.raUntil = until
	}
}

// tell tells tg's origin what v says of it: a failure counts toward its
// demotion (a failed probe demotes it again), an answer resets the count
// and restores a demoted origin. A 429 is an answer that restores nothing.
// No verdict: the caller's context ended (unless the probe ran on alone),
// the policy's Deadline cut the attempt, or RetryIf declined an error. A
// Retry-After keeps an origin already demoted demoted until then (at most
// MaxRetryAfter).
func (r *route) tell(tg *target, v *verdict) {
	if v.cut || !v.alone && r.req.Context().Err() != nil {
		return
	}
	s := &tg.rec.demotion
	tooMany := v.status == http.StatusTooManyRequests
	switch p := tg.probe; {
	case v.failure && !tooMany:
		r.failedAt(v.instant(), tg, v.n, v.status, v.err)
	case v.err != nil:
	case !p.Claimed() && !s.Active():
		// The common answer: two atomic loads, and no clock.
		s.ClearFails()
	default:
		tg.probe = demotion.Probe{}
		if s.Answered(v.instant(), p, tooMany) {
			r.emit(Event{Kind: EventRestore, Attempt: v.n, Status: v.status}, tg)
		}
	}
	if v.hasRA {
		s.Hold(v.at, v.ra, r.p.maxRetryAfter)
	}
}

// failedAt counts a failure at now of attempt n to tg, given back as
// status or err, toward its origin's demotion (a failed probe demotes it
// again), and tells of the demotion it tipped.
func (r *route) failedAt(now time.Time, tg *target, n, status int, err error) {
	p := tg.probe
	tg.probe = demotion.Probe{}
	if demoted, d := tg.rec.demotion.Failed(now, p, r.p.demote, r.rng); demoted {
		r.emit(Event{Kind: EventDemote, Attempt: n, Status: status, Err: err, Delay: d}, tg)
	}
}

// tellOvertaken tells the origin of a, the first attempt of a hedged
// round, that a copy to another origin answered before a had response
// headers: a failure. An origin that black-holes its requests, with no
// PerTryTimeout to cut them, fails no other way, and would never be
// demoted while every request paid it the hedge delay.
func (c *call) tellOvertaken(a *attempt, now time.Time) {
	if !c.demoting() || c.req.Context().Err() != nil {
		return
	}
	c.failedAt(now, a.tg, a.n, 0, errOvertaken)
}

// releaseProbes gives back the probes this request claimed and never gave
// a verdict on: it ended first (canceled, past its deadline, won by
// another candidate).
func (c *call) releaseProbes() {
	if !c.demoting() {
		return
	}
	for i := range c.targets {
		if tg := &c.targets[i]; tg.probe.Claimed() {
			tg.rec.demotion.Release(tg.probe)
			tg.probe = demotion.Probe{}
		}
	}
}

package httpretry

import (
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/httpretry/httpretry/internal/demotion"
)

// applier applies the verdicts of a request's attempts: to the candidate,
// whose Retry-After it notes, to the origin's demotion, and to the
// observers. It holds what that reads, so that the loop, a hedged round,
// the fast path and a resuming body apply a verdict the same way.
type applier struct {
	req       *http.Request // the caller's, never modified
	p         *hostPolicy
	observers observers
	rng       *rand.Rand // for the waits and demotions; nil: the shared source (tests fix it)
	// demotes says the request's candidates are ordered by their
	// demotions, and tell them of its outcomes: Demote is on and there is
	// a candidate besides the own origin.
	demotes bool
}

// applyAnswer applies the verdict of the fast path's answer resp, from
// attempt 1 to tg, as the loop applies any other (see applyTo). An observer
// that panics leaves resp closed.
func (r *applier) applyAnswer(tg *target, resp *http.Response) {
	defer closeOnPanic(resp)
	v := verdict{n: 1, status: resp.StatusCode}
	v.read(resp, clockFor(resp))
	r.applyTo(tg, v)
}

// apply applies o's verdict, once (see applyTo).
func (r *applier) apply(o *outcome) {
	if tg, v, ok := o.take(); ok {
		r.applyTo(tg, v)
	}
}

// applyTo applies verdict v of an attempt to tg: a failure's Retry-After
// is noted on the candidate, and the origin is told what v says of it when
// the request orders its candidates by demotion (see tell). It is the one
// place verdicts are applied: the loop, a hedged round and the fast path
// each come here under a guard that releases what a panicking observer
// would leave.
func (r *applier) applyTo(tg *target, v verdict) {
	if v.failure {
		tg.noteRetryAfter(&v.retryAfterAt, r.p.maxRetryAfter)
	}
	if a := v.att; a != nil && a.rec != nil {
		a.rec.settle(a.counted.CompareAndSwap(true, false), r.markOf(&v))
	}
	if r.demotes {
		r.tell(tg, &v)
	}
}

// tell tells tg's origin what v says of it: a failure counts toward its
// demotion (a failed probe demotes it again), an answer resets the count
// and restores a demoted origin. A 429 is an answer that restores nothing.
// No verdict: the caller's context ended (unless the probe ran on alone),
// the policy's Deadline cut the attempt, or RetryIf declined an error. A
// Retry-After keeps an origin already demoted demoted until then (at most
// MaxRetryAfter).
func (r *applier) tell(tg *target, v *verdict) {
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

// markOf is what verdict v says of its origin's streak: a 429, an attempt
// the caller ended or the policy's Deadline cut, and an error RetryIf
// declined say nothing; any other failure is one, and any other response
// an answer.
func (r *applier) markOf(v *verdict) mark {
	switch {
	case v.cut || !v.alone && r.req.Context().Err() != nil, v.status == http.StatusTooManyRequests:
		return markNone
	case v.failure:
		return markFailure
	case v.err != nil:
		return markNone
	}
	return markAnswer
}

// answerMark is what an answer says of its origin's streak: a 429 says
// nothing.
func answerMark(resp *http.Response) mark {
	if resp.StatusCode == http.StatusTooManyRequests {
		return markNone
	}
	return markAnswer
}

// failedAt counts a failure at now of attempt n to tg, given back as
// status or err, toward its origin's demotion (a failed probe demotes it
// again), and tells of the demotion it tipped.
func (r *applier) failedAt(now time.Time, tg *target, n, status int, err error) {
	p := tg.probe
	tg.probe = demotion.Probe{}
	if demoted, d := tg.rec.demotion.Failed(now, p, r.p.demote, r.rng); demoted {
		r.emit(Event{Kind: EventDemote, Attempt: n, Status: status, Err: err, Delay: d}, tg)
	}
}

// emit tells the observers of e, which concerns an attempt to tg. An
// event no observer wants is not completed: its Origin is a string to
// build.
func (r *applier) emit(e Event, tg *target) {
	if len(r.observers) == 0 || !r.observers.want(r.req.Context(), e.Kind) {
		return
	}
	e.Request = r.req
	e.Origin = tg.origin()
	r.observers.emit(e)
}

// tellOvertaken tells tg's origin, where attempt n went first in a
// hedged round, that a copy to another origin answered before n had
// response headers: a failure. An origin that black-holes its requests,
// with no PerTryTimeout to cut them, fails no other way, and would never
// be demoted while every request paid it the hedge delay.
func (r *applier) tellOvertaken(tg *target, n int, now time.Time) {
	if r.req.Context().Err() != nil {
		return
	}
	if tg.rec != nil {
		tg.rec.settle(false, markFailure)
	}
	if !r.demotes {
		return
	}
	r.failedAt(now, tg, n, 0, errOvertaken)
}

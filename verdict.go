package httpretry

import (
	"net/http"
	"time"
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
	// parkTry says the attempt was a parked request's probe or release:
	// if it failed, the request parks again (see parkAgain).
	parkTry bool
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
	// att is the attempt judged, nil for the fast path's answer, which
	// settles its origin's streak itself (see route.sendFast).
	att *attempt
}

// take returns o's verdict and the candidate it is about, the first time
// only: a verdict is applied once (see apply).
func (o *outcome) take() (*target, verdict, bool) {
	if o.told {
		return nil, verdict{}, false
	}
	o.told = true
	return o.a.tg, o.verdict(), true
}

func (o *outcome) verdict() verdict {
	return verdict{n: o.a.n, status: status(o.resp), err: o.err, failure: o.failure,
		cut: o.a.fired.Load() && o.a.byDeadline, retryAfterAt: o.retryAfterAt, att: o.a}
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

// instant is the instant v was judged at, read now if nothing needed it
// then.
func (v *verdict) instant() time.Time { return (*instant)(&v.at).read() }

// clockFor is the instant resp is judged at when it has a Retry-After to
// read, or the zero time.
func clockFor(resp *http.Response) time.Time { return judgedAt(hasRetryAfter(resp)) }

// hasRetryAfter reports whether resp carries a Retry-After to read.
func hasRetryAfter(resp *http.Response) bool {
	return resp != nil && resp.Header["Retry-After"] != nil
}

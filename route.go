package httpretry

import (
	"math/rand/v2"
	"net/http"
	"time"
)

// route is a request resolved once at the front door, before any attempt:
// where it goes, under which policy, with how many resends, to which
// candidates, and whether its first attempt can be the caller's own
// request. A call holds it, and so does a body that resumes.
type route struct {
	t          *RetryTransport
	req        *http.Request // the caller's, never modified
	own        origin
	p          *hostPolicy
	fallbacks  []origin
	maxRetries int
	// rec is the own origin's record in Budgets, nil when the request
	// needs none of it; budgeted says its budget is charged.
	rec      *originRecord
	budgeted bool
	moves    bool // a usable fallback: the request may go elsewhere
	nested   bool // req is an outer httpretry's attempt: see fromOuterAttempt
	marks    bool // every attempt carries its number: an httpretry is inside
	// reorder says the own origin has a demotion standing: the candidates
	// are ordered before the first attempt, which need not go to it.
	reorder bool
	// policyDeadline is the policy's Deadline from the first attempt;
	// zero: none.
	policyDeadline time.Time
	rng            *rand.Rand // for the waits and demotions; nil: the shared source (tests fix it)
}

// resolve checks req and resolves it against t's configuration. On an
// error it closes req.Body, as RoundTrip must.
func (t *RetryTransport) resolve(req *http.Request) (route, error) {
	if req == nil {
		return route{}, errNilRequest
	}
	if req.URL == nil {
		closeBody(req.Body)
		return route{}, errNilURL
	}
	own := originOf(req.URL)
	p := t.policies.lookup(own)
	r := route{t: t, req: req, own: own, p: p, maxRetries: p.maxRetries, marks: t.wrapsRetry.Load()}
	if n, ok := maxRetriesFrom(req.Context()); ok {
		r.maxRetries = n
	}
	var err error
	if r.fallbacks, err = fallbacksFor(req, p); err != nil {
		closeBody(req.Body)
		return route{}, err
	}
	// An outer httpretry's policy governs its attempts: this one makes no
	// resends of its own, and only its fallbacks and time bounds act.
	if r.nested = fromOuterAttempt(req); r.nested {
		r.maxRetries = 0
	}
	r.moves = hasUsableFallback(own, r.fallbacks)
	r.budgeted = !p.budget.Disabled
	return r, nil
}

// findRecord looks up the own origin's record, when the request charges
// its budget or may reorder its candidates, and records the request in
// its budget when its first attempt goes there. With Demote, an origin
// with a demotion standing sends the request to the slow path, where the
// candidates are reordered and the first attempt's origin records it (see
// send); any other costs one atomic load here.
func (r *route) findRecord() {
	if r.budgeted {
		r.rec = r.t.budgets.record(r.own.host)
		r.rec.budget.configure(r.p.budget)
	}
	if r.demoting() {
		if r.rec == nil {
			r.rec = r.t.budgets.record(r.own.host)
		}
		r.reorder = r.rec.demotion.standing()
	}
	if r.budgeted && !r.reorder {
		r.rec.budget.Record()
	}
}

// demoting reports whether the request's candidates are ordered by their
// demotions, and tell them of its outcomes: Demote is on and there is a
// candidate besides the own origin.
func (r *route) demoting() bool { return r.moves && r.p.demote.after > 0 }

// passes reports whether r goes out once, as it is: no resend, nowhere
// else to go, no time bound, and no httpretry inside to tell.
func (r *route) passes() bool {
	return r.maxRetries == 0 && !r.moves && r.p.untimed && !r.marks
}

// fast reports whether r's first attempt can be the caller's own request,
// untouched, so that a first answer that is not retried costs nothing
// more.
func (r *route) fast() bool {
	return !r.nested && !r.marks && !r.reorder && sendsAsIs(r.req, r.p)
}

// passThrough sends r once, as it is, holding the base to the RoundTripper
// contract and giving its error the package's prefix. Sent for an outer
// httpretry, it is still a request in the origin's budget.
func (r *route) passThrough() (*http.Response, error) {
	if r.nested && r.budgeted {
		r.t.budgets.forKey(r.own.host, r.p.budget).Record()
	}
	return passThrough(r.t.base, r.req)
}

// sendFast sends the caller's own request as the first attempt, and hands
// any outcome that is not an answer to a call.
func (r *route) sendFast() (*http.Response, error) {
	resp, err := r.t.base.RoundTrip(r.req)
	if err == nil && resp != nil && r.p.answersGuarded(resp) {
		tg := target{scheme: r.own.scheme, host: r.own.host, rec: r.rec, budgeted: r.budgeted}
		if r.demoting() {
			r.applyAnswer(&tg, resp)
		}
		r.wrapResumable(&tg, 1, 1, resp)
		return resp, nil
	}
	resp, err = checkOutcome(resp, err)
	c := newCall(r)         // no Deadline on this path: sendsAsIs said so
	defer c.releaseProbes() // claimed in newCall; a panic must not keep them
	c.targets[0].tried = true
	c.spare = true
	if resp != nil {
		o := outcome{a: &c.first, resp: resp, failure: true} // answersGuarded said so
		o.readRetryAfter(c.clock(resp))
		return c.loop(o)
	}
	return c.loop(c.judge(&c.first, nil, err, c.clock(nil)))
}

// applyAnswer applies the verdict of the fast path's answer resp, from
// attempt 1 to tg, as the loop applies any other (see apply). An observer
// that panics leaves resp closed.
func (r *route) applyAnswer(tg *target, resp *http.Response) {
	defer (*attempt)(nil).releaseOnPanic(resp)
	o := outcome{resp: resp}
	o.readRetryAfter(clockFor(resp))
	r.applyTo(tg, verdict{n: 1, status: resp.StatusCode, ra: o.ra, hasRA: o.hasRA, at: o.at})
}

// send is the slow path: a call from the first attempt on.
func (r *route) send() (*http.Response, error) {
	if r.p.deadline > 0 {
		r.policyDeadline = time.Now().Add(r.p.deadline)
	}
	c := newCall(r)
	defer c.releaseProbes()
	if c.body != nil {
		// Deferred here, not in the loop: a callback that panics in the
		// first round must leave the caller's body closed too.
		defer c.body.finish()
	}
	first := &c.targets[0]
	if b := c.budgetOf(first); r.reorder && b != nil {
		// Its first attempt is this origin's request (point 18).
		b.Record()
	}
	first.tried = true
	return c.loop(c.round(1, first, c.firstBody()))
}

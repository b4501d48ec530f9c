package httpretry

import (
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/hashicorp/go-cleanhttp"
)

// RetryTransport is an http.RoundTripper that resends failed requests when it
// is safe and the host's retry budget allows. Build it with New. It is
// immutable afterwards and safe for concurrent use. The zero RetryTransport
// behaves as New(nil) would. Every zero RetryTransport shares one such
// transport, budgets included.
type RetryTransport struct {
	base      http.RoundTripper
	policies  policyTable
	budgets   *Budgets
	observers observers
	// opaque says base may hide an httpretry (see isPlain): every
	// attempt, the first too, then carries the mark that tells it it is
	// an attempt of this one (see fromOuterAttempt).
	opaque bool
}

var _ http.RoundTripper = (*RetryTransport)(nil)

// New returns a RetryTransport sending through base. A nil base means
// cleanhttp.DefaultPooledTransport(). Without WithPolicy, every host gets
// DefaultPolicy(). New panics if an option holds an invalid policy or host, as
// regexp.MustCompile does. That is a programming error, best found at start-up.
func New(base http.RoundTripper, opts ...Option) *RetryTransport {
	c := newConfig(opts)
	return c.transport(base, c.buildPolicies())
}

// Middleware returns a constructor that wraps a base RoundTripper in a
// RetryTransport, for middleware chains. It checks opts at once and panics like
// New. Each transport it makes has its own budgets unless opts hold
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
	t := &RetryTransport{base: base, policies: policies, budgets: budgets, observers: c.observers, opaque: !isPlain(base)}
	if t.opaque {
		opaqueBuilt.Store(true)
	}
	return t
}

// isPlain reports whether base is known to send requests to the network
// and nowhere else, so that no httpretry can be inside it: an
// *http.Transport. Any other base (a RetryTransport, a middleware, a
// func) may hide one, which must know every attempt for an attempt, the
// first too, however early: a mark learned from the first resend came too
// late for the requests already under way (point 20).
func isPlain(base http.RoundTripper) bool {
	_, ok := base.(*http.Transport)
	return ok
}

// zeroTransport is what a zero RetryTransport stands for.
var zeroTransport = sync.OnceValue(func() *RetryTransport { return New(nil) })

// CloseIdleConnections closes the idle connections of the base transport, if
// it has such a method.
func (t *RetryTransport) CloseIdleConnections() {
	if t.base == nil {
		t = zeroTransport()
	}
	if c, ok := t.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// RoundTrip sends req. It resends req while the outcome is retryable and the
// policy, the request's safety and the host's budget allow. It returns the
// first response that is not retried. When it stops, it returns the last
// response or error, with the response body unread. It never modifies req, and
// closes req.Body on every path.
func (t *RetryTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.base == nil {
		return zeroTransport().RoundTrip(req)
	}
	r, err := t.resolve(req)
	switch {
	case err != nil:
		return nil, err
	case r.passes():
		return r.passThrough()
	}
	var now instant // read by the first that needs it: the fast path, usually none
	if r.findRecord(&now); r.fast() {
		return r.sendFast()
	}
	return r.send(now.read())
}

// passThrough sends req once, as it is, holding the base to the
// RoundTripper contract and giving its error the package's prefix.
func passThrough(base http.RoundTripper, req *http.Request) (*http.Response, error) {
	resp, err := checkOutcome(base.RoundTrip(req))
	if err != nil {
		err = fmt.Errorf("httpretry: %w", err)
	}
	return resp, err
}

// route is a request resolved once at the front door, before any attempt:
// where it goes, under which policy, with how many resends, to which
// candidates, and whether its first attempt can be the caller's own
// request. A call holds it; a body that resumes copies what it needs of it
// (see wrapResumable).
type route struct {
	t *RetryTransport
	applier
	own        origin
	fallbacks  []origin
	maxRetries int
	// rec is the own origin's record in Budgets, nil when the request
	// needs none of it; budgeted says its budget is charged.
	rec      *originRecord
	budgeted bool
	moves    bool // a usable fallback: the request may go elsewhere
	nested   bool // req is an outer httpretry's attempt: see fromOuterAttempt
	marks    bool // every attempt carries its number: the base is opaque
	// reorder says the own origin has a demotion standing: the candidates
	// are ordered before the first attempt, which need not go to it.
	reorder bool
	// policyDeadline is the policy's Deadline from the first attempt;
	// zero: none.
	policyDeadline time.Time
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
	r := route{t: t, applier: applier{req: req, p: p, observers: t.observers},
		own: own, maxRetries: p.maxRetries, marks: t.opaque}
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
	r.demotes = r.moves && p.demote.After > 0
	r.budgeted = !p.budget.Disabled
	return r, nil
}

// findRecord looks up the own origin's record, when the request charges
// its budget or may reorder its candidates, and records the request in
// its budget when its first attempt goes there. With Demote, an origin
// with a demotion standing sends the request to the slow path, where the
// candidates are reordered and the first attempt's origin records it (see
// send); any other costs one atomic load here. It reads now only for a
// host that is new, reloaded or idle.
func (r *route) findRecord(now *instant) {
	if r.budgeted {
		r.rec = r.t.budgets.recordAt(r.own.host, now)
		r.rec.budget.configureAt(r.p.budget, now)
	}
	if r.demotes {
		if r.rec == nil {
			r.rec = r.t.budgets.recordAt(r.own.host, now)
		}
		r.reorder = r.rec.demotion.Active()
	}
	if r.budgeted && !r.reorder {
		r.rec.budget.recordAt(now)
	}
}

// ownTarget is the request's own origin as a candidate.
func (r *route) ownTarget() target {
	return target{scheme: r.own.scheme, host: r.own.host, rec: r.rec, budgeted: r.budgeted}
}

// passes reports whether r goes out once, as it is but for the mark an
// opaque base needs: no resend, nowhere else to go, no time bound.
func (r *route) passes() bool {
	return r.maxRetries == 0 && !r.moves && r.p.untimed
}

// fast reports whether r's first attempt can be the caller's own request,
// untouched but for the mark an opaque base needs (see markFirst), so
// that a first answer that is not retried costs nothing more.
func (r *route) fast() bool {
	return !r.nested && !r.reorder && sendsAsIs(r.req, r.p)
}

// passThrough sends r once, as it is, holding the base to the RoundTripper
// contract and giving its error the package's prefix. Sent for an outer
// httpretry, it is still a request in the origin's budget, and carries
// that outer's mark already; otherwise an opaque base gets it marked, so
// that an httpretry inside makes no resends where this policy makes none.
func (r *route) passThrough() (*http.Response, error) {
	if r.nested && r.budgeted {
		var now instant
		r.t.budgets.forKeyAt(r.own.host, r.p.budget, &now).recordAt(&now)
	}
	req := r.req
	if r.marks && !r.nested {
		req = markFirst(req)
	}
	return passThrough(r.t.base, req)
}

// sendFast sends the caller's own request as the first attempt, marked
// when the base is opaque, and hands any outcome that is not an answer to
// a call.
func (r *route) sendFast() (*http.Response, error) {
	req := r.req
	if r.marks {
		req = markFirst(req)
	}
	counted := r.rec != nil && r.startedFirst()
	resp, err := r.t.base.RoundTrip(req)
	if err == nil && resp != nil && r.p.sized(resp) {
		resp, err = r.readAhead(resp)
	}
	if err == nil && resp != nil && r.p.answersGuarded(resp) {
		if r.rec != nil {
			r.rec.settle(counted, answerMark(resp)) // at a streak of 0: one atomic load
		}
		tg := r.ownTarget()
		if r.demotes {
			r.applyAnswer(&tg, resp)
		}
		r.wrapResumable(&tg, 1, 1, resp)
		return resp, nil
	}
	resp, err = checkOutcome(resp, err)
	now := judgedAt(r.demotes) // no Deadline on this path: sendsAsIs said so
	c := newCall(r, now)
	c.first.rec = r.rec
	c.first.counted.Store(counted)
	resp, err = c.afterFast(resp, err, now)
	c.recycle()
	return resp, err
}

// readAhead reads the fast path's response whole when it is eligible
// (see prefetchable): a cut is then the first attempt's error.
func (r *route) readAhead(resp *http.Response) (*http.Response, error) {
	if !r.p.prefetchable(r.req, resp, resendable(r.req, r.p.idemHeaders), upgrades(r.req)) {
		return resp, nil
	}
	if err := prefetch(r.req.Context(), resp, r.p.resume.idle); err != nil {
		return nil, err
	}
	return resp, nil
}

// startedFirst counts the start of the fast path's attempt, the request's
// first, at its origin (see call.starting).
func (r *route) startedFirst() bool {
	var now instant
	if !r.rec.out.started(&now) {
		return false
	}
	if r.rec.out.parked.Load() > 0 && r.rec.down() {
		r.rec.arrive(now.read())
	}
	return true
}

// wrapResumable gives resp, about to be handed to the caller of r from
// attempt n to tg, a body that resumes when it breaks, if resp is eligible
// (see Resume). sent is the number of attempts the request has sent, which
// the resume requests' numbers follow. Any other response is left as it
// is, at no cost but the checks.
func (r *route) wrapResumable(tg *target, n, sent int, resp *http.Response) {
	at, ok := r.p.resumable(r.req, resp, r.maxRetries)
	if !ok {
		return
	}
	via := oneOrigin{t: r.t, req: r.req, p: r.p, sent: sent, policyDeadline: r.policyDeadline,
		to: target{scheme: tg.scheme, host: tg.host, moved: tg.moved, rec: tg.rec, budgeted: tg.budgeted}}
	resp.Body = newResumeBody(via, n, at, resp)
}

// send is the slow path: a call from the first attempt on.
func (r *route) send(now time.Time) (*http.Response, error) {
	if r.p.deadline > 0 {
		r.policyDeadline = now.Add(r.p.deadline)
	}
	c := newCall(r, now)
	resp, err := c.start(now)
	c.recycle()
	return resp, err
}

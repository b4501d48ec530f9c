package httpretry

import (
	"context"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/httpretry/httpretry/internal/bodyrec"
)

// call is the state of one request across its attempts.
type call struct {
	route
	candidates
	bodies
	limits
	answer *http.Response // with fallbacks, or parked: the latest failed answer, kept in memory
	pk     parkState      // the origin the request parked at, if it did
	first  attempt        // attempt 1, held here to save it an allocation
	lent   bool           // first's context went to the base: see recycle

	sent       int         // attempts sent, hedged copies included
	resendable bool        // the method or a key makes a resend safe
	upgrade    bool        // the request asks to switch protocols: see upgrades
	hedged     bool        // attempts are hedged: see hedges
	noPrefetch bool        // a resume request's: its body is the rest of one
	header     http.Header // req.Header plus an added idempotency key; nil: req.Header
}

// sendsAsIs reports whether the first attempt of r can be r itself: no
// body to record, no context of its own (no timer, no hedge) and no header
// to add. A request a hedging policy may not resend is not hedged, and
// one that may be resent only if it never left needs no trace without a
// timer: its error tells (see neverSent).
func sendsAsIs(r *http.Request, p *hostPolicy) bool {
	if !p.untimed || hasBody(r) && r.GetBody == nil {
		return false
	}
	if p.hedge.copies() == 0 && p.autoKeyHeader == "" {
		return true // the common policy, without looking at r's headers
	}
	safe := resendable(r, p.idemHeaders)
	hedged := safe && p.hedge.copies() > 0 && !upgrades(r) // needs a context of its own
	keyed := !safe && p.autoKeyHeader != ""                // needs a header of its own
	return !hedged && !keyed
}

// callPool holds calls that nothing outside them can see any more, so
// that the common resend, a fast path's failure sent again, costs no call
// of its own: measured with BenchmarkResend, the call's allocation was
// about a third of what a resend adds to its two calls.
var callPool = sync.Pool{New: func() any { return new(call) }}

// recycle gives c back to callPool once its request has returned, unless its
// attempt 1 lent its context to the base transport, which may still read it
// (see attemptFor). Nothing else outside the call points into it: a resuming
// body copies fields of its route and target, hedged goroutines have all
// returned, and responses, bodies and headers it handed out are objects of
// their own.
func (c *call) recycle() {
	if c.lent {
		return
	}
	*c = call{}
	callPool.Put(c)
}

// newCall sets up, at now, what the attempts after the first need; now may
// be zero unless the request orders its candidates by demotion.
//
// The candidates are set last, since whether the request may probe a
// demoted origin depends on its body; the own origin stays first unless
// the route reorders.
func newCall(rt *route, now time.Time) *call {
	c := callPool.Get().(*call)
	c.route, c.sent = *rt, 1
	r, p := c.req, c.p
	c.resendable = resendable(r, p.idemHeaders)
	c.upgrade = upgrades(r)
	if !c.resendable && keyable(r.Method) && p.autoKeyHeader != "" {
		c.header = r.Header.Clone()
		if c.header == nil {
			c.header = make(http.Header, 1)
		}
		c.header.Set(p.autoKeyHeader, newIdempotencyKey())
		c.resendable = true
	}
	if hasBody(r) && r.GetBody == nil {
		limit := p.maxReplay
		if !c.resendable || c.maxRetries == 0 && !c.moves {
			// It may be resent only if it never left: count, don't keep.
			limit = 0
		}
		c.body = bodyrec.New(r.Body, limit, r.ContentLength)
	}
	c.setTargets(now)
	c.first.n, c.first.tg = 1, &c.targets[0]  // as sent by the fast path
	c.hedged = c.maxRetries > 0 && c.hedges() // a copy draws on the pool
	c.setBounds(c.req.Context(), c.p.waitBudget, c.policyDeadline)
	return c
}

// oneOrigin is what a call to one origin alone is made of, as the params
// of newCallTo: a body that resumes sends its resume requests so. Every
// other request comes through newCall.
type oneOrigin struct {
	t              *RetryTransport
	req            *http.Request // the caller's
	p              *hostPolicy
	to             target    // the origin, as the request's candidate held it
	sent           int       // the request's attempts before the call's first
	policyDeadline time.Time // zero: none
}

// newCallTo makes a call to o's origin only, under o's policy and
// Deadline, whose attempts go in ctx. It draws on no pool: what bounds its
// attempts is its caller's (Resume.Max), and each is decided by
// nextResume.
func newCallTo(o *oneOrigin, ctx context.Context) *call {
	a := applier{req: o.req.WithContext(ctx), p: o.p, observers: o.t.observers}
	c := &call{route: route{t: o.t, applier: a, policyDeadline: o.policyDeadline}, sent: o.sent, resendable: true,
		noPrefetch: true}
	c.one[0] = o.to
	c.one[0].tried = true
	c.targets = c.one[:]
	c.setBounds(c.req.Context(), c.p.waitBudget, c.policyDeadline)
	return c
}

// bodies is where each attempt's body comes from: the request's own,
// GetBody, or the recorder that keeps what the first attempt read, which
// the next attempt may have to take over from an upload still running.
// Its methods are given the caller's request, which route holds.
type bodies struct {
	body *bodyrec.Recorder // nil: no body, or GetBody replays it
}

// firstBody is the body of attempt 1.
func (bs *bodies) firstBody(r *http.Request) io.ReadCloser {
	if bs.body != nil {
		return bs.body.Reader() // a fresh body is always replayable
	}
	return r.Body
}

// uploading reports whether the failed attempt's transport is still
// uploading the recorded body: the next attempt must take it over (see
// takeOver).
func (bs *bodies) uploading() bool {
	return bs.body != nil && bs.body.Replayable() && bs.body.Busy()
}

// takeOver takes the recorded body from the upload of o's attempt (see
// Recorder.Revoke), for the attempt after it. That upload may have gone
// past the limit, and stopping it may end the connection o's response
// comes on, so the response is read beforehand (see hold), to be
// returned whole if the body turns out not to be replayable. The loop
// calls it last, once the next attempt is paid for, announced and still
// due.
func (bs *bodies) takeOver(o *outcome, r *http.Request) (io.ReadCloser, Reason) {
	if o.resp != nil {
		if _, ok := hold(o.resp); !ok {
			o.resp, o.err = nil, errBodyGone
		}
	}
	bs.body.Revoke()
	return bs.copyBody(r)
}

// copyBody returns a body for another attempt, hedged copies included.
func (bs *bodies) copyBody(r *http.Request) (io.ReadCloser, Reason) {
	switch {
	case bs.body != nil:
		if rr := bs.body.Reader(); rr != nil {
			return rr, 0
		}
		return nil, ReasonBodyNotReplayable
	case !hasBody(r):
		return r.Body, 0
	}
	b, err := r.GetBody()
	if err != nil {
		return nil, ReasonBodyNotReplayable
	}
	if b == nil {
		b = http.NoBody
	}
	return b, 0
}

// hasBody reports whether r has a body to send: neither nil nor
// http.NoBody.
func hasBody(r *http.Request) bool { return r.Body != nil && r.Body != http.NoBody }

// hedges reports whether this request's attempts are hedged: the policy
// asks for it, a resend is safe, every copy can have its own body, and
// the request does not ask to switch protocols.
func (c *call) hedges() bool {
	return c.p.hedge.copies() > 0 && c.resendable && c.replayable(c.req) && !c.upgrade
}

// learns reports whether the call's hedged rounds time their attempts for
// a learned delay (Hedge.Quantile).
func (c *call) learns() bool { return c.hedged && c.p.hedge.Quantile > 0 }

// replayable reports whether every further attempt can have its own body.
func (c *bodies) replayable(r *http.Request) bool {
	return !hasBody(r) || r.GetBody != nil || c.body != nil && c.body.Records()
}

// setTargets makes the request's candidates: its own origin, then each usable
// fallback once, with the budget of that origin's host policy. Under Demote,
// the candidates with a demotion running go last (see demoteLast), but for the
// own origin unless the route reorders: on the fast path its attempt has gone
// already. A candidate carries its record in Budgets when the request may
// reorder or learns a hedge delay. now is zero when not read yet.
func (c *call) setTargets(now time.Time) {
	at := (*instant)(&now) // read if a fallback's record is new or reloads
	own := c.ownTarget()
	c.one[0] = own
	c.targets = c.one[:]
	for _, fb := range c.fallbacks {
		if !usable(c.own, fb) || c.isCandidate(fb) {
			continue
		}
		if len(c.targets) == 1 {
			c.targets = append(make([]target, 0, 1+len(c.fallbacks)), own)
		}
		tg := target{scheme: fb.scheme, host: fb.host, moved: true}
		if p := c.t.policies.lookup(fb); !p.budget.Disabled {
			tg.rec, tg.budgeted = c.t.budgets.recordAt(fb.host, at), true
			tg.rec.budget.configureAt(p.budget, at)
		}
		c.targets = append(c.targets, tg)
	}
	c.setRecords(at)
	if !c.demotes {
		return
	}
	mayProbe := c.resendable && c.replayable(c.req)
	order := c.targets
	if !c.reorder {
		order = order[1:]
	}
	demoteLast(order, func(tg *target) bool {
		last, probing := tg.rec.demotion.Order(now, mayProbe)
		tg.probing = probing
		return last
	})
}

// budgetOf is tg's budget, nil when disabled. The registry may have
// forgotten it while this request held it (an idle host with a full
// credit, swept when another host was added): then it is found again, so
// that what the request charges counts where the next request looks.
func (c *call) budgetOf(tg *target) *Budget {
	if !tg.budgeted {
		return nil
	}
	if tg.rec.evicted.Load() {
		var now instant
		tg.rec = c.t.budgets.recordAt(tg.host, &now)
		tg.rec.budget.configureAt(c.t.policies.lookup(origin{tg.scheme, tg.host}).budget, &now)
	}
	return &tg.rec.budget
}

// setRecords gives each candidate whose budget is disabled its record in
// Budgets when the request needs it, to reorder or to learn.
func (c *call) setRecords(now *instant) {
	if !c.demotes && c.p.hedge.Quantile == 0 {
		return
	}
	for i := range c.targets {
		if tg := &c.targets[i]; tg.rec == nil {
			tg.rec = c.t.budgets.recordAt(tg.host, now)
		}
	}
}

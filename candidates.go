package httpretry

import (
	"time"

	"github.com/httpretry/httpretry/internal/demotion"
)

// Fallback origins. A request's candidates are its own origin, then the
// fallbacks in order. After a failure, a candidate not yet tried gets its
// first attempt: no draw on MaxRetries, no wait, counted as a request in
// its budget. Once every candidate has had one, further attempts are
// resends that go round the candidates, starting again with the request's
// own origin, each drawn on the one pool of MaxRetries and charged to the
// budget of the origin it goes to. So one request costs at most
// candidates + MaxRetries upstream calls, hedged copies included.

// usable reports whether a request to own may go to fb: not the same
// origin, and never from https down to http.
func usable(own, fb origin) bool {
	return fb != own && !(own.scheme == "https" && fb.scheme == "http")
}

// hasUsableFallback reports whether a request to own has a candidate
// besides its own origin.
func hasUsableFallback(own origin, fallbacks []origin) bool {
	for _, fb := range fallbacks {
		if usable(own, fb) {
			return true
		}
	}
	return false
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
	if !c.demoting() {
		return
	}
	mayProbe := c.resendable && c.replayable()
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

// claimProbe claims, at now, the probe of tg when set-up kept it in its
// configured place to probe it, for the attempt about to be paid for. It
// reports false when another request claimed the probe first: tg is then
// deferred, tried after every other candidate not yet tried, as set-up
// would have ordered it had it seen the claim (see next).
func (c *call) claimProbe(tg *target, now time.Time) bool {
	if !tg.probing {
		return true
	}
	tg.probing = false
	p, ok := tg.rec.demotion.Claim(now)
	tg.probe = p
	tg.deferred = !ok
	return ok
}

// unclaimProbe gives back the probe claimProbe took for an attempt to tg
// that does not go after all, so that a later attempt, this request's or
// another's, may probe the origin.
func (c *call) unclaimProbe(tg *target) {
	tg.rec.demotion.Release(tg.probe)
	tg.probe = demotion.Probe{}
	tg.probing = true
}

// firstTarget is the candidate the first attempt goes to at now: the first
// in order whose probe, if it is one, this request claims.
func (c *call) firstTarget(now time.Time) *target {
	for i := range c.targets {
		if tg := &c.targets[i]; c.claimProbe(tg, now) {
			return tg
		}
	}
	return &c.targets[0] // every probe claimed first: the configured first
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

// isCandidate reports whether o is among the request's candidates already.
func (c *call) isCandidate(o origin) bool {
	for i := range c.targets {
		if tg := &c.targets[i]; tg.scheme == o.scheme && tg.host == o.host {
			return true
		}
	}
	return false
}

// setRecords gives each candidate whose budget is disabled its record in
// Budgets when the request needs it, to reorder or to learn.
func (c *call) setRecords(now *instant) {
	if !c.demoting() && c.p.hedge.Quantile == 0 {
		return
	}
	for i := range c.targets {
		if tg := &c.targets[i]; tg.rec == nil {
			tg.rec = c.t.budgets.recordAt(tg.host, now)
		}
	}
}

// target is an origin a request may be sent to, with what the attempt loop
// knows of it during that request.
type target struct {
	scheme, host string // its origin, in canonical form (see originOf)
	moved        bool   // a fallback: the request's URL is rewritten to it
	// rec is the origin's record in Budgets, nil when the request needs
	// none of it; budgeted says its budget is charged: the origin's
	// policy has one.
	rec      *originRecord
	budgeted bool
	// raUntil is the instant before which the origin asked, by
	// Retry-After, not to be called again; raTooLong says it asked for
	// more than MaxRetryAfter.
	raUntil   time.Time
	raTooLong bool
	tried     bool
	// probing says set-up kept the origin in place to probe it, and probe
	// is this request's claim on it, taken when its attempt is paid for
	// and given back by a verdict or at the end of the request; deferred
	// says another request claimed it first.
	probing  bool
	deferred bool
	probe    demotion.Probe
}

// origin is "scheme://host[:port]", as events report it.
func (tg *target) origin() string { return tg.scheme + "://" + tg.host }

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

// claimProbe claims, at now, the probe of tg when set-up kept it in its
// configured place to probe it, for the attempt about to be paid for. It
// reports false when another request claimed the probe first: tg is then
// deferred, tried after every other candidate not yet tried, as set-up
// would have ordered it had it seen the claim (see next).
func (tg *target) claimProbe(now time.Time) bool {
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
func (tg *target) unclaimProbe() {
	tg.rec.demotion.Release(tg.probe)
	tg.probe = demotion.Probe{}
	tg.probing = true
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

// plan is what the loop does after a failed outcome, as next decides it:
// the attempt it sends, to which candidate, after how long, and how that
// attempt is announced and paid for. An EventFallback plan is a
// candidate's first attempt: a request in that origin's budget, with no
// draw on MaxRetries and no wait. An EventRetry plan (a resend) or an
// EventHedge plan (a copy) draws on the one pool of MaxRetries and is
// reserved on the budget of the origin it goes to.
type plan struct {
	to   int // index in c.targets
	wait time.Duration
	kind EventKind
	// held is set when the resend waits for evidence (see hold.go).
	held *held
}

// candidates are a request's candidates and the ring its resends go
// round: the request's own origin first, then its usable fallbacks, the
// demoted ones moved last (see call.setTargets). Only the decisions read
// the ring; they take the candidates in order (untried) or round it
// (around).
type candidates struct {
	targets []target
	one     [1]target // holds the own origin when there are no fallbacks
	ring    int       // where the next resend goes round targets
}

// ownIndex is where the request's own origin is among its candidates:
// first, unless demotion moved it back.
func (c *candidates) ownIndex() int {
	for k := range c.targets {
		if !c.targets[k].moved {
			return k
		}
	}
	return 0
}

// untried is the next candidate not yet tried, in order, those whose probe
// another request claimed first (deferred) after the others.
func (c *candidates) untried() (int, bool) {
	later := -1
	for k := range c.targets {
		switch tg := &c.targets[k]; {
		case tg.tried:
		case !tg.deferred:
			return k, true
		case later < 0:
			later = k
		}
	}
	return later, later >= 0
}

// around goes round the candidates from where the last attempt went, and
// plans an attempt of kind to the first that admit takes, passing over
// those in refused. When none can, the reason is the first one's in ring
// order, with that candidate in the plan's to, for the give-up to name it;
// the pool and the wait budget are the request's and end it at once.
func (c *candidates) around(kind EventKind, refused []Reason, admit func(*target) (time.Duration, Reason)) (plan, Reason) {
	var (
		first Reason
		by    int // the candidate that gave first
	)
	for i := range c.targets {
		k := (c.ring + i) % len(c.targets)
		var wait time.Duration
		var reason Reason
		if refused != nil {
			reason = refused[k]
		}
		if reason == 0 {
			wait, reason = admit(&c.targets[k])
		}
		switch reason {
		case 0:
			return plan{to: k, wait: wait, kind: kind}, 0
		case ReasonExhausted, ReasonWaitBudget:
			return plan{}, reason // the request's, not a candidate's
		}
		if first == 0 {
			first, by = reason, k
		}
	}
	return plan{to: by}, first // to: whom the reason is about
}

// firstTarget is the candidate the first attempt goes to at now: the first
// in order whose probe, if it is one, this request claims.
func (c *candidates) firstTarget(now time.Time) *target {
	for i := range c.targets {
		if tg := &c.targets[i]; tg.claimProbe(now) {
			return tg
		}
	}
	return &c.targets[0] // every probe claimed first: the configured first
}

// isCandidate reports whether o is among the request's candidates already.
func (c *candidates) isCandidate(o origin) bool {
	for i := range c.targets {
		if tg := &c.targets[i]; tg.scheme == o.scheme && tg.host == o.host {
			return true
		}
	}
	return false
}

// releaseProbes gives back the probes this request claimed and never gave
// a verdict on: it ended first (canceled, past its deadline, won by
// another candidate). Only a request that demotes claims probes.
func (c *candidates) releaseProbes() {
	for i := range c.targets {
		if tg := &c.targets[i]; tg.probe.Claimed() {
			tg.rec.demotion.Release(tg.probe)
			tg.probe = demotion.Probe{}
		}
	}
}

// attempted notes that paid plan s sends an attempt to its candidate. A
// resend or a copy to a candidate already tried moves the ring on past it;
// a fallback's probe, decided in order, leaves the ring where it is.
func (c *candidates) attempted(s plan) {
	tg := &c.targets[s.to]
	again := tg.tried
	tg.tried = true
	if again && s.kind != EventFallback {
		c.ring = s.to + 1
	}
}

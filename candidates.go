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

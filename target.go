package httpretry

import (
	"net/http"
	"time"
)

// target is an origin a request may be sent to, with what the attempt loop
// knows of it during that request.
type target struct {
	scheme, host string  // its origin, in canonical form (see originOf)
	moved        bool    // a fallback: the request's URL is rewritten to it
	budget       *Budget // nil when the budget is disabled
	// raUntil is the instant before which the origin asked, by
	// Retry-After, not to be called again; raTooLong says it asked for
	// more than MaxRetryAfter.
	raUntil   time.Time
	raTooLong bool
	tried     bool
	// state is the origin's record in Budgets (its demotion, its learned
	// hedge delay), set when the request reorders or learns; probe is this
	// request's claim on the origin's probe, given back by a verdict or at
	// the end of the request.
	state *Budget
	probe probe
}

// origin is "scheme://host[:port]", as events report it.
func (tg *target) origin() string { return tg.scheme + "://" + tg.host }

// noteRetryAfter remembers what resp, a failure from tg judged at now,
// asks of the next call to tg: the strongest instruction wins, since a
// resend must never come earlier than any answer asked.
func (tg *target) noteRetryAfter(resp *http.Response, now time.Time, maxRetryAfter time.Duration) {
	if resp == nil {
		return
	}
	ra, ok := retryAfter(resp.Header, now)
	switch {
	case !ok:
	case ra > maxRetryAfter:
		tg.raTooLong = true
	case now.Add(ra).After(tg.raUntil):
		tg.raUntil = now.Add(ra)
	}
}

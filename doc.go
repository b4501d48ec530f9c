// Package httpretry is an http.RoundTripper middleware that resends failed
// HTTP requests safely.
//
// A RetryTransport wraps a base RoundTripper:
//
//	client := &http.Client{Transport: httpretry.New(nil)} // DefaultPolicy
//
// After an attempt fails, with a status in Policy.RetryOn (429, 502, 503
// and 504 by default) or a transport error that a resend could cure, the
// transport resends the request only when all of these hold, in this
// order: the method is idempotent, a POST or PATCH carries an
// Idempotency-Key, WithIdempotent marks the request, or it provably never
// reached the wire (its dial failed); the body can be sent again (through
// GetBody, or from a record kept as it was first sent, up to
// MaxReplayBytes); resends are left (MaxRetries); the Backoff's wait
// budget is not spent; the wait, from the Backoff, shortened to what is
// left of that budget and lengthened to the server's Retry-After, fits
// MaxRetryAfter, the Deadline and the context; and the host's retry budget
// grants the resend. Otherwise the caller gets the last response, its body
// unread, or the last error, wrapped so that errors.Is finds its cause.
// Policy.RetryIf can decide instead of RetryOn which outcomes are failures;
// the other checks still apply.
//
// DefaultPolicy sets no time bound, so that a long poll is never cut:
// Policy.PerTryTimeout bounds each attempt until its response headers, and
// Policy.Deadline the whole request, waits included.
//
// Fallback origins (Policy.Fallbacks, WithFallbacks) give a request other
// origins that serve it: after a failure that may be resent, each gets one
// attempt, in order, and further resends go round them, so that one
// request costs at most candidates + MaxRetries upstream calls. An origin
// that keeps failing goes behind the others for a while (Policy.Demote;
// DefaultPolicy demotes after 5 failures in a row), never removed, and one
// request at a time probes it once the while has passed.
//
// Hedged copies (Hedge) of a slow request go after a fixed delay, or after
// a quantile of the origin's recent times to response headers, learned as
// requests come back (Hedge.Quantile).
//
// The budget (BudgetConfig, Budgets) is shared by every request to a host:
// resends, and hedged copies (Hedge), may be at most a share of the recent
// requests, plus a small floor that the host's own requests earn back, so that
// in an outage retries add that share and floor to the traffic, not a multiple
// of it. Observers (WithObserver, WithLogger) are told of every retry, hedge,
// fallback, give-up, demotion and restore, with its Reason; AttemptFromContext
// tells a middleware inside httpretry which attempt it sees.
//
// A request whose first attempt needs no body record, timer or hedge is
// sent as it is, and a first answer that is not retried costs no
// allocation. The caller's request is never modified, and its body is
// closed on every path.
package httpretry

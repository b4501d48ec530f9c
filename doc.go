// Package httpretry is an http.RoundTripper middleware that resends failed
// HTTP requests safely.
//
// A RetryTransport wraps a base RoundTripper:
//
//	client := &http.Client{Transport: httpretry.New(nil)} // DefaultPolicy
//
// New and Middleware build one from options. WithPolicy sets the policy of
// every host, and WithHostPolicy that of one host. A Config holds these
// policies as a JSON file does, and ParseConfig reads one.
//
// # Retries
//
// An attempt fails with a status in Policy.RetryOn (429, 502, 503 and 504
// by default), or with a transport error that a resend could cure.
// Policy.RetryIf can decide instead of RetryOn which outcomes are failures.
// After a failure, the transport resends the request only when all of these
// hold, checked in this order:
//
//  1. The request is safe to resend. Its method is idempotent, a POST or
//     PATCH carries an Idempotency-Key, or WithIdempotent marks it. A
//     request that provably never reached the wire (its dial failed) is
//     safe too. Policy.AutoIdempotencyKey gives a POST or PATCH a key.
//  2. The body can be sent again. It comes from GetBody, or from a record
//     kept as it was first sent, up to MaxReplayBytes.
//  3. Resends are left (MaxRetries).
//  4. The Backoff's wait budget is not spent.
//  5. The wait fits MaxRetryAfter, the Deadline and the context. The wait
//     comes from the Backoff. It is shortened to what is left of the wait
//     budget, and lengthened to the server's Retry-After.
//  6. The host's retry budget grants the resend.
//
// Otherwise the caller gets the last response, its body unread, or the
// last error. That error is wrapped so that errors.Is finds its cause. With
// RetryIf set, the other checks still apply.
//
// DefaultPolicy sets no time bound, so that a long poll is never cut.
// Policy.PerTryTimeout bounds each attempt until its response headers.
// Policy.Deadline bounds the whole request, waits included.
//
// # Retry budgets
//
// The retry budget (BudgetConfig, Budgets) is shared by every request to a
// host. Resends and hedged copies may be at most a share of the recent
// requests. A small floor comes on top, which the host's own requests earn
// back. So in an outage, retries add that share and floor to the traffic,
// not a multiple of it. A Budgets is an expvar.Var that shows every host's
// window.
//
// # Fallbacks and demotion
//
// Fallback origins (Policy.Fallbacks, WithFallbacks) give a request other
// origins that serve it. After a failure that may be resent, each gets one
// attempt, in order. Further resends go round them. So one request costs
// at most candidates + MaxRetries upstream calls.
//
// An origin that keeps failing goes behind the others for a while
// (Policy.Demote). DefaultPolicy demotes after 5 failures in a row. A
// demoted origin is never removed. Once the while has passed, one request
// at a time probes it.
//
// # Hedging
//
// Hedged copies (Hedge) of a slow request go after a fixed delay. With
// Hedge.Quantile, the delay is a quantile of the origin's recent times to
// response headers, learned as requests come back.
//
// # Resume
//
// A GET response body that breaks mid-stream is resumed (Policy.Resume).
// The transport asks the same origin for the rest with Range and If-Range.
// The caller reads on as if nothing had happened. DefaultPolicy resumes up
// to 3 times. A body whose resource changed meanwhile ends with
// ErrBodyChanged.
//
// # Observing
//
// Observers (WithObserver, WithLogger) are told of every retry, hedge,
// fallback, give-up, demotion, restore and resume (see EventKind). A
// give-up carries its Reason. AttemptFromContext tells a middleware inside
// httpretry which attempt it sees. The module
// github.com/httpretry/httpretry/otelretry counts events as OpenTelemetry
// metrics.
//
// # Testing
//
// Package httpretrytest gives tests a base RoundTripper that answers from
// a script and records every attempt. Inside a testing/synctest bubble,
// the transport's waits take no real time.
//
// # Cost
//
// A request whose first attempt needs no body record, timer or hedge is
// sent as it is. A first answer that is not retried costs no allocation.
// The caller's request is never modified. Its body is closed on every
// path.
package httpretry

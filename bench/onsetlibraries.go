package bench

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/httpretry/httpretry"
)

// The names of httpretry's rows of the onset scenarios besides its
// default (NameHTTPRetry) and its budget disabled (NameHTTPRetryNoBudget).
const (
	// NameHTTPRetryNoHold is httpretry with Budget.Hold -1: never hold,
	// the behaviour before DESIGN point 22.
	NameHTTPRetryNoHold = "httpretry-nohold"
)

// OnsetLibraries returns the contenders of the onset scenarios: httpretry
// with DefaultPolicy, with Hold -1 and with its budget disabled, then the
// peers, each with its durations scaled as the fleet scenario scales them.
func OnsetLibraries() []FleetLibrary {
	return []FleetLibrary{
		// HoldFor is a real second, as in the simulations behind DESIGN
		// point 22, whose compressed fleet reproduces its 3.32× baseline
		// only with real-time waits: so a held resend of a compressed quiet
		// client hears that client's next request, which a scaled 50 ms
		// would miss (1.75× in the first 2 windows instead of 1.25×).
		{Name: NameHTTPRetry, New: onsetHTTPRetry(func(p *httpretry.Policy) { p.Budget.HoldFor = time.Second })},
		{Name: NameHTTPRetryNoHold, New: onsetHTTPRetry(func(p *httpretry.Policy) { p.Budget.Hold = -1 })},
		{Name: NameHTTPRetryNoBudget, New: onsetHTTPRetry(func(p *httpretry.Policy) { p.Budget.Disabled = true })},
		{Name: NameRetryableHTTP, New: fleetRetryableHTTP},
		{Name: NameFailsafe, New: func(base http.RoundTripper, _ float64) http.RoundTripper { return wrapFailsafe(base) }},
		{Name: NameFailsafeBudget, New: func(base http.RoundTripper, _ float64) http.RoundTripper { return wrapFailsafeBudget(base) }},
	}
}

// OnsetLibraryByName returns the contender called name, from
// OnsetLibraries.
func OnsetLibraryByName(name string) (FleetLibrary, bool) {
	for _, l := range OnsetLibraries() {
		if l.Name == name {
			return l, true
		}
	}
	return FleetLibrary{}, false
}

// onsetHTTPRetry returns httpretry with scaledDefaultPolicy changed by
// change.
func onsetHTTPRetry(change func(*httpretry.Policy)) func(http.RoundTripper, float64) http.RoundTripper {
	return func(base http.RoundTripper, scale float64) http.RoundTripper {
		p := scaledDefaultPolicy(scale)
		change(&p)
		return httpretry.New(base, httpretry.WithPolicy(p))
	}
}

// OnsetDefaultHolds reports whether httpretry's DefaultPolicy holds a resend
// (DESIGN point 22): whether 20 requests sent at once to an upstream that
// answers 503 to everything make it give a resend up with ReasonHold,
// which the rule does at once for an origin that is down. Until the rule
// is built, DefaultPolicy and Hold -1 behave the same, and their figures
// differ only by jitter. Call it in a synctest bubble.
func OnsetDefaultHolds() bool { return onsetHolds(httpretry.DefaultPolicy()) }

// onsetHolds is OnsetDefaultHolds for a transport with policy p.
func onsetHolds(p httpretry.Policy) bool {
	up := newOnsetOrigin(OnsetTrouble{Rate: 1}, 0)
	var held atomic.Bool
	client := &http.Client{Transport: httpretry.New(up, httpretry.WithPolicy(p),
		httpretry.WithObserver(func(e httpretry.Event) {
			if e.Reason == httpretry.ReasonHold {
				held.Store(true)
			}
		}))}
	var wg sync.WaitGroup
	for id := range 20 {
		wg.Go(func() { _, _ = getOnce(context.Background(), client, onsetURL, id) })
	}
	wg.Wait()
	return held.Load()
}

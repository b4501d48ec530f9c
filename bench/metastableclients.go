package bench

import (
	"net/http"
	"time"

	"github.com/failsafe-go/failsafe-go/failsafehttp"
	"github.com/failsafe-go/failsafe-go/timeout"
	"github.com/hashicorp/go-retryablehttp"

	"github.com/httpretry/httpretry"
)

// MetastableClient is one client of the metastability benchmark: a name
// for the tables and how it builds its http.Client for one run.
type MetastableClient struct {
	Name string
	// New returns the client over base with every attempt cut at cut.
	// httpretry's clients tell observe of their events; the others never
	// call it.
	New func(base http.RoundTripper, cut time.Duration, observe func(httpretry.Event)) *http.Client
}

// NameNoRetry is the metastability benchmark's row of a client that never
// retries; httpretry's Hold -1 row is NameHTTPRetryNoHold, and the peers
// keep their names (NameRetryableHTTP, NameFailsafe).
const NameNoRetry = "no-retry"

// MetastableClients returns the five clients of the metastability
// benchmark, the client that never retries first: it is the physical
// limit every other row is compared with.
func MetastableClients() []MetastableClient {
	return []MetastableClient{
		{Name: NameNoRetry, New: newNoRetryClient},
		MetastableHTTPRetry(NameHTTPRetry, nil),
		MetastableHTTPRetry(NameHTTPRetryNoHold, func(p *httpretry.Policy) { p.Budget.Hold = -1 }),
		{Name: NameRetryableHTTP, New: newMetastableRetryableHTTP},
		{Name: NameFailsafe, New: newMetastableFailsafe},
	}
}

// newNoRetryClient sends each request once, through base itself, with
// http.Client's Timeout at the cut.
func newNoRetryClient(base http.RoundTripper, cut time.Duration, _ func(httpretry.Event)) *http.Client {
	return &http.Client{Transport: base, Timeout: cut}
}

// MetastableHTTPRetry returns httpretry as a client named name:
// DefaultPolicy with PerTryTimeout at the cut, then edit applied to the
// policy if it is not nil. Each run gets a transport of its own, so a
// budget registry of its own.
func MetastableHTTPRetry(name string, edit func(*httpretry.Policy)) MetastableClient {
	return MetastableClient{Name: name, New: func(base http.RoundTripper, cut time.Duration, observe func(httpretry.Event)) *http.Client {
		p := httpretry.DefaultPolicy()
		p.PerTryTimeout = cut
		if edit != nil {
			edit(&p)
		}
		return &http.Client{Transport: httpretry.New(base, httpretry.WithPolicy(p), httpretry.WithObserver(observe))}
	}}
}

// newMetastableRetryableHTTP is wrapRetryableHTTP (NewClient's defaults, its
// logger silenced) with its inner http.Client's Timeout at the cut, which
// bounds each attempt: retryablehttp calls that client once per attempt.
func newMetastableRetryableHTTP(base http.RoundTripper, cut time.Duration, _ func(httpretry.Event)) *http.Client {
	rt := wrapRetryableHTTP(base).(*retryablehttp.RoundTripper)
	rt.Client.HTTPClient.Timeout = cut
	return &http.Client{Transport: rt}
}

// newMetastableFailsafe is wrapFailsafe's retry policy, unchanged, with a
// timeout policy at the cut inside it: failsafe composes policies from the
// outside in, so the timeout bounds each attempt and the retry policy
// retries its timeout.ErrExceeded.
func newMetastableFailsafe(base http.RoundTripper, cut time.Duration, _ func(httpretry.Event)) *http.Client {
	return &http.Client{Transport: failsafehttp.NewRoundTripper(base,
		failsafehttp.NewRetryPolicyBuilder().Build(), timeout.New[*http.Response](cut))}
}

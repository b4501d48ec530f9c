package bench

import (
	"net/http"
	"time"

	"github.com/failsafe-go/failsafe-go/failsafehttp"
	"github.com/failsafe-go/failsafe-go/timeout"
	"github.com/hashicorp/go-retryablehttp"

	"github.com/httpretry/httpretry"
)

// LoopPerTry bounds every attempt of a loop run's contenders, as a new
// user's batch worker would: without it a black hole holds an attempt
// until the deadline, or for ever.
const LoopPerTry = 2 * time.Second

// The names of the loop contenders in tables.
const (
	NameLoopHTTPRetry    = "httpretry"
	NameLoopHTTPRetryCtx = "httpretry ctx deadline"
	NameLoopHold1        = "httpretry Hold -1"
	NameLoopDisabled     = "httpretry Disabled"
)

// LoopContender is one row of a loop run: a client set up as its users
// would set it up for a batch worker.
type LoopContender struct {
	Name string
	// InContext puts the run's deadline on each request's context; without
	// it the deadline is the contender's own (Policy.Deadline).
	InContext bool
	// New returns the client a run's workers share, sending through base,
	// for a deadline d (0: none) that New sets unless InContext; and, for
	// httpretry, the registry of its budgets, which no other run shares.
	New func(base http.RoundTripper, d time.Duration) (*http.Client, *httpretry.Budgets)
}

// LoopContenders returns the rows of a closed-loop table: httpretry as it
// is, with the context carrying its deadline, as before DESIGN point 22
// (Hold -1) and with its budget disabled; then go-retryablehttp,
// failsafe-go and the bare base, each with a LoopPerTry bound per attempt.
func LoopContenders() []LoopContender {
	return []LoopContender{
		{Name: NameLoopHTTPRetry, New: loopHTTPRetry(func(*httpretry.Policy) {})},
		{Name: NameLoopHTTPRetryCtx, InContext: true, New: loopHTTPRetry(func(*httpretry.Policy) {})},
		{Name: NameLoopHold1, New: loopHTTPRetry(func(p *httpretry.Policy) { p.Budget.Hold = -1 })},
		{Name: NameLoopDisabled, New: loopHTTPRetry(func(p *httpretry.Policy) { p.Budget.Disabled = true })},
		{Name: NameRetryableHTTP, InContext: true, New: loopRetryableHTTP},
		{Name: NameFailsafe, InContext: true, New: loopFailsafe},
		{Name: NameBare, InContext: true, New: loopBare},
	}
}

// LoopContenderByName returns the contender called name.
func LoopContenderByName(name string) (LoopContender, bool) {
	for _, c := range LoopContenders() {
		if c.Name == name {
			return c, true
		}
	}
	return LoopContender{}, false
}

// loopHTTPRetry is DefaultPolicy with PerTryTimeout LoopPerTry, the
// deadline as Policy.Deadline, edit applied, and a Budgets of the run's own.
func loopHTTPRetry(edit func(*httpretry.Policy)) func(http.RoundTripper, time.Duration) (*http.Client, *httpretry.Budgets) {
	return func(base http.RoundTripper, d time.Duration) (*http.Client, *httpretry.Budgets) {
		p := httpretry.DefaultPolicy()
		p.PerTryTimeout = LoopPerTry
		p.Deadline = d
		edit(&p)
		bs := httpretry.NewBudgets()
		return &http.Client{Transport: httpretry.New(base, httpretry.WithPolicy(p), httpretry.WithBudgets(bs))}, bs
	}
}

// loopRetryableHTTP is wrapRetryableHTTP with its inner client's Timeout,
// which bounds each of its attempts, at LoopPerTry.
func loopRetryableHTTP(base http.RoundTripper, _ time.Duration) (*http.Client, *httpretry.Budgets) {
	rt := wrapRetryableHTTP(base).(*retryablehttp.RoundTripper)
	rt.Client.HTTPClient.Timeout = LoopPerTry
	return &http.Client{Transport: rt}, nil
}

// loopFailsafe is wrapFailsafe's retry policy around failsafe's own
// timeout policy, which, inside the retries, bounds each attempt.
func loopFailsafe(base http.RoundTripper, _ time.Duration) (*http.Client, *httpretry.Budgets) {
	rp := failsafehttp.NewRetryPolicyBuilder().Build()
	return &http.Client{Transport: failsafehttp.NewRoundTripper(base, rp, timeout.New[*http.Response](LoopPerTry))}, nil
}

// loopBare sends one attempt per item, bounded by the client's Timeout.
func loopBare(base http.RoundTripper, _ time.Duration) (*http.Client, *httpretry.Budgets) {
	return &http.Client{Transport: base, Timeout: LoopPerTry}, nil
}

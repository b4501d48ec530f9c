package httpretry

import (
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/go-cleanhttp"
)

// RetryTransport is an http.RoundTripper that resends failed requests when
// it is safe and the host's retry budget allows. Build it with New; it is
// immutable afterwards and safe for concurrent use. The zero RetryTransport
// behaves as New(nil) would, and every zero RetryTransport shares one such
// transport, budgets included.
type RetryTransport struct {
	base      http.RoundTripper
	policies  policyTable
	budgets   *Budgets
	observers observers
	// wrapsRetry says that an httpretry is inside base (see
	// fromOuterAttempt): every attempt, the first too, then carries a
	// context that tells it so.
	wrapsRetry atomic.Bool
}

var _ http.RoundTripper = (*RetryTransport)(nil)

// New returns a RetryTransport sending through base, or through
// cleanhttp.DefaultPooledTransport() when base is nil. Without WithPolicy
// every host gets DefaultPolicy(). New panics if an option holds an invalid
// policy or host, as regexp.MustCompile does: it is a programming error,
// best found at start-up.
func New(base http.RoundTripper, opts ...Option) *RetryTransport {
	c := newConfig(opts)
	return c.transport(base, c.buildPolicies())
}

// Middleware returns a constructor that wraps a base RoundTripper in a
// RetryTransport, for middleware chains. It checks opts at once and panics
// like New. Each transport it makes has its own budgets unless opts hold
// WithBudgets.
func Middleware(opts ...Option) func(http.RoundTripper) http.RoundTripper {
	c := newConfig(opts)
	policies := c.buildPolicies()
	return func(base http.RoundTripper) http.RoundTripper { return c.transport(base, policies) }
}

// transport builds a RetryTransport from resolved options.
func (c *config) transport(base http.RoundTripper, policies policyTable) *RetryTransport {
	if base == nil {
		base = cleanhttp.DefaultPooledTransport()
	}
	budgets := c.budgets
	if budgets == nil {
		budgets = NewBudgets()
	}
	t := &RetryTransport{base: base, policies: policies, budgets: budgets, observers: c.observers}
	if _, ok := base.(*RetryTransport); ok {
		t.wrapsRetry.Store(true)
	}
	return t
}

// zeroTransport is what a zero RetryTransport stands for.
var zeroTransport = sync.OnceValue(func() *RetryTransport { return New(nil) })

// CloseIdleConnections closes the idle connections of the base transport, if
// it has such a method.
func (t *RetryTransport) CloseIdleConnections() {
	if t.base == nil {
		t = zeroTransport()
	}
	if c, ok := t.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// RoundTrip sends req, and resends it while the outcome is retryable and
// the policy, the request's safety and the host's budget allow. It returns
// the first response that is not retried, or the last response or error
// when it stops, with the response body unread. It never modifies req, and
// closes req.Body on every path.
func (t *RetryTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.base == nil {
		return zeroTransport().RoundTrip(req)
	}
	r, err := t.resolve(req)
	switch {
	case err != nil:
		return nil, err
	case r.passes():
		return r.passThrough()
	}
	if r.findRecord(); r.fast() {
		return r.sendFast()
	}
	return r.send()
}

// passThrough sends req once, as it is, holding the base to the
// RoundTripper contract and giving its error the package's prefix.
func passThrough(base http.RoundTripper, req *http.Request) (*http.Response, error) {
	resp, err := checkOutcome(base.RoundTrip(req))
	if err != nil && err != errNilResponse {
		err = fmt.Errorf("httpretry: %w", err)
	}
	return resp, err
}

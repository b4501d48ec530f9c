package httpretry

import (
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

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
	if req == nil {
		return nil, errNilRequest
	}
	if req.URL == nil {
		closeBody(req.Body)
		return nil, errNilURL
	}
	own := originOf(req.URL)
	p := t.policies.lookup(own)
	maxRetries := p.maxRetries
	if n, ok := maxRetriesFrom(req.Context()); ok {
		maxRetries = n
	}
	fallbacks, err := fallbacksFor(req, p)
	if err != nil {
		closeBody(req.Body)
		return nil, err
	}
	// An outer httpretry's policy governs its attempts: this one makes
	// no resends of its own, and only its fallbacks and time bounds act.
	nested := fromOuterAttempt(req)
	if nested {
		maxRetries = 0
	}
	moves := hasUsableFallback(own, fallbacks)
	marks := t.wrapsRetry.Load() // even a request sent once must tell the httpretry inside
	if maxRetries == 0 && !moves && p.untimed && !marks {
		if nested && !p.budget.Disabled {
			t.budgets.forKey(own.host, p.budget).Record()
		}
		return passThrough(t.base, req)
	}

	var budget *Budget
	if !p.budget.Disabled {
		budget = t.budgets.forKey(own.host, p.budget)
	}
	// With Demote, an origin that has a demotion standing sends the
	// request to the slow path, where the candidates are reordered; any
	// other costs one atomic load here.
	var state *Budget
	reorder := false
	if moves && p.demote.after > 0 {
		if state = budget; state == nil {
			state = t.budgets.entry(own.host)
		}
		reorder = state.demotion.standing()
	}
	if budget != nil && !reorder {
		budget.Record()
	}
	if !nested && !marks && !reorder && sendsAsIs(req, p) {
		// The fast path: the caller's own request goes out untouched, and a
		// first answer that is not retried costs nothing more.
		resp, err := t.base.RoundTrip(req)
		if err == nil && resp != nil && p.answersGuarded(resp) {
			if state != nil {
				state.demotion.answeredAt(time.Now, resp.StatusCode == http.StatusTooManyRequests)
			}
			tg := &target{scheme: own.scheme, host: own.host, budget: budget}
			wrapResumable(t, req, p, maxRetries, tg, 1, 1, time.Time{}, resp)
			return resp, nil
		}
		resp, err = checkOutcome(resp, err)
		// No Deadline on this path, so the start time is not needed.
		c := newCall(t, req, own, p, fallbacks, budget, maxRetries, time.Time{}, true)
		defer c.releaseProbes() // claimed in newCall; a panic must not keep them
		c.targets[0].tried = true
		if resp != nil {
			return c.loop(outcome{a: &c.first, resp: resp, failure: true}) // answers said so
		}
		return c.loop(c.judge(&c.first, nil, err))
	}
	c := newCall(t, req, own, p, fallbacks, budget, maxRetries, time.Now(), !reorder)
	defer c.releaseProbes()
	if c.body != nil {
		// Deferred here, not in the loop: a callback that panics in the
		// first round must leave the caller's body closed too.
		defer c.body.finish()
	}
	c.nested, c.marks = nested, marks
	first := &c.targets[0]
	if b := c.budgetOf(first); reorder && b != nil {
		// Its first attempt is this origin's request (point 18).
		b.Record()
	}
	first.tried = true
	return c.loop(c.round(1, first, c.firstBody()))
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

package chaos

import (
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/httpretry/httpretry"
)

// countingBase is the base RoundTripper under httpretry: it counts every
// attempt httpretry makes, per logical request, before the network can
// lose or duplicate it.
type countingBase struct {
	base  *http.Transport
	calls atomic.Int64

	mu    sync.Mutex
	perID map[string]int
}

// newBase returns a pooled loopback transport without timeouts of its own,
// so that every deadline the tests see is httpretry's.
func newBase() *countingBase {
	return &countingBase{
		base: &http.Transport{
			DialContext:         (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
			MaxIdleConnsPerHost: 64,
			IdleConnTimeout:     30 * time.Second,
		},
		perID: map[string]int{},
	}
}

// RoundTrip counts the attempt and forwards it.
func (c *countingBase) RoundTrip(r *http.Request) (*http.Response, error) {
	c.calls.Add(1)
	if id := r.Header.Get(hdrID); id != "" {
		c.mu.Lock()
		c.perID[id]++
		c.mu.Unlock()
	}
	return c.base.RoundTrip(r)
}

// CloseIdleConnections forwards to the pooled transport.
func (c *countingBase) CloseIdleConnections() { c.base.CloseIdleConnections() }

// maxPerID is the largest number of attempts one logical request got.
func (c *countingBase) maxPerID() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	most := 0
	for _, n := range c.perID {
		most = max(most, n)
	}
	return most
}

// newRetrying wraps base in httpretry with p and closes its idle
// connections when the test ends, so that goleak sees no pooled conns.
func newRetrying(t testing.TB, base http.RoundTripper, p httpretry.Policy, opts ...httpretry.Option) *httpretry.RetryTransport {
	t.Helper()
	rt := httpretry.New(base, append([]httpretry.Option{httpretry.WithPolicy(p)}, opts...)...)
	t.Cleanup(rt.CloseIdleConnections)
	return rt
}

// budgetLimit is the most attempts a window may carry for requests:
// requests + max(MinRetries, Percent·requests/100).
func budgetLimit(requests int, cfg httpretry.BudgetConfig) int {
	pct, minRetries := cfg.Percent, cfg.MinRetries
	if pct == 0 {
		pct = 20
	}
	switch {
	case minRetries == 0:
		minRetries = 10
	case minRetries < 0:
		minRetries = 0
	}
	return requests + max(minRetries, pct*requests/100)
}

package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/httpretry/httpretry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// chaosPolicy is the policy the network scenarios run under: short waits
// so the suite stays quick, a per-try timeout so a silent peer costs a
// bounded time, and a budget window longer than any scenario so that the
// budget formula can be checked on totals.
func chaosPolicy() httpretry.Policy {
	p := httpretry.DefaultPolicy()
	p.MaxRetries = 3
	p.Backoff = httpretry.ExponentialJitter(5*time.Millisecond, 40*time.Millisecond)
	p.PerTryTimeout = 250 * time.Millisecond
	p.MaxRetryAfter = 2 * time.Second
	// Hold -1: these scenarios measure what a fault does to one call
	// (resent, resumed, never corrupted) under the window budget alone.
	// Their callers send one call at a time with a 10 s context deadline
	// into a fault that lasts: with point 22's hold that is a closed loop,
	// which parks until the fault ends or the deadline comes, as bench's
	// closed-loop benchmark measures.
	p.Budget = httpretry.BudgetConfig{Percent: 20, MinRetries: 30, Window: time.Hour, Hold: -1}
	return p
}

// rig is one upstream behind one fault proxy, reached through httpretry
// over a counting base transport.
type rig struct {
	t      *testing.T
	up     *upstream
	proxy  *faultProxy
	base   *countingBase
	rt     *httpretry.RetryTransport
	policy httpretry.Policy
	tally  tally

	specMu sync.Mutex // guards seq and rnd
	seq    int
	rnd    *rand.Rand
}

func newRig(t *testing.T, p httpretry.Policy) *rig {
	up := newUpstream(t)
	proxy := newFaultProxy(t, up.addr())
	base := newBase()
	return &rig{
		t: t, up: up, proxy: proxy, base: base, policy: p,
		rt:  newRetrying(t, base, p),
		rnd: rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7)),
	}
}

// specs returns n requests of each kind, with bodies of up to 16 KiB and
// GetBody on every other POST, in a shuffled order.
func (r *rig) specs(n int) []spec {
	var out []spec
	for i := 0; i < n; i++ {
		for _, k := range allKinds {
			r.seq++
			s := spec{kind: k, id: fmt.Sprintf("%s-%d", k, r.seq), respSize: 1 + r.rnd.IntN(8<<10), getBody: r.seq%2 == 0}
			if k != kindGet {
				s.body = payload[r.rnd.IntN(4096) : 4096+r.rnd.IntN(12<<10)]
			}
			out = append(out, s)
		}
	}
	r.rnd.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// drive sends specs from workers goroutines and waits for them all.
func (r *rig) drive(specs []spec, workers int, timeout time.Duration) {
	jobs := make(chan spec)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for s := range jobs {
				ctx, cancel := context.WithTimeout(context.Background(), timeout)
				r.tally.add(send(ctx, r.rt, r.proxy.URL(), s))
				cancel()
			}
		}()
	}
	for _, s := range specs {
		jobs <- s
	}
	close(jobs)
	wg.Wait()
}

// checkInvariants asserts what must hold after any scenario, whatever the
// fault: no broken call, unkeyed POSTs upstream at most once, no complete
// request body that differs from the original, attempts within the budget
// and MaxRetries, every request body closed, and no connection left open
// at the upstream once idle connections are closed.
func (r *rig) checkInvariants() {
	t := r.t
	t.Helper()
	assert.Empty(t, r.tally.violations(), "calls that broke an invariant")
	assert.LessOrEqual(t, r.up.maxCallsFor(string(kindUnkeyedPost)), 1, "an unkeyed POST reached the upstream twice")
	assert.Zero(t, r.up.badBodies.Load(), "a complete request body differed from the original")
	requests := len(r.tally.calls)
	assert.LessOrEqual(t, int(r.base.calls.Load()), budgetLimit(requests, r.policy.Budget), "attempts beyond the retry budget")
	assert.LessOrEqual(t, r.base.maxPerID(), 1+r.policy.MaxRetries, "attempts beyond MaxRetries")

	r.rt.CloseIdleConnections()
	assert.Eventually(t, func() bool { return len(r.tally.unclosedBodies()) == 0 },
		2*time.Second, 10*time.Millisecond, "request bodies never closed: %v", r.tally.unclosedBodies())
	assert.Eventually(t, func() bool { return r.up.srv.Open() == 0 },
		5*time.Second, 10*time.Millisecond, "upstream connections still open after CloseIdleConnections: %d", r.up.srv.Open())
}

// summary is the one line a scenario logs for RELIABILITY.md.
func (r *rig) summary(name string) string {
	ok, rtErr, status, readErr := r.tally.counts()
	return fmt.Sprintf("%s: requests=%d ok=%d rt-errors=%d non-200=%d body-read-errors=%d attempts=%d upstream-calls=%d cut-bodies=%d slowest=%s",
		name, len(r.tally.calls), ok, rtErr, status, readErr, r.base.calls.Load(), r.up.calls(), r.up.cutBodies.Load(), r.tally.slowest().Round(time.Millisecond))
}

// requireAllOK fails unless every call came back whole.
func (r *rig) requireAllOK() {
	ok, _, _, _ := r.tally.counts()
	require.Equal(r.t, len(r.tally.calls), ok, "every call should succeed: %s", r.summary(r.t.Name()))
}

// assertNoneOK fails if any call came back as a whole 200.
func (r *rig) assertNoneOK() {
	ok, _, _, _ := r.tally.counts()
	assert.Zero(r.t, ok, "no call should succeed: %s", r.summary(r.t.Name()))
}

// statusOf is a readable form of a call's end for failure messages.
func statusOf(c *call) string {
	switch {
	case c.err != nil:
		return "error: " + c.err.Error()
	case c.readErr != nil:
		return fmt.Sprintf("%d, body read error: %v", c.status, c.readErr)
	default:
		return http.StatusText(c.status)
	}
}

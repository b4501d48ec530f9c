package chaos

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/httpretry/httpretry"
	"github.com/stretchr/testify/assert"
)

// TestBudgetBoundsUpstreamCalls sends bursts of GETs to an upstream that
// answers every call with 503, and counts the calls that reach it: never
// more than requests + max(MinRetries, Percent·requests/100) per window,
// whether one transport sends or a fleet sharing one Budgets; and the floor
// spent in one window is not granted afresh in the next.
func TestBudgetBoundsUpstreamCalls(t *testing.T) {
	cases := []struct {
		name       string
		budget     httpretry.BudgetConfig
		transports int
		bursts     []int // requests per burst; bursts are a window apart
		// minRetries is the least the budget must still grant in the
		// first burst.
		minRetries int
		// later is what it grants in each later burst, exactly.
		later int
	}{
		{name: "one transport", budget: httpretry.BudgetConfig{Percent: 10, MinRetries: 5, Window: time.Hour},
			transports: 1, bursts: []int{200}, minRetries: 5},
		{name: "fleet of 4 sharing Budgets", budget: httpretry.BudgetConfig{Percent: 10, MinRetries: 5, Window: time.Hour},
			transports: 4, bursts: []int{200}, minRetries: 5},
		{name: "strict: a quiet window grants nothing", budget: httpretry.BudgetConfig{Percent: 10, MinRetries: -1, Window: time.Hour},
			transports: 1, bursts: []int{5}, minRetries: 0},
		// 1 % of 10 requests is no share, and earns 0.1 of a floor credit:
		// the 3 credits the first burst spends are not back a window later.
		{name: "the window rolls, the floor is earned", budget: httpretry.BudgetConfig{Percent: 1, MinRetries: 3, Window: 400 * time.Millisecond},
			transports: 1, bursts: []int{10, 10, 10}, minRetries: 3, later: 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			up := newUpstream(t)
			up.failPct.Store(100)
			p := chaosPolicy()
			p.Backoff = httpretry.NoBackoff()
			// No per-try timeout: every attempt must reach the upstream, so
			// that its count is the count of attempts.
			p.PerTryTimeout = 0
			// The window's share and floor alone (Hold -1, as before point
			// 22): each request has a 10 s context deadline, so with the hold
			// these bursts against an origin that always fails would be a
			// closed loop's, which parks until its deadlines (DESIGN point 22,
			// measured in bench's closed-loop benchmark).
			p.Budget = tc.budget
			p.Budget.Hold = -1
			shared := httpretry.NewBudgets()
			var rts []*httpretry.RetryTransport
			for i := 0; i < tc.transports; i++ {
				rts = append(rts, newRetrying(t, newBase(), p, httpretry.WithBudgets(shared)))
			}
			for b, n := range tc.bursts {
				if b > 0 {
					// Let the whole window, and one bucket more, pass.
					time.Sleep(tc.budget.Window + tc.budget.Window/5)
				}
				before := up.calls()
				jobs := make(chan int)
				var wg sync.WaitGroup
				for w := 0; w < 8; w++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for i := range jobs {
							ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
							c := send(ctx, rts[i%len(rts)], "http://"+up.addr(), spec{kind: kindGet, id: fmt.Sprintf("b%d-%d", b, i), respSize: 10})
							cancel()
							assert.Empty(t, c.violation)
							assert.Equal(t, endStatus, endOf(c), "outcome: %s", statusOf(c))
						}
					}()
				}
				for i := 0; i < n; i++ {
					jobs <- i
				}
				close(jobs)
				wg.Wait()
				calls := int(up.calls() - before)
				t.Logf("burst %d: %d requests, %d upstream calls, limit %d", b+1, n, calls, budgetLimit(n, tc.budget))
				assert.LessOrEqual(t, calls, budgetLimit(n, tc.budget), "upstream calls beyond the budget")
				if b == 0 {
					assert.GreaterOrEqual(t, calls, n+tc.minRetries, "the budget granted less than MinRetries")
				} else {
					assert.Equal(t, n+tc.later, calls, "resends in a later window")
				}
			}
		})
	}
}

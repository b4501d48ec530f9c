package bench

import (
	"time"

	"github.com/httpretry/httpretry"
)

// learnedHedge returns the hedge of the learned-delay row,
// Hedge{Quantile: 0.95, Max: 1} with MinAfter (1 ms) multiplied by scale
// like every other delay of the run, and a function reading the delay
// learned for host from bs, the raw estimate BudgetStats.HedgeAfter
// (0 while cold).
func learnedHedge(scale float64) (h httpretry.Hedge, delay func(bs *httpretry.Budgets, host string) time.Duration) {
	h = httpretry.Hedge{Quantile: 0.95, Max: 1, MinAfter: scaled(time.Millisecond, scale)}
	return h, func(bs *httpretry.Budgets, host string) (d time.Duration) {
		bs.Range(func(k string, s httpretry.BudgetStats) bool {
			if k == host {
				d = s.HedgeAfter
			}
			return k != host
		})
		return d
	}
}

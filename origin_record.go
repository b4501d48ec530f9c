package httpretry

import (
	"sync/atomic"
	"time"

	"github.com/httpretry/httpretry/internal/demotion"
	"github.com/httpretry/httpretry/internal/latency"
)

// originRecord is what the package keeps of one origin's host across
// requests: its retry budget, its standing under Policy.Demote, its recent
// times to response headers under a learned Hedge.Quantile, and the
// registry's note of when it was last used. Budgets holds one per host, so
// that transports sharing a Budgets share it, a reload keeps it, and it is
// forgotten with the host. A candidate holds one pointer to it.
type originRecord struct {
	budget Budget // what Budgets.For returns a pointer to
	// key is the host as Budgets holds it; evicted is set when Budgets
	// forgets it, so that Budgets.last stops answering with it.
	key     string
	evicted atomic.Bool
	// clock is the coarse clock of the Budgets that holds this record,
	// and used its reading at the last request: the recency by which a
	// full registry cuts.
	clock *atomic.Int64
	used  atomic.Int64
	// demotion is nothing until the origin fails under Demote; latencies
	// is made on first use, about 1 KB.
	demotion  demotion.State
	latencies atomic.Pointer[latency.Estimator]
	// out counts the origin's failures in a row, and holds the requests
	// parked there (DESIGN point 22).
	out outage
}

// newOriginRecord is the record of key in a registry whose coarse clock
// is clock, used as of now so that a host not yet recorded is not the
// first a full registry cuts.
func newOriginRecord(key string, clock *atomic.Int64, now int64) *originRecord {
	r := &originRecord{key: key, clock: clock}
	r.budget.rec = r
	r.used.Store(now)
	return r
}

// stamp notes the registry's clock as the instant of the origin's last
// request, writing only when it moved, so that the requests of a busy host
// share a cache line that stays clean.
func (r *originRecord) stamp() {
	if now := r.clock.Load(); r.used.Load() != now {
		r.used.Store(now)
	}
}

// idleAt reports whether the registry may forget the origin at now: its
// budget idle for a whole window with its floor credit full again, not
// demoted, and with no learned hedge delay (one still cold has learned
// nothing worth keeping). A demoted origin, or one that learned, is not
// idle for lack of recorded requests: its budget may be disabled.
func (r *originRecord) idleAt(now int64) bool {
	return r.budget.idleAt(now) && r.budget.creditFullAt(now) && !r.demotion.Active() && !r.hasLearned() &&
		r.out.parked.Load() == 0 && r.out.inflight.Load() == 0
}

// hasLearned reports whether the origin has a learned hedge delay: its
// estimator is warm.
func (r *originRecord) hasLearned() bool {
	l := r.latencies.Load()
	if l == nil {
		return false
	}
	_, warm := l.Estimate()
	return warm
}

// learned is the origin's latency estimator, made on first use.
func (r *originRecord) learned() *latency.Estimator {
	if l := r.latencies.Load(); l != nil {
		return l
	}
	r.latencies.CompareAndSwap(nil, new(latency.Estimator))
	return r.latencies.Load()
}

// learn records one time to response headers, and marks the origin in use,
// whether its budget records requests or not.
func (r *originRecord) learn(d time.Duration, q float64) {
	r.learned().Record(d, q)
	r.stamp()
}

// stats is the origin's BudgetStats at now: its budget's window, its
// learned delay, and how long it stays demoted.
func (r *originRecord) stats(now time.Time) BudgetStats {
	s := r.budget.statsAt(now)
	s.DemotedFor = r.demotion.Left(now)
	s.Streak, s.Parked = int(r.out.streak.Load()), int(r.out.parked.Load())
	if l := r.latencies.Load(); l != nil {
		s.HedgeAfter, _ = l.Estimate()
	}
	return s
}

package bench

import (
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/httpretry/httpretry"
)

// OpenLoopConfig is a server's handlers facing an outage: one request
// arrives every Every, whether or not earlier ones were answered (an open
// loop), until the Outage's end.
type OpenLoopConfig struct {
	Outage
	// Every is the time between arrivals, fixed so that a healthy 100 ms
	// holds the same count of them throughout; 0: 5 ms (200 a second).
	Every time.Duration
	// Deadline bounds each request (0: none), where the contender puts it.
	Deadline time.Duration
	// Sample is how often the run reads httpretry's BudgetStats; 0: 10 ms.
	Sample time.Duration
}

func (c OpenLoopConfig) resolved() OpenLoopConfig {
	c.Outage = c.Outage.resolved()
	if c.Every <= 0 {
		c.Every = 5 * time.Millisecond
	}
	if c.Sample <= 0 {
		c.Sample = 10 * time.Millisecond
	}
	return c
}

// OpenLoopResult is what one contender's open-loop run saw. Items counts
// the requests, each an item.
type OpenLoopResult struct {
	Contender string
	Config    OpenLoopConfig // resolved
	Items
	Attempts
	// PeakParked is the most BudgetStats.Parked read in the run;
	// PeakParkedDown the most read after DownArrival.
	PeakParked, PeakParkedDown int
	// DownArrival is when the first request started while the origin's
	// streak was at least DownStreak and requests were parked there: an
	// arrival, by DESIGN point 22's rule 7, which ends an open loop's
	// parking. -1 if none did (nothing parked then, or a disabled budget,
	// which counts no streak): PeakParkedDown then reads from the outage's
	// start.
	DownArrival time.Duration
}

// DownStreak is the streak from which an origin is down: 2·Hold, at
// DefaultPolicy's Hold of 2.
const DownStreak = 4

// RunOpenLoop runs cfg for c in a synctest bubble of its own, under t.
func RunOpenLoop(t *testing.T, c LoopContender, cfg OpenLoopConfig) OpenLoopResult {
	t.Helper()
	var r OpenLoopResult
	synctest.Test(t, func(*testing.T) { r = runOpenLoop(c, cfg) })
	return r
}

// OpenLoopContenders returns the httpretry rows of LoopContenders that keep
// the deadline in the policy: an open loop is where parking must not go.
func OpenLoopContenders() []LoopContender {
	var out []LoopContender
	for _, c := range LoopContenders() {
		switch c.Name {
		case NameLoopHTTPRetry, NameLoopHold1, NameLoopDisabled:
			out = append(out, c)
		}
	}
	return out
}

// runOpenLoop is RunOpenLoop inside a bubble.
func runOpenLoop(c LoopContender, cfg OpenLoopConfig) OpenLoopResult {
	cfg = cfg.resolved()
	start := time.Now()
	origin := newLoopOrigin(cfg.Outage, start)
	client, budgets := c.New(origin, transportDeadline(c, cfg.Deadline))
	sampler := startParkedSampler(budgets, cfg.Sample, start)

	var (
		mu   sync.Mutex
		ends []itemEnd
		wg   sync.WaitGroup
	)
	down := time.Duration(-1)
	n := 0
	for ; ; n++ {
		at := time.Duration(n) * cfg.Every
		if at >= cfg.End() {
			break
		}
		time.Sleep(time.Until(start.Add(at)))
		if down < 0 && origin.isDown(at) {
			if st := originStats(budgets); st.Streak >= DownStreak && st.Parked > 0 {
				down = at
			}
		}
		wg.Go(func() {
			ok := sendItem(client, contextDeadline(c, cfg.Deadline))
			mu.Lock()
			ends = append(ends, itemEnd{taken: at, done: time.Since(start), ok: ok})
			mu.Unlock()
		})
	}
	wg.Wait()
	sampler.stop()
	r := OpenLoopResult{Contender: c.Name, Config: cfg,
		Items:       tallyItems(cfg.Outage, n, ends),
		Attempts:    countAttempts(cfg.Outage, origin.Arrivals()),
		PeakParked:  sampler.peak(0),
		DownArrival: down}
	from := cfg.Healthy
	if down >= 0 {
		// Strictly after: a sample at the arrival's instant may be read
		// before the arrival starts.
		from = down + 1
	}
	r.PeakParkedDown = sampler.peak(from)
	return r
}

// originStats is the Streak and Parked of bs's one host (summed, should it
// have more); zero for no registry.
func originStats(bs *httpretry.Budgets) httpretry.BudgetStats {
	var sum httpretry.BudgetStats
	if bs != nil {
		bs.Range(func(_ string, st httpretry.BudgetStats) bool {
			sum.Streak += st.Streak
			sum.Parked += st.Parked
			return true
		})
	}
	return sum
}

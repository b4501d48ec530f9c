package bench

import (
	"context"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// ClosedLoopConfig is a batch worker facing an outage: Workers goroutines
// take items from one queue, one at a time, and send one GET per item,
// taking the next item only when the last one ended (a closed loop). They
// take items until the Outage's end.
type ClosedLoopConfig struct {
	Outage
	Workers int // 0: 1
	// Deadline bounds each item (0: none), where the contender puts it.
	Deadline time.Duration
	// Sample is how often the run reads httpretry's BudgetStats; 0: 10 ms.
	Sample time.Duration
}

func (c ClosedLoopConfig) resolved() ClosedLoopConfig {
	c.Outage = c.Outage.resolved()
	c.Workers = max(c.Workers, 1)
	if c.Sample <= 0 {
		c.Sample = 10 * time.Millisecond
	}
	return c
}

// ClosedLoopResult is what one contender's closed-loop run saw.
type ClosedLoopResult struct {
	Contender string
	Config    ClosedLoopConfig // resolved
	Items
	Attempts
	// PeakParked is the most BudgetStats.Parked read at the origin's host
	// (every Config.Sample); 0 for a peer.
	PeakParked int
}

// Items is how a run's items ended. Instants are from the start of the
// run; "the outage" is [Healthy, Healthy+Down).
type Items struct {
	// Taken counts the items sent; each ended exactly once, OK with a 2xx
	// and Lost otherwise (Taken = OK + Lost).
	Taken, OK, Lost int
	// OutageTaken counts the items taken during the outage, OutageLost
	// those of them lost.
	OutageTaken, OutageLost int
	// FirstOK is when the first item ended with a 2xx at or after the
	// outage's end, from that end; -1 if none did.
	FirstOK time.Duration
}

// Attempts is what an origin saw of a run's attempts, counted by arrival.
type Attempts struct {
	// Healthy is the attempts per second in the Healthy phase.
	Healthy float64
	// Down counts the attempts that arrived during the outage.
	Down int
	// MeanDown and MaxDown are the attempts in each second of the outage,
	// on average and at most, as multiples of Healthy.
	MeanDown, MaxDown float64
	// MaxAfter is the most attempts in any 100 ms from the outage's end
	// on, as a multiple of Healthy's share of 100 ms.
	MaxAfter float64
}

// countAttempts reads arrivals, sorted, against the phases of o.
func countAttempts(o Outage, arrivals []time.Duration) Attempts {
	var a Attempts
	secs := int((o.Down + time.Second - 1) / time.Second)
	bins := make([]int, secs)
	healthy := 0
	var after []time.Duration
	for _, at := range arrivals {
		switch {
		case at < o.Healthy:
			healthy++
		case at < o.Recovered():
			a.Down++
			bins[(at-o.Healthy)/time.Second]++
		default:
			after = append(after, at)
		}
	}
	a.Healthy = float64(healthy) / o.Healthy.Seconds()
	if a.Healthy == 0 {
		return a
	}
	for _, n := range bins {
		a.MaxDown = max(a.MaxDown, float64(n)/a.Healthy)
	}
	a.MeanDown = float64(a.Down) / o.Down.Seconds() / a.Healthy
	const window = 100 * time.Millisecond
	busiest := WindowShare(after, window) * float64(len(after))
	a.MaxAfter = busiest / (a.Healthy * window.Seconds())
	return a
}

// RunClosedLoop runs cfg for c in a synctest bubble of its own, under t:
// virtual time, so a 60 s run takes what its attempts cost to compute.
func RunClosedLoop(t *testing.T, c LoopContender, cfg ClosedLoopConfig) ClosedLoopResult {
	t.Helper()
	var r ClosedLoopResult
	synctest.Test(t, func(*testing.T) { r = runClosedLoop(c, cfg) })
	return r
}

// ClosedLoopTable runs cfg for each contender of LoopContenders, in order,
// leaving out the one that puts httpretry's deadline on the context when
// cfg has no deadline. These are the figures DESIGN point 22's targets
// are asserted on.
func ClosedLoopTable(t *testing.T, cfg ClosedLoopConfig) []ClosedLoopResult {
	t.Helper()
	var out []ClosedLoopResult
	for _, c := range LoopContenders() {
		if c.Name == NameLoopHTTPRetryCtx && cfg.Deadline == 0 {
			continue
		}
		out = append(out, RunClosedLoop(t, c, cfg))
	}
	return out
}

// itemEnd is how one item ended.
type itemEnd struct {
	taken, done time.Duration
	ok          bool
}

// runClosedLoop is RunClosedLoop inside a bubble.
func runClosedLoop(c LoopContender, cfg ClosedLoopConfig) ClosedLoopResult {
	cfg = cfg.resolved()
	start := time.Now()
	origin := newLoopOrigin(cfg.Outage, start)
	client, budgets := c.New(origin, transportDeadline(c, cfg.Deadline))
	sampler := startParkedSampler(budgets, cfg.Sample, start)

	var (
		next int64 // items taken
		mu   sync.Mutex
		ends []itemEnd
		wg   sync.WaitGroup
	)
	stopAt := start.Add(cfg.End())
	for range cfg.Workers {
		wg.Go(func() {
			for time.Now().Before(stopAt) {
				atomic.AddInt64(&next, 1)
				taken := time.Since(start)
				ok := sendItem(client, contextDeadline(c, cfg.Deadline))
				mu.Lock()
				ends = append(ends, itemEnd{taken: taken, done: time.Since(start), ok: ok})
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return ClosedLoopResult{Contender: c.Name, Config: cfg,
		Items:      tallyItems(cfg.Outage, int(next), ends),
		Attempts:   countAttempts(cfg.Outage, origin.Arrivals()),
		PeakParked: sampler.stop().peak(0)}
}

// tallyItems counts ends, the items taken, against the phases of o. An
// item that ended twice, or never, would leave Taken ≠ OK + Lost, which
// the harness's tests check.
func tallyItems(o Outage, taken int, ends []itemEnd) Items {
	r := Items{Taken: taken, FirstOK: -1}
	for _, e := range ends {
		during := e.taken >= o.Healthy && e.taken < o.Recovered()
		if during {
			r.OutageTaken++
		}
		if !e.ok {
			r.Lost++
			if during {
				r.OutageLost++
			}
			continue
		}
		r.OK++
		if e.done >= o.Recovered() && (r.FirstOK < 0 || e.done-o.Recovered() < r.FirstOK) {
			r.FirstOK = e.done - o.Recovered()
		}
	}
	return r
}

// transportDeadline is the deadline c's New sets: d, unless c puts it on
// the context.
func transportDeadline(c LoopContender, d time.Duration) time.Duration {
	if c.InContext {
		return 0
	}
	return d
}

// contextDeadline is the deadline each request's context carries.
func contextDeadline(c LoopContender, d time.Duration) time.Duration {
	if !c.InContext {
		return 0
	}
	return d
}

// loopURL is where loop runs send: nothing resolves it, the origin is in
// process.
const loopURL = "http://origin.invalid/item"

// sendItem sends one item's GET, with a context deadline d unless 0, reads
// and closes the response and reports whether it was a 2xx.
func sendItem(client *http.Client, d time.Duration) bool {
	ctx, cancel := context.Background(), context.CancelFunc(func() {})
	if d > 0 {
		ctx, cancel = context.WithTimeout(ctx, d)
	}
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, loopURL, nil)
	if err != nil {
		panic(err) // a constant URL: cannot happen
	}
	resp, err := client.Do(req)
	if err != nil {
		return false
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return err == nil && resp.StatusCode >= 200 && resp.StatusCode < 300
}

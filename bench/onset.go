package bench

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// The onset scenarios measure DESIGN point 22 ("An outage earns no
// credit"): what a client sends in the first seconds of an outage that
// follows health, and how many of its failed first attempts it still
// recovers when failures are isolated. They run in virtual time, against
// an upstream in memory: RunOnsetFleet, RunOnsetLoop and
// OnsetDefaultHolds must be called in a testing/synctest bubble, and the
// Measure functions make one per run with an OnsetBubble. Outside a
// bubble a run would take the minutes it describes.

// OnsetBubble runs f in a testing/synctest bubble of its own and returns
// when every goroutine f started has ended; in a test:
//
//	func(f func()) { synctest.Test(t, func(*testing.T) { f() }) }
//
// Each run takes a bubble of its own, so that synctest reports a run that
// leaves a goroutine behind or blocks for good at that run, and every run
// starts at the same virtual instant.
type OnsetBubble func(f func())

// run returns what run returns, run in a bubble.
func (in OnsetBubble) run(run func() (OnsetRun, error)) (OnsetRun, error) {
	var (
		r   OnsetRun
		err error
	)
	in(func() { r, err = run() })
	return r, err
}

// OnsetRun is what one contender's clients did in an onset run: every
// attempt the upstream received, and the calls that completed.
type OnsetRun struct {
	Library string
	Trouble OnsetTrouble
	// Sends are the attempts, in the order they were sent.
	Sends []OnsetSend
	// Calls are the completed calls, by number; Started counts the
	// requests whose first attempt was sent.
	Calls   []OnsetCall
	Started int
}

// Amplification returns the attempts sent in [from, to) ÷ the requests
// whose first attempt was sent then, both counted by send time, from the
// start of the run; 0 when no request started then.
func (r OnsetRun) Amplification(from, to time.Duration) float64 {
	attempts, requests := 0, 0
	for _, s := range r.Sends {
		if s.At >= from && s.At < to {
			attempts++
			if s.First {
				requests++
			}
		}
	}
	if requests == 0 {
		return 0
	}
	return float64(attempts) / float64(requests)
}

// PerRequest returns the attempts of the completed calls that started in
// [from, to) ÷ their number, whenever the attempts were sent; 0 without
// one.
func (r OnsetRun) PerRequest(from, to time.Duration) float64 {
	attempts, calls := 0, 0
	for _, c := range r.Calls {
		if c.Start >= from && c.Start < to {
			attempts += c.Attempts
			calls++
		}
	}
	if calls == 0 {
		return 0
	}
	return float64(attempts) / float64(calls)
}

// OnsetRecovery counts, for one client, the completed calls whose first
// attempt failed and those of them that ended with a 2xx all the same.
type OnsetRecovery struct {
	Client            string
	Failed, Recovered int
}

// Share returns Recovered ÷ Failed, 0 when none failed.
func (r OnsetRecovery) Share() float64 {
	if r.Failed == 0 {
		return 0
	}
	return float64(r.Recovered) / float64(r.Failed)
}

// Recovery returns the run's OnsetRecovery, named client.
func (r OnsetRun) Recovery(client string) OnsetRecovery {
	rec := OnsetRecovery{Client: client}
	for _, c := range r.Calls {
		if c.FirstFailed {
			rec.Failed++
			if c.OK {
				rec.Recovered++
			}
		}
	}
	return rec
}

// The open loops of point 22, each with its own budget per client. Their
// Windows is set by each run.
var (
	// OnsetBusyClient is one client at 200 requests per second, in real
	// time.
	OnsetBusyClient = FleetConfig{Clients: 1, PerWindow: 2000, Window: RealWindow}
	// OnsetQuietFleet is the quiet fleet of the fleet benchmark: 50
	// clients, 2 requests each per budget window, compressed to 500 ms
	// windows.
	OnsetQuietFleet = FleetConfig{Clients: 50, PerWindow: 2, Window: 500 * time.Millisecond}
	// OnsetRealTimeFleet is OnsetQuietFleet in real-time proportions: 10 s
	// windows, every library's own durations.
	OnsetRealTimeFleet = FleetConfig{Clients: 50, PerWindow: 2, Window: RealWindow}
)

// RunOnsetFleet runs cfg's open loop (RunFleetClient's schedule, one
// instance of lib per client) against an upstream in memory that suffers
// tr, and returns what it received and what the calls got; calls still in
// flight at cfg.Deadline are cancelled and left out. cfg's FailRate and
// Seed are not read: tr says what fails. Call it in a synctest bubble.
func RunOnsetFleet(lib FleetLibrary, cfg FleetConfig, tr OnsetTrouble) (OnsetRun, error) {
	if err := cfg.validate(); err != nil {
		return OnsetRun{}, err
	}
	up := newOnsetOrigin(tr, 0)
	ctx, stop := context.WithDeadline(context.Background(), cfg.Deadline(up.start))
	defer stop()
	var (
		mu    sync.Mutex
		calls []FleetCall
		wg    sync.WaitGroup
	)
	for c := range cfg.Clients {
		rt := lib.New(up, cfg.Scale())
		wg.Go(func() {
			got := RunFleetClient(ctx, rt, cfg, c, onsetURL, up.start)
			mu.Lock()
			calls = append(calls, got...)
			mu.Unlock()
		})
	}
	wg.Wait()
	return up.run(lib.Name, calls), nil
}

// OnsetLoop is a closed loop: Workers workers sharing one instance of a
// library (one budget), each sending its next request as soon as its
// previous one ended, until Span has passed since the start. The upstream
// answers each attempt after Latency, which paces the loop.
type OnsetLoop struct {
	Workers int
	Span    time.Duration
	Latency time.Duration
	// Deadline bounds each request through its context; 0: none.
	Deadline time.Duration
}

// OnsetClosedLoop is the closed loop of point 22 with workers workers: each
// request under a 30 s deadline, each attempt answered after 50 ms. Its
// Span is set by each run.
func OnsetClosedLoop(workers int) OnsetLoop {
	return OnsetLoop{Workers: workers, Latency: 50 * time.Millisecond, Deadline: 30 * time.Second}
}

// onsetLoopTail is how long after its Span a closed loop without a
// deadline waits for its last requests: longer than any contender's waits.
const onsetLoopTail = time.Minute

// RunOnsetLoop runs cfg's closed loop through lib, at the pace of real
// time (scale 1), against an upstream in memory that suffers tr, and
// returns what it received and what the calls got. A call that ends at its
// Deadline is a completion that failed. Call it in a synctest bubble.
func RunOnsetLoop(lib FleetLibrary, cfg OnsetLoop, tr OnsetTrouble) (OnsetRun, error) {
	if cfg.Workers <= 0 || cfg.Span <= 0 || cfg.Latency <= 0 || cfg.Deadline < 0 {
		// Without latency, a closed loop in virtual time would send
		// without end at one instant.
		return OnsetRun{}, errors.New("bench: a closed loop needs workers, a span and a latency")
	}
	up := newOnsetOrigin(tr, cfg.Latency)
	tail := onsetLoopTail
	if cfg.Deadline > 0 {
		tail = cfg.Deadline + time.Second
	}
	ctx, stop := context.WithDeadline(context.Background(), up.start.Add(cfg.Span+tail))
	defer stop()
	client := &http.Client{Transport: lib.New(up, 1)}
	var (
		next  atomic.Int64
		mu    sync.Mutex
		calls []FleetCall
		wg    sync.WaitGroup
	)
	for range cfg.Workers {
		wg.Go(func() {
			for time.Since(up.start) < cfg.Span {
				id := int(next.Add(1) - 1)
				ok, err := onsetLoopOnce(ctx, client, id, cfg.Deadline)
				if err != nil && ctx.Err() != nil {
					return // cut by the run's end: not a completion
				}
				mu.Lock()
				calls = append(calls, FleetCall{ID: id, OK: ok})
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return up.run(lib.Name, calls), nil
}

// onsetLoopOnce is getOnce under deadline, if any.
func onsetLoopOnce(ctx context.Context, client *http.Client, id int, deadline time.Duration) (bool, error) {
	if deadline > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, deadline)
		defer cancel()
	}
	return getOnce(ctx, client, onsetURL, id)
}

package bench

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/hashicorp/go-retryablehttp"

	"github.com/httpretry/httpretry"
)

// RealWindow is the budget window of httpretry's DefaultPolicy, the span a
// fleet's compressed Window stands for: every duration of every library is
// multiplied by Window / RealWindow.
const RealWindow = 10 * time.Second

// FleetConfig describes a fleet: Clients clients, each a process of its own
// in miniature (its own base transport and its own library instance, so
// its own budget), each starting PerWindow requests per budget window,
// evenly spaced and whether or not earlier ones have returned, for
// Windows windows.
type FleetConfig struct {
	Clients   int
	PerWindow int
	Windows   int
	// Window is the compressed budget window; see RealWindow.
	Window time.Duration
	// FailRate is the share of attempts the upstream answers 503 (see
	// Blip); 1 or more is a total outage.
	FailRate float64
	// Seed picks the failing attempts when FailRate is below 1.
	Seed uint64
}

// Scale is the time compression: Window / RealWindow.
func (c FleetConfig) Scale() float64 { return float64(c.Window) / float64(RealWindow) }

// PerClient is how many requests each client starts.
func (c FleetConfig) PerClient() int { return c.PerWindow * c.Windows }

// Outage reports whether the upstream fails every attempt.
func (c FleetConfig) Outage() bool { return c.FailRate >= 1 }

// Span is how long the clients keep starting requests.
func (c FleetConfig) Span() time.Duration { return time.Duration(c.Windows) * c.Window }

// Tail is how long after the span calls may still complete: the longest
// schedule of waits of any contender (httpretry's 30 s wait budget;
// retryablehttp's 1+2+4+8 s), scaled.
func (c FleetConfig) Tail() time.Duration { return scaled(30*time.Second, c.Scale()) + c.Window }

// Deadline is when a fleet that starts at start stops: calls still in flight
// then are cancelled and left out of every figure.
func (c FleetConfig) Deadline(start time.Time) time.Time { return start.Add(c.Span() + c.Tail()) }

func (c FleetConfig) validate() error {
	if c.Clients <= 0 || c.PerWindow <= 0 || c.Windows <= 0 || c.Window <= 0 {
		return errors.New("bench: a fleet needs clients, requests, windows and a window")
	}
	return nil
}

// FleetLibrary is a contender of the fleet scenario: New builds one client's
// transport around base, with every duration of the library's defaults
// multiplied by scale, so that a compressed run keeps the ratio between
// waits, budget windows and the pace of requests.
type FleetLibrary struct {
	Name string
	New  func(base http.RoundTripper, scale float64) http.RoundTripper
}

// FleetLibraries returns the contenders of the fleet scenario. There is no
// bare row: it would read 1.00 and recover nothing.
func FleetLibraries() []FleetLibrary {
	return []FleetLibrary{
		{Name: NameHTTPRetry, New: fleetHTTPRetry},
		{Name: NameRetryableHTTP, New: fleetRetryableHTTP},
		{Name: NameFailsafe, New: func(base http.RoundTripper, _ float64) http.RoundTripper { return wrapFailsafe(base) }},
		{Name: NameFailsafeBudget, New: func(base http.RoundTripper, _ float64) http.RoundTripper { return wrapFailsafeBudget(base) }},
	}
}

// FleetLibraryByName returns the contender called name, from FleetLibraries.
func FleetLibraryByName(name string) (FleetLibrary, bool) {
	for _, l := range FleetLibraries() {
		if l.Name == name {
			return l, true
		}
	}
	return FleetLibrary{}, false
}

// fleetHTTPRetry is httpretry with scaledDefaultPolicy.
func fleetHTTPRetry(base http.RoundTripper, scale float64) http.RoundTripper {
	return httpretry.New(base, httpretry.WithPolicy(scaledDefaultPolicy(scale)))
}

// scaledDefaultPolicy is DefaultPolicy with its budget window and HoldFor,
// its backoff (full jitter from 100 ms to 2 s, 30 s wait budget) and
// MaxRetryAfter scaled; Percent, MinRetries and Hold are counts and stay
// as they are.
func scaledDefaultPolicy(scale float64) httpretry.Policy {
	p := httpretry.DefaultPolicy()
	b := httpretry.DefaultPolicy().Backoff
	p.Backoff = httpretry.ExponentialJitter(
		scaled(b.Ceiling(1), scale), scaled(b.Ceiling(httpretry.MaxRetriesLimit), scale),
	).WithWaitBudget(scaled(30*time.Second, scale))
	p.MaxRetryAfter = scaled(p.MaxRetryAfter, scale)
	p.Budget.Window = scaled(p.Budget.Window, scale)
	p.Budget.HoldFor = scaled(p.Budget.HoldFor, scale)
	return p
}

// fleetRetryableHTTP is wrapRetryableHTTP with RetryWaitMin and
// RetryWaitMax scaled. failsafe needs no scaling: by default it does not
// wait, and its budget counts executions in flight, not time.
func fleetRetryableHTTP(base http.RoundTripper, scale float64) http.RoundTripper {
	rt := wrapRetryableHTTP(base).(*retryablehttp.RoundTripper)
	rt.Client.RetryWaitMin = scaled(rt.Client.RetryWaitMin, scale)
	rt.Client.RetryWaitMax = scaled(rt.Client.RetryWaitMax, scale)
	return rt
}

func scaled(d time.Duration, scale float64) time.Duration {
	return time.Duration(float64(d) * scale)
}

// FleetCall is one client request that completed: its number and whether
// the caller got a 2xx.
type FleetCall struct {
	ID int  `json:"id"`
	OK bool `json:"ok"`
}

// RunFleetClient runs client number c of cfg against url through rt: its
// n-th request, numbered c·PerClient+n, starts at start + n·Window/PerWindow,
// shifted by c/Clients of that spacing so that the fleet's requests are
// spread evenly. It returns the calls that completed before ctx ended.
func RunFleetClient(ctx context.Context, rt http.RoundTripper, cfg FleetConfig, c int, url string, start time.Time) []FleetCall {
	client := &http.Client{Transport: rt}
	every := cfg.Window / time.Duration(cfg.PerWindow)
	offset := every * time.Duration(c) / time.Duration(cfg.Clients)
	var (
		mu    sync.Mutex
		calls []FleetCall
		wg    sync.WaitGroup
	)
	for n := range cfg.PerClient() {
		if !waitUntil(ctx, start.Add(offset+time.Duration(n)*every)) {
			break
		}
		id := c*cfg.PerClient() + n
		wg.Go(func() {
			ok, err := getOnce(ctx, client, url, id)
			if err != nil && ctx.Err() != nil {
				return // cancelled at the deadline: not a completion
			}
			mu.Lock()
			calls = append(calls, FleetCall{ID: id, OK: ok})
			mu.Unlock()
		})
	}
	wg.Wait()
	return calls
}

// FleetResult is what a fleet's calls got and what the upstream received
// for them.
type FleetResult struct {
	Library string
	// Requests is how many calls completed; Succeeded how many got a 2xx.
	Requests, Succeeded int
	// Upstream counts the attempts of the completed calls.
	Upstream int64
	// FirstFailed counts the completed calls whose first attempt got a
	// 503; Recovered those of them that ended with a 2xx all the same.
	FirstFailed, Recovered int
	Elapsed                time.Duration
}

// Amplification returns upstream attempts per completed request.
func (r FleetResult) Amplification() float64 {
	if r.Requests == 0 {
		return 0
	}
	return float64(r.Upstream) / float64(r.Requests)
}

// RecoveredShare returns Recovered ÷ FirstFailed, 0 when none failed.
func (r FleetResult) RecoveredShare() float64 {
	if r.FirstFailed == 0 {
		return 0
	}
	return float64(r.Recovered) / float64(r.FirstFailed)
}

// NewFleetUpstream starts the upstream cfg describes: down for good, or
// failing a seeded share of attempts.
func NewFleetUpstream(cfg FleetConfig) (*Upstream, error) {
	return startUpstream(newFleetUpstream(cfg))
}

// newFleetUpstream is NewFleetUpstream not yet served.
func newFleetUpstream(cfg FleetConfig) *Upstream {
	ids := cfg.Clients * cfg.PerClient()
	if cfg.Outage() {
		return newUpstream(ids, -1)
	}
	return newFlakyUpstream(ids, cfg.FailRate, cfg.Seed)
}

// SummariseFleet turns the completed calls of a fleet into its figures,
// with the attempts up counted for each of them.
func SummariseFleet(name string, cfg FleetConfig, up *Upstream, calls []FleetCall, elapsed time.Duration) FleetResult {
	r := FleetResult{Library: name, Requests: len(calls), Elapsed: elapsed}
	for _, c := range calls {
		r.Upstream += int64(up.RequestsFor(c.ID))
		if c.OK {
			r.Succeeded++
		}
		if cfg.Outage() || Blip(cfg.Seed, c.ID, 1, cfg.FailRate) {
			r.FirstFailed++
			if c.OK {
				r.Recovered++
			}
		}
	}
	return r
}

// RunFleet runs cfg in this process: every client in a goroutine of its
// own with its own base transport and its own instance of lib, against one
// loopback upstream, which it closes before it returns.
func RunFleet(lib FleetLibrary, cfg FleetConfig) (FleetResult, error) {
	if err := cfg.validate(); err != nil {
		return FleetResult{}, err
	}
	up, err := NewFleetUpstream(cfg)
	if err != nil {
		return FleetResult{}, err
	}
	defer up.Close()
	return runFleet(lib, cfg, up, func() fleetBase { return NewLoopbackBase() }), nil
}

// fleetBase is the transport a client's library wraps; the run closes its
// idle connections at the end.
type fleetBase interface {
	http.RoundTripper
	CloseIdleConnections()
}

// runFleet is RunFleet against up, each client's base made by newBase: a
// test runs a fleet in a synctest bubble over an upstream served in
// process, where requests start, budget windows roll and waits end at
// exactly the instants cfg describes, however loaded the machine.
func runFleet(lib FleetLibrary, cfg FleetConfig, up *Upstream, newBase func() fleetBase) FleetResult {
	start := time.Now()
	ctx, stop := context.WithDeadline(context.Background(), cfg.Deadline(start))
	defer stop()
	var (
		mu    sync.Mutex
		calls []FleetCall
		wg    sync.WaitGroup
	)
	for c := range cfg.Clients {
		base := newBase()
		defer base.CloseIdleConnections()
		rt := lib.New(base, cfg.Scale())
		wg.Go(func() {
			got := RunFleetClient(ctx, rt, cfg, c, up.URL, start)
			mu.Lock()
			calls = append(calls, got...)
			mu.Unlock()
		})
	}
	wg.Wait()
	return SummariseFleet(lib.Name, cfg, up, calls, time.Since(start))
}

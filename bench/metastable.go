package bench

import (
	"context"
	"errors"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/httpretry/httpretry"
)

// MetastableConfig describes one run of the metastability benchmark (DESIGN
// point 22), after the OSDI 2022 study of metastable failures, scaled: a
// server of fixed capacity that still does the work of attempts whose
// client gave up, open-loop Poisson arrivals at Load·Capacity, every
// attempt cut at Cut, and after WarmUp a trigger that cuts the capacity to
// TriggerShare of it for Trigger. The run ends Horizon after the trigger's
// start. The same Load and Seed give every client the same arrivals.
type MetastableConfig struct {
	Capacity float64       // requests per second the server does
	Cut      time.Duration // every attempt's timeout, and the no-retry client's
	Load     float64       // arrivals per second as a share of Capacity
	Seed     uint64        // of the arrivals
	WarmUp   time.Duration // healthy, before the trigger
	Trigger  time.Duration // how long the capacity is cut
	// TriggerShare is the share of Capacity left while the trigger lasts,
	// from 0 (the server stops) to 1.
	TriggerShare float64
	// Horizon is how long after the trigger's start the run measures
	// whether the server recovered; Sustain, at least MetastableWindow, is
	// how long it must stay up (see MetastableRun.Recovered).
	Horizon time.Duration
	Sustain time.Duration
}

// MetastableScenario is the benchmark's run at load with seed: capacity
// 200 requests per second, every attempt cut at 200 ms, 10 s of warm-up
// (a whole budget window of httpretry's), then capacity cut by 80 % for
// 1 s, measured over 60 s from the trigger's start, recovery sustained
// for 5 s.
func MetastableScenario(load float64, seed uint64) MetastableConfig {
	return MetastableConfig{
		Capacity: 200, Cut: 200 * time.Millisecond, Load: load, Seed: seed,
		WarmUp: 10 * time.Second, Trigger: time.Second, TriggerShare: 0.2,
		Horizon: 60 * time.Second, Sustain: 5 * time.Second,
	}
}

func (c MetastableConfig) validate() error {
	if c.Capacity <= 0 || c.Cut <= 0 || c.Load <= 0 || c.WarmUp < 0 || c.Trigger < 0 ||
		c.TriggerShare < 0 || c.TriggerShare > 1 || c.Sustain < MetastableWindow || c.Horizon < c.Trigger+c.Sustain {
		return errors.New("bench: a metastable run needs a capacity, a cut, a load, a trigger share in [0, 1], " +
			"a Sustain of at least MetastableWindow and a horizon past the trigger by Sustain")
	}
	return nil
}

// length is how long the run lasts.
func (c MetastableConfig) length() time.Duration { return c.WarmUp + c.Horizon }

// Arrivals returns when each request of the run is sent, from its start:
// a Poisson process at Load·Capacity per second drawn from Seed alone,
// so that every client of a seed and load gets the same requests.
func (c MetastableConfig) Arrivals() []time.Duration {
	r := rand.New(rand.NewPCG(c.Seed, 0x6d657461737461)) // "metasta"
	rate := c.Load * c.Capacity
	var out []time.Duration
	for t := 0.0; ; {
		t += r.ExpFloat64() / rate
		at := time.Duration(t * float64(time.Second))
		if at >= c.length() {
			return out
		}
		out = append(out, at)
	}
}

// MetastableRun is what one client did to the server in one run.
type MetastableRun struct {
	Client string
	Config MetastableConfig
	// Arrivals is when each request was sent, from the start, as
	// measured; MetastableCurve drops it.
	Arrivals []time.Duration
	// Requests were sent, Succeeded got a 2xx before the run ended.
	Requests, Succeeded int
	// Attempts is how many attempts the server admitted; Abandoned how
	// many of them it finished after their client had gone: work done for
	// nobody.
	Attempts, Abandoned int
	// Holds counts httpretry's give-ups with ReasonHold (0 for the peers).
	Holds int
	// UpBefore is whether the server was up (see MetastableWindow) over
	// every window of the warm-up.
	UpBefore bool
	// Recovered is whether the server came back after the trigger: up
	// over every window within Sustain from some instant on, and over
	// every window of the last Sustain before the horizon, so that a
	// server that came back and fell again for good has not recovered.
	// Recovery is the earliest such instant, from the trigger's start, to
	// MetastableStep.
	Recovered bool
	Recovery  time.Duration
}

// Amplification returns the attempts per request.
func (r MetastableRun) Amplification() float64 { return ratio(r.Attempts, r.Requests) }

// MetastableRunner runs one client through one MetastableConfig.
type MetastableRunner func(MetastableClient, MetastableConfig) (MetastableRun, error)

// VirtualMetastable returns the runner in virtual time: each run in a
// synctest bubble of t, the server in process as the client's base
// (no sockets), so that no figure depends on the machine's speed or load.
// It may be called from several goroutines at once.
func VirtualMetastable(t *testing.T) MetastableRunner {
	return func(c MetastableClient, cfg MetastableConfig) (MetastableRun, error) {
		if err := cfg.validate(); err != nil {
			return MetastableRun{}, err
		}
		var r MetastableRun
		synctest.Test(t, func(*testing.T) {
			srv := newMetastableServer(cfg)
			r = runMetastable(c, cfg, srv.origin(), "http://metastable.invalid/", srv, synctest.Wait)
		})
		return r, nil
	}
}

// LoopbackMetastable runs one client over loopback: the same server as
// the handler of a net/http server on 127.0.0.1, the client over a fresh
// NewLoopbackBase, in real time.
func LoopbackMetastable(c MetastableClient, cfg MetastableConfig) (MetastableRun, error) {
	if err := cfg.validate(); err != nil {
		return MetastableRun{}, err
	}
	srv := newMetastableServer(cfg)
	ts, err := StartLoopback(srv.origin())
	if err != nil {
		return MetastableRun{}, err
	}
	defer ts.Close()
	base := NewLoopbackBase()
	defer base.CloseIdleConnections()
	// Close waits for the handlers: the server has seen every client go.
	return runMetastable(c, cfg, base, ts.URL+"/", srv, ts.Close), nil
}

// runMetastable sends cfg's arrivals through c's client over base to url,
// where srv answers, and judges the run. Requests still out when the run
// ends are cancelled; settle then waits until srv has seen them go.
func runMetastable(c MetastableClient, cfg MetastableConfig, base http.RoundTripper, url string, srv *metastableServer, settle func()) MetastableRun {
	var holds atomic.Int64
	client := c.New(base, cfg.Cut, func(e httpretry.Event) {
		if e.Kind == httpretry.EventGiveUp && e.Reason == httpretry.ReasonHold {
			holds.Add(1)
		}
	})
	defer client.CloseIdleConnections()

	arrivals := cfg.Arrivals()
	start := time.Now()
	srv.begin(start)
	ctx, stop := context.WithDeadline(context.Background(), start.Add(cfg.length()))
	defer stop()
	reqs := make([]metastableRequest, 0, len(arrivals))
	var wg sync.WaitGroup
	var mu sync.Mutex
	for i, at := range arrivals {
		if !waitUntil(ctx, start.Add(at)) {
			break
		}
		sent := time.Since(start)
		wg.Go(func() {
			ok, _ := getOnce(ctx, client, url, i)
			r := metastableRequest{sent: sent, ok: ok}
			mu.Lock()
			reqs = append(reqs, r)
			mu.Unlock()
		})
	}
	wg.Wait()
	settle()

	attempts, abandoned := srv.tally()
	run := MetastableRun{
		Client: c.Name, Config: cfg,
		Requests: len(reqs), Attempts: len(attempts), Abandoned: abandoned, Holds: int(holds.Load()),
	}
	run.Arrivals = make([]time.Duration, len(reqs))
	for i, r := range reqs {
		run.Arrivals[i] = r.sent
		if r.ok {
			run.Succeeded++
		}
	}
	slices.Sort(run.Arrivals)
	tl := newMetastableTimeline(cfg, reqs, attempts)
	run.UpBefore = tl.upBefore()
	run.Recovery, run.Recovered = tl.recovery()
	return run
}

// metastableRequest is one request of a run: when it was sent, from the
// start, and whether it got a 2xx before the run ended.
type metastableRequest struct {
	sent time.Duration
	ok   bool
}

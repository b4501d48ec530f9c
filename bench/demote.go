package bench

import (
	"cmp"
	"context"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/httpretry/httpretry"
)

// DemoteConfig describes the demotion scenario (DESIGN point 18): GETs at
// Rate per second to a primary that has two fallbacks, all three healthy
// for Before, then the primary (or all three, with AllDown) failing with
// Fault for Outage, then healthy again for After. Every duration is in
// real time and runs multiplied by Scale, the request rate divided by it:
// the run keeps the ratios between the pace of requests, the outage,
// Demote's For and Max, PerTryTimeout, the backoff and the budget window.
type DemoteConfig struct {
	Fault   DemoteFault
	AllDown bool
	// Demote is the policy's; unless After is negative, a zero For or Max is
	// resolved to its default (1 s, 30 s) before it is scaled.
	Demote     httpretry.Demote
	MaxRetries int
	Rate       int // requests per real second
	Before     time.Duration
	Outage     time.Duration
	After      time.Duration
	// PerTryTimeout bounds each attempt, 0 not at all; it is what a
	// black-holed primary costs a request that tries it.
	PerTryTimeout time.Duration
	Scale         float64
}

// DemoteScenario is the primary failing with fault for 30 s among three
// origins at 50 requests per second, the figures of DESIGN point 18, with
// 2 s before and 20 s after to see it come back, compressed by scale.
// The policy is DefaultPolicy's: 3 retries and no PerTryTimeout, but for a
// black hole, which without one would hold a request for ever: 200 ms.
func DemoteScenario(fault DemoteFault, d httpretry.Demote, scale float64) DemoteConfig {
	c := DemoteConfig{
		Fault: fault, Demote: d, MaxRetries: 3, Rate: 50,
		Before: 2 * time.Second, Outage: 30 * time.Second, After: 20 * time.Second,
		Scale: scale,
	}
	if fault == FaultBlackHole {
		c.PerTryTimeout = 200 * time.Millisecond
	}
	return c
}

// DemoteAllDown is the three origins answering 503 for 10 s with
// MaxRetries 0, compressed by scale: every request must cost exactly one
// call to each, demoted or not.
func DemoteAllDown(d httpretry.Demote, scale float64) DemoteConfig {
	c := DemoteScenario(FaultUnavailable, d, scale)
	c.AllDown, c.MaxRetries = true, 0
	c.Before, c.Outage, c.After = time.Second, 10*time.Second, 0
	return c
}

// DemoteFault is how a failing origin fails.
type DemoteFault int32

// The faults of the demotion scenario; the zero DemoteFault is a healthy
// origin.
const (
	FaultRefuse      DemoteFault = iota + 1 // it refuses connections
	FaultUnavailable                        // it answers 503
	FaultBlackHole                          // it accepts requests and never answers them
)

func (f DemoteFault) String() string {
	switch f {
	case 0:
		return "healthy"
	case FaultRefuse:
		return "refuses connections"
	case FaultUnavailable:
		return "answers 503"
	case FaultBlackHole:
		return "black hole"
	}
	return "unknown fault"
}

func (c DemoteConfig) validate() error {
	if c.Rate <= 0 || c.Outage <= 0 || c.Scale <= 0 || c.Fault == 0 {
		return errors.New("bench: a demotion run needs a rate, an outage, a scale and a fault")
	}
	return nil
}

// every is the compressed interval between two requests.
func (c DemoteConfig) every() time.Duration {
	return scaled(time.Second/time.Duration(c.Rate), c.Scale)
}

// requests is how many requests the run starts.
func (c DemoteConfig) requests() int {
	return int((c.Before + c.Outage + c.After) * time.Duration(c.Rate) / time.Second)
}

// policy is the scaled DefaultPolicy with the run's retries, per-try
// timeout and demotion, and the other origins as fallbacks.
func (c DemoteConfig) policy(fallbacks []string) httpretry.Policy {
	p := scaledDefaultPolicy(c.Scale)
	p.MaxRetries = c.MaxRetries
	p.PerTryTimeout = scaled(c.PerTryTimeout, c.Scale)
	p.Fallbacks = fallbacks
	p.Demote = c.Demote
	if d := &p.Demote; d.After >= 0 {
		d.For = scaled(cmp.Or(d.For, time.Second), c.Scale)
		d.Max = scaled(cmp.Or(d.Max, 30*time.Second), c.Scale)
	}
	return p
}

// DemoteResult is what the requests due during the outage cost, and
// how soon the primary was back.
type DemoteResult struct {
	Config DemoteConfig
	// Requests is how many requests were due during the outage and
	// completed; Succeeded how many of them got a 2xx.
	Requests, Succeeded int
	// Calls counts their attempts at the base transport (refused dials
	// included), PrimaryCalls those to the primary; MinCalls and MaxCalls
	// are the fewest and most one of them made.
	Calls, PrimaryCalls, MinCalls, MaxCalls int
	// P50 and P99 are their latencies as measured, in compressed time.
	P50, P99 time.Duration
	// Slow counts those that took at least the compressed PerTryTimeout,
	// when there is one.
	Slow int
	// Back is how long after the outage's end the primary answered the
	// first attempt of a request due after it, in real time (the
	// measured span divided by Scale); Recovered is false if it never did.
	Back      time.Duration
	Recovered bool
	// MostProbes is the most first attempts to the demoted primary in
	// flight at once during the outage: each is a probe, since a demoted
	// origin goes last but for its probe.
	MostProbes int
	// Demotions and Restores count the primary's EventDemote and
	// EventRestore.
	Demotions, Restores int
	Elapsed             time.Duration
}

// PrimaryPerRequest is the attempts to the primary per request of the
// outage.
func (r DemoteResult) PrimaryPerRequest() float64 { return ratio(r.PrimaryCalls, r.Requests) }

// CallsPerRequest is the attempts per request of the outage.
func (r DemoteResult) CallsPerRequest() float64 { return ratio(r.Calls, r.Requests) }

func ratio(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// RunDemote runs cfg over loopback: three origins on 127.0.0.1, one
// NewLoopbackBase shared by every request, as one client process would.
func RunDemote(cfg DemoteConfig) (DemoteResult, error) {
	if err := cfg.validate(); err != nil {
		return DemoteResult{}, err
	}
	origins, err := startLoopbackOrigins()
	if err != nil {
		return DemoteResult{}, err
	}
	defer origins.close()
	base := NewLoopbackBase()
	defer base.CloseIdleConnections()
	return runDemote(cfg, origins.urls(), base, origins.setFault)
}

// demoteAttempt is one attempt as the base transport saw it.
type demoteAttempt struct {
	origin   int // 0 for the primary
	end      time.Time
	answered bool // a response below 500 came back
}

// demoteRecorder is the base under httpretry: it records every attempt of
// every numbered request, and counts the probes of the primary in flight.
type demoteRecorder struct {
	base    http.RoundTripper
	origins map[string]int // index by URL host
	// demoted is set from the primary's EventDemote until its
	// EventRestore; outageEnd is when the primary comes back.
	demoted   atomic.Bool
	outageEnd time.Time

	mu                  sync.Mutex
	attempts            [][]demoteAttempt // by request id
	probing, mostProbes int
}

func (b *demoteRecorder) RoundTrip(r *http.Request) (*http.Response, error) {
	id := requestID(r, len(b.attempts))
	o, known := b.origins[r.URL.Host]
	if id < 0 || !known {
		return b.base.RoundTrip(r)
	}
	b.mu.Lock()
	// Without hedging the attempts of a request are sequential: the first
	// one is the one that finds none recorded. While the primary is
	// demoted, only its probe sends a first attempt there.
	probe := o == 0 && len(b.attempts[id]) == 0 && b.demoted.Load() && time.Now().Before(b.outageEnd)
	if probe {
		b.probing++
		b.mostProbes = max(b.mostProbes, b.probing)
	}
	b.mu.Unlock()
	resp, err := b.base.RoundTrip(r)
	b.mu.Lock()
	if probe {
		b.probing--
	}
	b.attempts[id] = append(b.attempts[id], demoteAttempt{o, time.Now(), err == nil && resp.StatusCode < 500})
	b.mu.Unlock()
	return resp, err
}

// requestID reads RequestIDHeader; -1 when it is missing or out of range.
func requestID(r *http.Request, n int) int {
	id, err := strconv.Atoi(r.Header.Get(RequestIDHeader))
	if err != nil || id < 0 || id >= n {
		return -1
	}
	return id
}

// demoteCall is one request of the run that completed: when it was due,
// and when it started and ended.
type demoteCall struct {
	id              int
	due, start, end time.Time
	ok              bool
}

// runDemote runs cfg against the origins at urls, primary first, reached
// through base, with setFault switching an origin's fault: a test runs it
// in a synctest bubble over origins served in process, where requests
// start, the outage begins and ends and demotions expire at exactly the
// instants cfg describes, however loaded the machine.
func runDemote(cfg DemoteConfig, urls []string, base http.RoundTripper, setFault func(i int, f DemoteFault) error) (DemoteResult, error) {
	n := cfg.requests()
	every := cfg.every()
	start := time.Now()
	outageAt := start.Add(scaled(cfg.Before, cfg.Scale))
	backAt := outageAt.Add(scaled(cfg.Outage, cfg.Scale))
	rec := &demoteRecorder{base: base, origins: map[string]int{}, outageEnd: backAt, attempts: make([][]demoteAttempt, n)}
	for i, u := range urls {
		p, err := url.Parse(u)
		if err != nil {
			panic(err) // the origins' own URLs
		}
		rec.origins[p.Host] = i
	}
	res := DemoteResult{Config: cfg}
	var events sync.Mutex
	observe := func(e httpretry.Event) {
		if e.Origin != urls[0] {
			return
		}
		events.Lock()
		defer events.Unlock()
		switch e.Kind {
		case httpretry.EventDemote:
			res.Demotions++
			rec.demoted.Store(true)
		case httpretry.EventRestore:
			res.Restores++
			rec.demoted.Store(false)
		}
	}
	client := &http.Client{Transport: httpretry.New(rec,
		httpretry.WithPolicy(cfg.policy(urls[1:])), httpretry.WithObserver(observe))}

	// Calls in flight this long after the last start are cancelled and
	// left out: the wait budget, and a margin.
	lastStart := start.Add(time.Duration(n) * every)
	ctx, stop := context.WithDeadline(context.Background(), lastStart.Add(scaled(40*time.Second, cfg.Scale)))
	defer stop()
	var faultErr error

	var wg sync.WaitGroup
	wg.Go(func() {
		down := []int{0}
		if cfg.AllDown {
			down = []int{0, 1, 2}
		}
		steps := []struct {
			t time.Time
			f DemoteFault
		}{{outageAt, cfg.Fault}, {backAt, 0}}
		if cfg.After == 0 {
			// Down to the end: a request that starts late must find it so.
			steps = steps[:1]
		}
		for _, at := range steps {
			if !waitUntil(ctx, at.t) {
				return
			}
			for _, i := range down {
				if faultErr = setFault(i, at.f); faultErr != nil {
					stop() // an origin that cannot listen again ends the run
					return
				}
			}
		}
	})
	var (
		mu    sync.Mutex
		calls []demoteCall
	)
	for id := range n {
		// Half a spacing late, so that no request starts in the instant a
		// fault switches: in a bubble, which came first would be a toss.
		due := start.Add(time.Duration(id)*every + every/2)
		if !waitUntil(ctx, due) {
			break
		}
		wg.Go(func() {
			t0 := time.Now()
			ok, err := getOnce(ctx, client, urls[0], id)
			if err != nil && ctx.Err() != nil {
				return
			}
			mu.Lock()
			calls = append(calls, demoteCall{id, due, t0, time.Now(), ok})
			mu.Unlock()
		})
	}
	wg.Wait()
	if faultErr != nil {
		return DemoteResult{}, faultErr
	}
	res.Elapsed = time.Since(start)
	res.MostProbes = rec.mostProbes
	summariseDemote(&res, calls, rec.attempts, outageAt, backAt)
	return res, nil
}

// summariseDemote fills r's figures from the completed calls and the
// attempts of each request.
func summariseDemote(r *DemoteResult, calls []demoteCall, attempts [][]demoteAttempt, outageAt, backAt time.Time) {
	cfg := r.Config
	slow := scaled(cfg.PerTryTimeout, cfg.Scale)
	var latencies []time.Duration
	r.MinCalls = -1
	for _, c := range calls {
		// By when it was due, so that a loaded scheduler that starts a
		// request late does not move it out of the outage.
		if c.due.Before(outageAt) || !c.due.Before(backAt) {
			continue
		}
		r.Requests++
		if c.ok {
			r.Succeeded++
		}
		as := attempts[c.id]
		r.Calls += len(as)
		for _, a := range as {
			if a.origin == 0 {
				r.PrimaryCalls++
			}
		}
		r.MaxCalls = max(r.MaxCalls, len(as))
		if r.MinCalls < 0 || len(as) < r.MinCalls {
			r.MinCalls = len(as)
		}
		d := c.end.Sub(c.start)
		latencies = append(latencies, d)
		if slow > 0 && d >= slow {
			r.Slow++
		}
	}
	r.MinCalls = max(r.MinCalls, 0)
	r.P50, r.P99 = Percentile(latencies, 50), Percentile(latencies, 99)

	// The primary is back when it answers the first attempt of a request
	// due after the outage: the earliest such answer.
	var back time.Time
	for _, c := range calls {
		if as := attempts[c.id]; !c.due.Before(backAt) && len(as) > 0 && as[0].origin == 0 && as[0].answered {
			if back.IsZero() || as[0].end.Before(back) {
				back = as[0].end
			}
		}
	}
	if !back.IsZero() {
		r.Back, r.Recovered = time.Duration(float64(back.Sub(backAt))/cfg.Scale), true
	}
}

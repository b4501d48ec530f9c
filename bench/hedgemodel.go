package bench

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/failsafe-go/failsafe-go"
	"github.com/failsafe-go/failsafe-go/failsafehttp"
	"github.com/failsafe-go/failsafe-go/hedgepolicy"

	"github.com/httpretry/httpretry"
)

// HedgeModel is an origin's latency distribution: Draw turns two uniform
// numbers in [0, 1) into one attempt's time to response headers, and P95
// is the distribution's 95th percentile, the delay a learned hedge should
// come to.
type HedgeModel struct {
	Name string
	Draw func(u1, u2 float64) time.Duration
	P95  time.Duration
}

// ModelM1 returns model M1 slowed k times: 98 % of attempts take 10 ms·k
// and 2 % take 1 s·k, each within ±20 % (uniform).
func ModelM1(k float64) HedgeModel {
	name := "M1"
	if k != 1 {
		name = fmt.Sprintf("%g×M1", k)
	}
	return HedgeModel{
		Name: name,
		Draw: func(u1, u2 float64) time.Duration {
			base := 10 * time.Millisecond
			if u1 < 0.02 {
				base = time.Second
			}
			return time.Duration(float64(base) * k * (0.8 + 0.4*u2))
		},
		// 95 % of all is 0.95/0.98 of the fast mass.
		P95: time.Duration(float64(10*time.Millisecond) * k * (0.8 + 0.4*0.95/0.98)),
	}
}

// ModelS is an origin slow for everyone alike: every attempt takes 100 ms
// within ±10 % (uniform). A copy cannot help it.
func ModelS() HedgeModel {
	return HedgeModel{
		Name: "S",
		Draw: func(_, u2 float64) time.Duration {
			return time.Duration(float64(100*time.Millisecond) * (0.9 + 0.2*u2))
		},
		P95: 109 * time.Millisecond, // 100 ms·(0.9 + 0.2·0.95)
	}
}

// ModelL is a log-normal origin: median 10 ms, σ 1.
func ModelL() HedgeModel {
	const z95 = 1.6448536269514722 // Φ⁻¹(0.95)
	return HedgeModel{
		Name: "L",
		Draw: func(u1, u2 float64) time.Duration {
			// Box–Muller; 1−u1 is in (0, 1], so the log is finite.
			z := math.Sqrt(-2*math.Log(1-u1)) * math.Cos(2*math.Pi*u2)
			return time.Duration(float64(10*time.Millisecond) * math.Exp(z))
		},
		P95: time.Duration(float64(10*time.Millisecond) * math.Exp(z95)),
	}
}

// HedgeScenario is a sequence of phases, each as many requests to an
// origin following one model; the shift scenario changes the model
// between phases, with the contender's state kept.
type HedgeScenario struct {
	Name   string
	Phases []HedgeModel
}

// HedgeScenarios returns the four scenarios of DESIGN point 17: M1, M1
// shifting to 4× M1 and back, S, and L.
func HedgeScenarios() []HedgeScenario {
	return []HedgeScenario{
		{"M1", []HedgeModel{ModelM1(1)}},
		{"M1 shift", []HedgeModel{ModelM1(1), ModelM1(4), ModelM1(1)}},
		{"S", []HedgeModel{ModelS()}},
		{"L", []HedgeModel{ModelL()}},
	}
}

// ModelBase is a base RoundTripper standing for one origin: attempt n
// waits Draw(u1, u2) of the current model, the uniforms a pure function
// of the seed and n, scaled by Scale, and then answers 200 with an empty
// body, or returns the request context's error as soon as it ends. It
// counts the attempts it started.
type ModelBase struct {
	Seed  uint64
	Scale float64
	model atomic.Pointer[HedgeModel]
	calls atomic.Int64
}

// SetModel makes m the model of the attempts that start from now on.
func (b *ModelBase) SetModel(m HedgeModel) { b.model.Store(&m) }

// Calls returns how many attempts have started.
func (b *ModelBase) Calls() int64 { return b.calls.Load() }

// RoundTrip waits the drawn latency or until the request's context ends.
func (b *ModelBase) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		req.Body.Close()
	}
	n := b.calls.Add(1)
	u1, u2 := uniforms(b.Seed, uint64(n))
	t := time.NewTimer(scaled(b.model.Load().Draw(u1, u2), b.Scale))
	defer t.Stop()
	select {
	case <-t.C:
		return &http.Response{
			Status: "200 OK", StatusCode: http.StatusOK,
			Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
			Header: http.Header{}, Body: http.NoBody, Request: req,
		}, nil
	case <-req.Context().Done():
		return nil, req.Context().Err()
	}
}

// uniforms returns two numbers in [0, 1) drawn from seed and n by
// splitmix64, so that attempt n of a run meets the same latency whatever
// the contender. Attempt n takes the stream's draws 2n+1 and 2n+2, so no
// two attempts share a draw.
func uniforms(seed, n uint64) (float64, float64) {
	x := seed + 2*n*0x9e3779b97f4a7c15
	next := func() float64 {
		x += 0x9e3779b97f4a7c15
		z := x
		z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
		z = (z ^ z>>27) * 0x94d049bb133111eb
		z ^= z >> 31
		return float64(z>>11) / (1 << 53)
	}
	return next(), next()
}

// HedgeContender is one row of the hedging table: Wrap wraps the base for
// a run whose model latencies are multiplied by scale, and returns with
// it, for a contender that learns its delay, a function that reports the
// delay it would now wait before a copy (scaled back), or nil.
type HedgeContender struct {
	Name string
	Wrap func(base http.RoundTripper, scale float64) (http.RoundTripper, func() time.Duration)
}

// HedgeContenders returns the rows: no hedging, httpretry's fixed delays
// of 1, 15 and 300 ms, failsafe-go's quantile delay, and httpretry's
// learned delay. httpretry runs with
// DefaultPolicy otherwise, so its budget grants copies up to 20 % of the
// origin's requests of the last 10 s and a floor beyond that.
func HedgeContenders() []HedgeContender {
	fixed := func(after time.Duration) HedgeContender {
		return HedgeContender{
			Name: fmt.Sprintf("httpretry After %v", after),
			Wrap: func(base http.RoundTripper, scale float64) (http.RoundTripper, func() time.Duration) {
				p := httpretry.DefaultPolicy()
				p.Hedge = httpretry.Hedge{After: scaled(after, scale), Max: 1}
				return httpretry.New(base, httpretry.WithPolicy(p)), nil
			},
		}
	}
	learned := HedgeContender{
		Name: "httpretry Quantile 0.95",
		Wrap: func(base http.RoundTripper, scale float64) (http.RoundTripper, func() time.Duration) {
			p := httpretry.DefaultPolicy()
			h, delay := learnedHedge(scale)
			p.Hedge = h
			bs := httpretry.NewBudgets()
			return httpretry.New(base, httpretry.WithPolicy(p), httpretry.WithBudgets(bs)), func() time.Duration {
				return time.Duration(float64(delay(bs, hedgeHost)) / scale)
			}
		},
	}
	return []HedgeContender{
		{Name: "no hedging", Wrap: func(base http.RoundTripper, _ float64) (http.RoundTripper, func() time.Duration) {
			return httpretry.New(base), nil
		}},
		fixed(time.Millisecond),
		fixed(15 * time.Millisecond),
		fixed(300 * time.Millisecond),
		{Name: "failsafe quantile 0.95", Wrap: wrapFailsafeQuantile},
		learned,
	}
}

// wrapFailsafeQuantile hedges with failsafe-go's moving quantile: p95,
// an age of 256 executions (the span of httpretry's window) and hedging
// from the 32nd execution on (its cold start), one hedge at most, no
// budget. failsafe's delay cannot be read, so the function returned
// reports the time its latest hedge waited, taken in its OnHedge
// listener: between hedges it is stale.
func wrapFailsafeQuantile(base http.RoundTripper, scale float64) (http.RoundTripper, func() time.Duration) {
	var last atomic.Int64
	hp := hedgepolicy.NewBuilderWithDelayQuantile[*http.Response](0.95, 256, 32).
		OnHedge(func(e failsafe.ExecutionEvent[*http.Response]) { last.Store(int64(e.ElapsedTime())) }).
		Build()
	return failsafehttp.NewRoundTripper(base, hp), func() time.Duration {
		return time.Duration(float64(last.Load()) / scale)
	}
}

// hedgeHost is the origin every scenario's requests go to.
const hedgeHost = "origin.test"

// HedgeConfig sizes a run.
type HedgeConfig struct {
	Requests int     // per phase
	Clients  int     // concurrent, each sending its next request when the last returns
	Scale    float64 // multiplies every model latency and hedge delay; figures are reported scaled back
	Seed     uint64
}

// HedgePhase is what one phase of a run measured, in the models' own time
// (scaled back).
type HedgePhase struct {
	Model     HedgeModel
	Latencies []time.Duration // of every request that succeeded, in completion order
	Requests  int
	Calls     int64 // attempts the base started during the phase
	Errors    int
	// Converged is how many requests, in completion order, ended before
	// the contender's delay first came within 15 % of the model's p95:
	// 0 for a contender that reports no delay, -1 if it never did.
	Converged int
}

// RunHedge runs every phase of sc through the contender, on a fresh
// ModelBase, one phase after the other.
func RunHedge(cfg HedgeConfig, sc HedgeScenario, c HedgeContender) []HedgePhase {
	base := &ModelBase{Seed: cfg.Seed, Scale: cfg.Scale}
	base.SetModel(sc.Phases[0])
	rt, delay := c.Wrap(base, cfg.Scale)
	client := &http.Client{Transport: rt}
	out := make([]HedgePhase, 0, len(sc.Phases))
	for _, m := range sc.Phases {
		base.SetModel(m)
		out = append(out, runHedgePhase(cfg, client, base, m, delay))
	}
	return out
}

func runHedgePhase(cfg HedgeConfig, client *http.Client, base *ModelBase, m HedgeModel, delay func() time.Duration) HedgePhase {
	ph := HedgePhase{Model: m, Requests: cfg.Requests, Converged: -1}
	if delay == nil {
		ph.Converged = 0
	}
	lo, hi := time.Duration(0.85*float64(m.P95)), time.Duration(1.15*float64(m.P95))
	calls0 := base.Calls()
	var (
		mu   sync.Mutex
		next atomic.Int64
		wg   sync.WaitGroup
	)
	done := 0
	for range cfg.Clients {
		wg.Go(func() {
			for next.Add(1) <= int64(cfg.Requests) {
				d, err := hedgeRequest(client)
				var cur time.Duration
				if delay != nil {
					cur = delay()
				}
				mu.Lock()
				done++
				if err != nil {
					ph.Errors++
				} else {
					ph.Latencies = append(ph.Latencies, time.Duration(float64(d)/cfg.Scale))
				}
				if ph.Converged < 0 && cur >= lo && cur <= hi {
					ph.Converged = done
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	ph.Calls = base.Calls() - calls0
	return ph
}

// hedgeRequest sends one GET and reads its answer, with a context of its
// own that ends with the call, as a caller with a timeout has.
func hedgeRequest(client *http.Client) (time.Duration, error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+hedgeHost+"/", nil)
	if err != nil {
		return 0, err
	}
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return time.Since(start), err
}

package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// LoadConfig describes a fleet of clients sending sequential GETs through
// one library to an Upstream.
type LoadConfig struct {
	Clients   int
	PerClient int
	// Interval paces each client: its n-th request starts no earlier than
	// n·Interval after the start. 0: each request starts as soon as the
	// previous one returned.
	Interval time.Duration
	// Cap bounds the run: no request starts after it, and those still in
	// flight are cancelled and left out of every figure. 0: one minute.
	Cap time.Duration
	// DownFor is how long the upstream answers 503 from the start;
	// negative: for the whole run.
	DownFor time.Duration
}

// LoadResult is what a fleet saw and what its upstream received.
type LoadResult struct {
	Library string
	// Completed client requests (not cancelled by Cap), and how many of
	// them got a 2xx.
	Completed, Succeeded int
	// Upstream counts the attempts that reached the server for the
	// completed requests; UpstreamTotal counts every attempt.
	Upstream, UpstreamTotal int64
	// Connections the clients opened to the upstream.
	Connections int64
	Elapsed     time.Duration
	// Recovery is RecoveryTime over the completions with 100 ms steps and
	// a 95 % share; Recovered is false when the run ended below it.
	Recovery  time.Duration
	Recovered bool
	// P50 and P99 are the latencies of the completed requests.
	P50, P99 time.Duration
}

// Amplification returns upstream attempts per completed client request.
func (r LoadResult) Amplification() float64 {
	if r.Completed == 0 {
		return 0
	}
	return float64(r.Upstream) / float64(r.Completed)
}

// RecoveryStep and RecoveryShare define "the time until 95 % of requests
// succeed" for RecoveryTime.
const (
	RecoveryStep  = 100 * time.Millisecond
	RecoveryShare = 0.95
)

// RunLoad runs cfg against a fresh Upstream through lib wrapped around a
// fresh NewLoopbackBase, and closes both before it returns.
func RunLoad(lib Library, cfg LoadConfig) (LoadResult, error) {
	if cfg.Clients <= 0 || cfg.PerClient <= 0 {
		return LoadResult{}, errors.New("bench: a load needs clients and requests")
	}
	if cfg.Cap <= 0 {
		cfg.Cap = time.Minute
	}
	up, err := NewUpstream(cfg.Clients*cfg.PerClient, cfg.DownFor)
	if err != nil {
		return LoadResult{}, err
	}
	defer up.Close()
	base := NewLoopbackBase()
	defer base.CloseIdleConnections()
	return runLoad(lib, cfg, up, base), nil
}

// runLoad is RunLoad against up through base, cfg's defaults resolved: a
// test runs it in a synctest bubble over an upstream served in process,
// where the outage ends, requests start and the cap falls at exactly the
// instants cfg describes, however loaded the machine.
func runLoad(lib Library, cfg LoadConfig, up *Upstream, base http.RoundTripper) LoadResult {
	client := &http.Client{Transport: lib.Wrap(base)}

	ctx, stop := context.WithTimeout(context.Background(), cfg.Cap)
	defer stop()
	start := time.Now()
	up.Begin(start)

	var (
		mu          sync.Mutex
		completions []Completion
		latencies   []time.Duration
		completed   []int
		wg          sync.WaitGroup
	)
	for c := range cfg.Clients {
		wg.Go(func() {
			for seq := range cfg.PerClient {
				if !waitUntil(ctx, start.Add(time.Duration(seq)*cfg.Interval)) {
					return
				}
				id := c*cfg.PerClient + seq
				t0 := time.Now()
				ok, err := getOnce(ctx, client, up.URL, id)
				end := time.Now()
				if err != nil && ctx.Err() != nil {
					return // cancelled by Cap: not a completion
				}
				mu.Lock()
				completions = append(completions, Completion{At: end.Sub(start), OK: ok})
				latencies = append(latencies, end.Sub(t0))
				completed = append(completed, id)
				mu.Unlock()
			}
		})
	}
	wg.Wait()

	res := LoadResult{
		Library:       lib.Name,
		Completed:     len(completions),
		UpstreamTotal: up.Requests(),
		Connections:   up.Connections(),
		Elapsed:       time.Since(start),
		P50:           Percentile(latencies, 50),
		P99:           Percentile(latencies, 99),
	}
	for _, c := range completions {
		if c.OK {
			res.Succeeded++
		}
	}
	for _, id := range completed {
		res.Upstream += int64(up.RequestsFor(id))
	}
	res.Recovery, res.Recovered = RecoveryTime(completions, RecoveryStep, RecoveryShare)
	return res
}

// waitUntil sleeps until t and reports whether ctx is still live.
func waitUntil(ctx context.Context, t time.Time) bool {
	if d := time.Until(t); d > 0 {
		timer := time.NewTimer(d)
		defer timer.Stop()
		select {
		case <-timer.C:
		case <-ctx.Done():
		}
	}
	return ctx.Err() == nil
}

// getOnce sends one numbered GET under its own context, reads and closes
// the response and reports whether it was a 2xx. The context is cancelled
// on return, as callers with a timeout do; that also frees connections a
// library left holding a discarded response.
func getOnce(parent context.Context, client *http.Client, url string, id int) (bool, error) {
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false, err
	}
	req.Header.Set(RequestIDHeader, strconv.Itoa(id))
	resp, err := client.Do(req)
	if err != nil {
		// A library that gives up with an error (the peers do) has
		// completed the call all the same: the caller got an answer.
		return false, err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err != nil {
		return false, fmt.Errorf("bench: read response: %w", err)
	}
	return resp.StatusCode >= 200 && resp.StatusCode < 300, nil
}

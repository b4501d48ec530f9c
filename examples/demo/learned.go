package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/httpretry/httpretry"
)

// learnedTail sends 300 GETs from 8 clients to an origin where one
// attempt in fifty stalls 300 ms and the others answer in 4 to 6 ms, first
// without hedging, then with Hedge{Quantile: 0.95, Max: 1}, which learns
// the origin's 95th percentile and sends a copy of an attempt slower than
// that (DESIGN point 17). It prints the delay learned, which no one had to
// configure, and what it did to the tail and to the origin's load.
func learnedTail(*flakyServer) {
	var attempts atomic.Int64
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		k := attempts.Add(1)
		d := 4*time.Millisecond + time.Duration(k*37%21)*100*time.Microsecond
		if k%50 == 7 {
			d = 300 * time.Millisecond
		}
		select {
		case <-time.After(d):
			fmt.Fprintln(w, "ok")
		case <-r.Context().Done(): // a copy won: the client gave this attempt up
		}
	}))
	defer origin.Close()
	fmt.Fprintln(out, "  origin: 98 % of attempts answer in 4-6 ms, one in fifty stalls 300 ms; no delay is configured")
	for _, hedge := range []httpretry.Hedge{{}, {Quantile: 0.95, Max: 1}} {
		p := httpretry.DefaultPolicy()
		p.Hedge = hedge
		var l log
		bs := httpretry.NewBudgets()
		c, rt := client(p, &l, httpretry.WithBudgets(bs))
		before := attempts.Load()
		took := sendConcurrently(c, origin.URL+"/items", 300, 8)
		rt.CloseIdleConnections()
		copies, waited := 0, []time.Duration{}
		for _, e := range l.take() {
			if e.Kind == httpretry.EventHedge && e.Reason == 0 {
				copies++
				waited = append(waited, e.Delay)
			}
		}
		pct := func(q int) time.Duration {
			return took[min(len(took)*q/100, len(took)-1)].Round(100 * time.Microsecond)
		}
		if hedge.Quantile == 0 {
			fmt.Fprintf(out, "  %d GET without hedging\n", len(took))
		} else {
			var learned time.Duration
			bs.Range(func(_ string, s httpretry.BudgetStats) bool {
				learned = s.HedgeAfter // the one origin
				return false
			})
			fmt.Fprintf(out, "  %d GET with Hedge{Quantile: 0.95, Max: 1}\n", len(took))
			fmt.Fprintln(out, "    no copy until 32 answers are in, then a copy after the learned p95")
			fmt.Fprintf(out, "    learned delay (BudgetStats.HedgeAfter): %v\n", learned.Round(10*time.Microsecond))
			if len(waited) > 0 {
				slices.Sort(waited)
				fmt.Fprintf(out, "    copies waited %v to %v\n",
					waited[0].Round(10*time.Microsecond), waited[len(waited)-1].Round(10*time.Microsecond))
			}
		}
		fmt.Fprintf(out, "    => p50 %v, p99 %v, slowest %v; %d copies sent; origin saw %d calls\n",
			pct(50), pct(99), pct(100), copies, attempts.Load()-before)
	}
}

// sendConcurrently sends n GETs to url from the given number of clients,
// each sending its next request when the last returns, and returns how
// long each took, sorted.
func sendConcurrently(c *http.Client, url string, n, clients int) []time.Duration {
	var (
		mu   sync.Mutex
		took []time.Duration
		next atomic.Int64
		wg   sync.WaitGroup
	)
	for range clients {
		wg.Go(func() {
			for next.Add(1) <= int64(n) {
				start := time.Now()
				resp, err := c.Get(url)
				if err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
				mu.Lock()
				took = append(took, time.Since(start))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	slices.Sort(took)
	return took
}

// Command hedgereport measures what hedged requests do to latency and to
// the upstream's load, over loopback, and prints Markdown tables:
//
//   - a tail: one request in ten stalls 500 ms on its first arrival;
//   - a thinner tail: one request in fifty stalls 500 ms;
//   - an upstream slow for everyone: every request takes 100 ms.
//
// Each is run without hedging, with Hedge{After: 20ms, Max: 1} and with
// the learned delay Hedge{Quantile: 0.95, Max: 1} (DESIGN point 17; the
// table gives the delay it learned), with DefaultPolicy otherwise (its
// budget grants copies up to 20 % of the requests of the last 10 s, and
// beyond that share up to 10 per 10 s from a floor credit that each
// request earns back at 0.2). The learned delay sends no copy while the
// origin is cold, its first 32 answers, so a stall among the first
// requests stays in its max.
//
//	go run ./cmd/hedgereport
package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/httpretry/httpretry"
)

const (
	requests = 500
	workers  = 8
)

func main() {
	fmt.Println("## Hedging: latency and upstream load")
	fmt.Printf("\n%d GETs from %d concurrent clients over loopback, DefaultPolicy; hedged: Hedge{After: 20ms, Max: 1}, "+
		"or learned: Hedge{Quantile: 0.95, Max: 1}, with the delay it learned.\n\n", requests, workers)
	fmt.Println("| upstream | hedging | p50 | p90 | p99 | max | upstream calls | calls / request |")
	fmt.Println("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
	for _, sc := range []struct {
		name  string
		delay func(i int, first bool) time.Duration
	}{
		{"1 in 10 stalls 500 ms", func(i int, first bool) time.Duration {
			if first && i%10 == 3 {
				return 500 * time.Millisecond
			}
			return 0
		}},
		{"1 in 50 stalls 500 ms", func(i int, first bool) time.Duration {
			if first && i%50 == 3 {
				return 500 * time.Millisecond
			}
			return 0
		}},
		{"every request 100 ms", func(int, bool) time.Duration { return 100 * time.Millisecond }},
	} {
		for _, hedge := range []httpretry.Hedge{{}, {After: 20 * time.Millisecond, Max: 1}, {Quantile: 0.95, Max: 1}} {
			r, err := run(sc.delay, hedge)
			if err != nil {
				fmt.Fprintln(os.Stderr, "hedgereport:", err)
				os.Exit(1)
			}
			mode := "off"
			switch {
			case hedge.Quantile > 0:
				mode = fmt.Sprintf("learned p95: %v", r.hedgeAfter.Round(10*time.Microsecond))
			case hedge.After > 0:
				mode = "20 ms"
			}
			fmt.Printf("| %s | %s | %v | %v | %v | %v | %d | %.3f |\n", sc.name, mode,
				r.pct(50), r.pct(90), r.pct(99), r.pct(100), r.calls, float64(r.calls)/requests)
		}
	}
}

type result struct {
	latencies  []time.Duration // sorted
	calls      int64
	hedgeAfter time.Duration // the origin's learned delay at the end, BudgetStats.HedgeAfter
}

func (r result) pct(p int) time.Duration {
	i := min(len(r.latencies)*p/100, len(r.latencies)-1)
	return r.latencies[i].Round(100 * time.Microsecond)
}

// run serves requests on a fresh loopback server whose answer to request i
// is delayed by delay(i, first arrival of i), and sends them through a
// fresh httpretry transport.
func run(delay func(i int, first bool) time.Duration, hedge httpretry.Hedge) (result, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return result{}, err
	}
	var calls atomic.Int64
	var mu sync.Mutex
	seen := map[int]bool{}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		i, _ := strconv.Atoi(r.URL.Query().Get("i"))
		mu.Lock()
		first := !seen[i]
		seen[i] = true
		mu.Unlock()
		if d := delay(i, first); d > 0 {
			select {
			case <-time.After(d):
			case <-r.Context().Done():
				return
			}
		}
		io.WriteString(w, "ok")
	})}
	go srv.Serve(ln)
	defer srv.Close()

	p := httpretry.DefaultPolicy()
	p.Hedge = hedge
	base := &http.Transport{MaxIdleConnsPerHost: 2 * workers}
	defer base.CloseIdleConnections()
	bs := httpretry.NewBudgets()
	client := &http.Client{Transport: httpretry.New(base, httpretry.WithPolicy(p), httpretry.WithBudgets(bs))}
	url := "http://" + ln.Addr().String() + "/?i="

	latencies := make([]time.Duration, requests)
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= requests {
					return
				}
				start := time.Now()
				resp, err := client.Get(url + strconv.Itoa(i))
				if err != nil {
					errs <- err
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				latencies[i] = time.Since(start)
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return result{}, err
	}
	slices.Sort(latencies)
	r := result{latencies: latencies, calls: calls.Load()}
	bs.Range(func(_ string, s httpretry.BudgetStats) bool {
		r.hedgeAfter = s.HedgeAfter // the one origin
		return false
	})
	return r, nil
}

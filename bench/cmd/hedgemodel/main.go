// Command hedgemodel measures hedging against model origins (DESIGN point
// 17) and prints a Markdown table per scenario: the latency of requests
// and the upstream calls they cost, for no hedging, httpretry's fixed
// delays, failsafe-go's quantile delay and httpretry's learned delay.
//
// The base is in process (bench.ModelBase): each attempt waits a latency
// drawn from a seeded model, or returns when its context ends, so a run
// measures the hedging and not a network. Every scenario of every row
// gets a fresh base and a fresh transport.
//
//	go run ./cmd/hedgemodel                      # 20,000 requests per phase, 200 clients: about 3 minutes
//	go run ./cmd/hedgemodel -scale 0.1           # every latency and delay ÷10, figures scaled back
package main

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/httpretry/httpretry/bench"
)

func main() {
	cfg := bench.HedgeConfig{}
	flag.IntVar(&cfg.Requests, "requests", 20_000, "requests per phase")
	flag.IntVar(&cfg.Clients, "clients", 200, "concurrent clients")
	flag.Float64Var(&cfg.Scale, "scale", 1, "multiplies every model latency and hedge delay; figures are scaled back")
	flag.Uint64Var(&cfg.Seed, "seed", 1, "seed of the latency draws")
	flag.Parse()

	fmt.Println("## Hedging against model origins")
	fmt.Printf("\n%d requests per phase from %d concurrent clients, time scale %g, seed %d. "+
		"Calls / request counts the attempts the origin saw. "+
		"\"To p95\": requests, in completion order, until the row's delay first came within 15 %% of the phase's p95 "+
		"(failsafe: the wait of its latest hedge).\n", cfg.Requests, cfg.Clients, cfg.Scale, cfg.Seed)
	for _, sc := range bench.HedgeScenarios() {
		t := bench.NewTable(2, "row", "phase", "p50", "p99", "p99.9", "max", "calls / request", "to p95")
		for _, c := range bench.HedgeContenders() {
			start := time.Now()
			phases := bench.RunHedge(cfg, sc, c)
			for _, ph := range phases {
				if ph.Errors > 0 {
					fmt.Fprintf(os.Stderr, "hedgemodel: %s, %s, %s: %d requests failed\n", sc.Name, c.Name, ph.Model.Name, ph.Errors)
					os.Exit(1)
				}
				t.Add(c.Name, ph.Model.Name,
					bench.FormatDuration(bench.Percentile(ph.Latencies, 50)),
					bench.FormatDuration(bench.Percentile(ph.Latencies, 99)),
					bench.FormatDuration(bench.Percentile(ph.Latencies, 99.9)),
					bench.FormatDuration(bench.Percentile(ph.Latencies, 100)),
					fmt.Sprintf("%.3f", float64(ph.Calls)/float64(ph.Requests)),
					toP95(ph.Converged))
			}
			fmt.Fprintf(os.Stderr, "%s, %s: %v\n", sc.Name, c.Name, time.Since(start).Round(time.Millisecond))
		}
		fmt.Printf("\n### %s\n\n", sc.Name)
		t.WriteTo(os.Stdout)
	}
}

func toP95(n int) string {
	switch n {
	case 0:
		return "—"
	case -1:
		return "never"
	}
	return strconv.Itoa(n)
}

// Command benchreport runs the six comparison scenarios of the bench
// module in one process and prints each as a Markdown table: in-process
// overhead (with the cost of one resend), loopback overhead, amplification
// under an outage, herd synchronisation (with a Retry-After herd), a large
// streamed upload, and fleets of clients with budgets of their own.
//
// Usage:
//
//	go run ./cmd/benchreport [-benchtime 400ms] [-rounds 7] [-scenarios 1,2,3,4,5,6]
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/httpretry/httpretry/bench"
)

// config sizes every scenario; the defaults are the published run, and the
// test runs a much smaller one.
type config struct {
	benchtime string // per Go benchmark, as -test.benchtime takes it
	rounds    int    // Go benchmarks are repeated, interleaved, and the median kept
	scenarios map[int]bool

	clients, perClient int           // the fleet of scenario 3
	outageCap          time.Duration // bounds the total-outage run
	recoveryDown       time.Duration // how long the upstream fails before it recovers
	recoveryInterval   time.Duration // pacing of each client during the recovery run
	recoveryCap        time.Duration

	herdClients                 int
	raHerdClients, raHerdRounds int

	uploadSize   int64
	uploadRounds int

	quietFleet, blipFleet, busyFleet bench.FleetConfig
}

// scenarioCount is the number of the last scenario.
const scenarioCount = 6

func defaultConfig() config {
	return config{
		benchtime: "400ms",
		rounds:    7,
		scenarios: map[int]bool{1: true, 2: true, 3: true, 4: true, 5: true, 6: true},

		clients:   50,
		perClient: 40,
		// retryablehttp's default schedule waits 1+2+4+8 s before it gives
		// up on one request; 17 s lets every client finish one, while the
		// other libraries finish all 40 well before.
		outageCap:        17 * time.Second,
		recoveryDown:     2 * time.Second,
		recoveryInterval: 100 * time.Millisecond,
		recoveryCap:      30 * time.Second,

		herdClients:   200,
		raHerdClients: 100,
		raHerdRounds:  5,

		uploadSize:   64 << 20,
		uploadRounds: 9,

		// A window of 100 ms for 10 s: 60 windows take 6 s per library,
		// and httpretry's first backoff ceiling becomes 1 ms.
		quietFleet: quietFleet,
		blipFleet:  blipFleet,
		// 1000 requests per window is too many for this machine at 100 ms
		// windows; at 1 s the fleet sends as many per second as the quiet
		// one, and 10 windows are 10 000 requests.
		busyFleet: bench.FleetConfig{Clients: 5, PerWindow: 200, Windows: 10, Window: time.Second, FailRate: 1},
	}
}

var (
	quietFleet = bench.FleetConfig{Clients: 50, PerWindow: 2, Windows: 60, Window: 100 * time.Millisecond, FailRate: 1}
	blipFleet  = bench.FleetConfig{Clients: 50, PerWindow: 2, Windows: 60, Window: 100 * time.Millisecond, FailRate: 0.05, Seed: 1}
)

func main() {
	testing.Init() // registers -test.benchtime, which testing.Benchmark reads
	cfg := defaultConfig()
	flag.StringVar(&cfg.benchtime, "benchtime", cfg.benchtime, "time or count (Nx) per Go benchmark run")
	flag.IntVar(&cfg.rounds, "rounds", cfg.rounds, "interleaved repetitions of each Go benchmark; the median is reported")
	only := flag.String("scenarios", "1,2,3,4,5,6", "comma-separated scenario numbers to run")
	flag.Parse()
	var err error
	if cfg.scenarios, err = parseScenarios(*only); err != nil {
		fmt.Fprintln(os.Stderr, "benchreport:", err)
		os.Exit(2)
	}
	if err := run(os.Stdout, os.Stderr, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "benchreport:", err)
		os.Exit(1)
	}
}

func parseScenarios(s string) (map[int]bool, error) {
	out := map[int]bool{}
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > scenarioCount {
			return nil, fmt.Errorf("bad scenario %q: want numbers from 1 to %d", f, scenarioCount)
		}
		out[n] = true
	}
	return out, nil
}

// run prints the report to w and progress to log.
func run(w, log io.Writer, cfg config) error {
	if err := flagSet("test.benchtime", cfg.benchtime); err != nil {
		return err
	}
	start := time.Now()
	fmt.Fprintf(w, "# httpretry benchmarks\n\n")
	writeMachine(w, start)
	steps := []struct {
		n   int
		run func(io.Writer, io.Writer, config) error
	}{
		{1, runOverhead},
		{2, runLoopback},
		{3, runStorm},
		{4, runHerd},
		{5, runUpload},
		{6, runFleet},
	}
	for _, s := range steps {
		if !cfg.scenarios[s.n] {
			continue
		}
		t0 := time.Now()
		if err := s.run(w, log, cfg); err != nil {
			return fmt.Errorf("scenario %d: %w", s.n, err)
		}
		fmt.Fprintf(log, "scenario %d done in %s\n", s.n, time.Since(t0).Round(time.Millisecond))
	}
	fmt.Fprintf(w, "Total run time: %s.\n", time.Since(start).Round(time.Second))
	return nil
}

func flagSet(name, value string) error {
	if flag.Lookup(name) == nil {
		return fmt.Errorf("flag %s is not registered (testing.Init not called)", name)
	}
	return flag.Set(name, value)
}

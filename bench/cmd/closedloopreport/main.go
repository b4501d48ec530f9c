// Command closedloopreport measures batch workers and a server's handlers
// through a 20 s outage (DESIGN point 22) and prints Markdown tables: the
// items they lost, the attempts they sent the dead origin, how soon they
// heard it back and how many requests httpretry parked.
//
// Every run is in virtual time (testing/synctest) against an origin in
// process, so a 60 s run takes what its attempts cost to compute: all of
// it about 20 minutes of CPU, most of it the 64-worker rows (12,800 healthy
// items a second, and 64,000 attempts a second of outage from the bare base
// and failsafe-go, which resend without waiting). Configurations run in
// parallel subtests, as many at once as GOMAXPROCS.
//
//	go run ./cmd/closedloopreport                          # every kind, deadline and worker count
//	go run ./cmd/closedloopreport -workers 1 -kinds refused # a subset; progress goes to stderr
//
// synctest needs a *testing.T, so the program runs its work as the one
// test of testing.Main, and sends the testing package's own lines (PASS, or
// a failure) to stderr.
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

func main() {
	workers := flag.String("workers", "1,8,64", "closed-loop worker counts, comma-separated")
	kinds := flag.String("kinds", "refused,503,blackhole", "outage kinds, comma-separated: refused, 503, blackhole")
	deadlines := flag.String("deadlines", "30s,10s,0", "per-item deadlines, comma-separated; 0: none")
	open := flag.Bool("open", true, "also run the open loop")
	flag.Parse()
	plan, err := parsePlan(*workers, *kinds, *deadlines)
	if err != nil {
		fmt.Fprintln(os.Stderr, "closedloopreport:", err)
		os.Exit(2)
	}
	plan.open = *open

	out := os.Stdout
	os.Stdout = os.Stderr
	match := func(string, string) (bool, error) { return true, nil }
	testing.Main(match, []testing.InternalTest{{Name: "closedloopreport", F: func(t *testing.T) {
		report(t, out, plan)
	}}}, nil, nil)
}

// plan is what to run.
type plan struct {
	workers   []int
	kinds     []bench.OutageKind
	deadlines []time.Duration
	open      bool
}

func parsePlan(workers, kinds, deadlines string) (plan, error) {
	var p plan
	for _, s := range strings.Split(workers, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			return p, fmt.Errorf("bad worker count %q", s)
		}
		p.workers = append(p.workers, n)
	}
	names := map[string]bench.OutageKind{"refused": bench.OutageRefused, "503": bench.Outage503, "blackhole": bench.OutageBlackHole}
	for _, s := range strings.Split(kinds, ",") {
		k, ok := names[strings.TrimSpace(s)]
		if !ok {
			return p, fmt.Errorf("bad outage kind %q", s)
		}
		p.kinds = append(p.kinds, k)
	}
	for _, s := range strings.Split(deadlines, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(s))
		if err != nil || d < 0 {
			return p, fmt.Errorf("bad deadline %q", s)
		}
		p.deadlines = append(p.deadlines, d)
	}
	return p, nil
}

// closedRun is one closed-loop configuration and its rows.
type closedRun struct {
	cfg  bench.ClosedLoopConfig
	rows []bench.ClosedLoopResult
}

// report runs p, its configurations in parallel subtests (each row is a
// bubble of its own), and writes the tables to w once all are done.
func report(t *testing.T, w io.Writer, p plan) {
	var runs []*closedRun
	for _, k := range p.kinds {
		for _, d := range p.deadlines {
			for _, n := range p.workers {
				runs = append(runs, &closedRun{cfg: bench.ClosedLoopConfig{Outage: bench.Outage{Kind: k}, Workers: n, Deadline: d}})
			}
		}
	}
	var opens []bench.OpenLoopResult
	if p.open {
		opens = make([]bench.OpenLoopResult, len(p.kinds)*len(bench.OpenLoopContenders()))
	}
	t.Run("runs", func(t *testing.T) {
		for _, r := range runs {
			t.Run("closed", func(t *testing.T) {
				t.Parallel()
				start := time.Now()
				r.rows = bench.ClosedLoopTable(t, r.cfg)
				fmt.Fprintf(os.Stderr, "closed loop, %v, deadline %v, %d workers: %v\n",
					r.cfg.Kind, r.cfg.Deadline, r.cfg.Workers, time.Since(start).Round(time.Millisecond))
			})
		}
		if !p.open {
			return
		}
		for i, k := range p.kinds {
			for j, c := range bench.OpenLoopContenders() {
				t.Run("open", func(t *testing.T) {
					t.Parallel()
					cfg := bench.OpenLoopConfig{Outage: bench.Outage{Kind: k}, Deadline: 30 * time.Second}
					opens[i*len(bench.OpenLoopContenders())+j] = bench.RunOpenLoop(t, c, cfg)
				})
			}
		}
	})
	if t.Failed() {
		return
	}
	writeIntro(w)
	for _, k := range p.kinds {
		for _, d := range p.deadlines {
			writeClosed(w, k, d, runs)
		}
	}
	if p.open {
		writeOpen(w, opens)
	}
}

func writeIntro(w io.Writer) {
	fmt.Fprintf(w, "## Closed loops through an outage (DESIGN point 22)\n\n"+
		"Virtual time (testing/synctest), the origin in process: healthy (200 after 5 ms) for 10 s, "+
		"down for 20 s, healthy for 30 s. Down: refused connections, 503s (each after 1 ms) or a black hole. "+
		"W workers share a queue and take an item when the last one ended; an item is lost when it ends without a 2xx. "+
		"Every row bounds each attempt to %v: httpretry with `DefaultPolicy()`, `PerTryTimeout` and the deadline as "+
		"`Policy.Deadline` (\"ctx deadline\": on the request's context), a `Budgets` of its own per run; "+
		"go-retryablehttp's defaults with `HTTPClient.Timeout`; failsafe-go's retry policy around its timeout policy; "+
		"the bare base with `http.Client.Timeout`; the peers' deadline on the request's context.\n\n"+
		"Taken and lost count the items taken during the outage (lost: of those; \"all lost\": over the run). "+
		"Attempts are those that reached the dead origin; mean and max are per 1 s of the outage, as multiples of "+
		"the healthy rate (attempts/s in the 10 s before it). First 2xx: from the outage's end to the first item "+
		"that ended with a 2xx. Parked: the most `BudgetStats.Parked` read, every 10 ms.\n", bench.LoopPerTry)
}

func writeClosed(w io.Writer, k bench.OutageKind, d time.Duration, runs []*closedRun) {
	tb := bench.NewTable(2, "row", "W", "taken", "lost", "all lost", "attempts", "mean ×", "max ×", "healthy /s", "first 2xx", "parked")
	for _, name := range rowOrder() {
		for _, r := range runs {
			if r.cfg.Kind != k || r.cfg.Deadline != d {
				continue
			}
			for _, x := range r.rows {
				if x.Contender != name {
					continue
				}
				tb.Add(name, strconv.Itoa(r.cfg.Workers), strconv.Itoa(x.OutageTaken), strconv.Itoa(x.OutageLost),
					strconv.Itoa(x.Lost), strconv.Itoa(x.Down), fmt.Sprintf("%.3f", x.MeanDown),
					fmt.Sprintf("%.2f", x.MaxDown), fmt.Sprintf("%.0f", x.Healthy), firstOK(x.FirstOK), strconv.Itoa(x.PeakParked))
			}
		}
	}
	if len(tb.Rows) == 0 {
		return
	}
	fmt.Fprintf(w, "\n### %s, %s\n\n", kindTitle(k), deadlineTitle(d))
	tb.WriteTo(w)
}

func writeOpen(w io.Writer, rows []bench.OpenLoopResult) {
	fmt.Fprintf(w, "\n### An open loop, deadline 30 s\n\n"+
		"A server's handlers: one request every 5 ms (200/s) whatever the answers, each with `Policy.Deadline` 30 s. "+
		"Parked: the most read over the run; \"once down\": after the first request that started while the origin's "+
		"streak was at least %d and requests were parked there (\"down at\": DESIGN's first arrival, which closes "+
		"the parking; none: no such request). Max 100 ms after: the most attempts "+
		"in any 100 ms from the outage's end on, as a multiple of the healthy rate.\n\n", bench.DownStreak)
	tb := bench.NewTable(2, "outage", "row", "lost", "attempts", "mean ×", "max ×", "max 100 ms after ×", "parked", "once down", "down at")
	for _, r := range rows {
		at := "none"
		if r.DownArrival >= 0 {
			at = bench.FormatDuration(r.DownArrival)
		}
		tb.Add(r.Config.Kind.String(), r.Contender, strconv.Itoa(r.OutageLost), strconv.Itoa(r.Down),
			fmt.Sprintf("%.3f", r.MeanDown), fmt.Sprintf("%.2f", r.MaxDown), fmt.Sprintf("%.2f", r.MaxAfter),
			strconv.Itoa(r.PeakParked), strconv.Itoa(r.PeakParkedDown), at)
	}
	tb.WriteTo(w)
}

// rowOrder is the contenders in the order of LoopContenders.
func rowOrder() []string {
	var names []string
	for _, c := range bench.LoopContenders() {
		names = append(names, c.Name)
	}
	return names
}

func firstOK(d time.Duration) string {
	if d < 0 {
		return "none"
	}
	return bench.FormatDuration(d)
}

func kindTitle(k bench.OutageKind) string {
	switch k {
	case bench.OutageRefused:
		return "Refused connections"
	case bench.Outage503:
		return "503s"
	}
	return "A black hole"
}

func deadlineTitle(d time.Duration) string {
	if d == 0 {
		return "no deadline"
	}
	return "deadline " + d.String()
}

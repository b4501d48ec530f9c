// Command demotereport measures what Policy.Demote (DESIGN point 18) does
// when one of three origins fails, over loopback, and prints Markdown
// tables: the primary refusing connections, answering 503 or black-holed
// for 30 s at 50 requests per second, then healthy again, with Demote{}
// and with Demote{After: 5}; and all three answering 503 with MaxRetries
// 0. Time is compressed by -scale: every duration (the outage, Demote's
// For and Max, PerTryTimeout, the backoff, the budget window) is
// multiplied by it and the request rate divided by it.
//
//	go run ./cmd/demotereport [-scale 0.2]
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/httpretry/httpretry"
	"github.com/httpretry/httpretry/bench"
)

func main() {
	scale := flag.Float64("scale", 0.2, "time compression: every duration is multiplied by it, the request rate divided by it")
	flag.Parse()
	if err := report(os.Stdout, os.Stderr, *scale); err != nil {
		fmt.Fprintln(os.Stderr, "demotereport:", err)
		os.Exit(1)
	}
}

// rows are the two set-ups every case compares.
var rows = []httpretry.Demote{{}, {After: 5}}

func report(w, progress io.Writer, scale float64) error {
	cfg := bench.DemoteScenario(bench.FaultBlackHole, httpretry.Demote{After: -1}, scale)
	fmt.Fprintln(w, "## Demotion: a failing origin goes to the back")
	fmt.Fprintf(w, "\nThree loopback origins, GETs at %d per second to the primary with the other two as fallbacks; the primary fails for %v after %v, then is healthy for %v. DefaultPolicy (MaxRetries %d, no PerTryTimeout), with PerTryTimeout %v when the primary is a black hole. Compressed by %g: the run takes %v, at %d requests per second, with PerTryTimeout %v and Demote{After: 5} meaning For %v and Max %v. Latencies are as measured in the compressed run; \"back after recovery\" is in real time (measured ÷ %g).\n\n",
		cfg.Rate, cfg.Outage, cfg.Before, cfg.After, cfg.MaxRetries, cfg.PerTryTimeout, scale,
		scaled(cfg.Before+cfg.Outage+cfg.After, scale), int(float64(cfg.Rate)/scale), scaled(cfg.PerTryTimeout, scale),
		scaled(time.Second, scale), scaled(30*time.Second, scale), scale)
	t := bench.NewTable(2, "primary during the outage", "Demote", "primary attempts / request", "p50", "p99",
		"requests ≥ PerTryTimeout", "back after recovery", "calls / request", "most probes at once")
	for _, fault := range []bench.DemoteFault{bench.FaultRefuse, bench.FaultUnavailable, bench.FaultBlackHole} {
		for _, d := range rows {
			r, err := run(progress, bench.DemoteScenario(fault, d, scale))
			if err != nil {
				return err
			}
			back := fmt.Sprintf("not within %v", cfg.After)
			if r.Recovered {
				back = fmt.Sprintf("%.2f s", r.Back.Seconds())
			}
			probes := "—"
			if d.After > 0 {
				probes = fmt.Sprint(r.MostProbes)
			}
			slow := "—"
			if r.Config.PerTryTimeout > 0 {
				slow = fmt.Sprintf("%d of %d", r.Slow, r.Requests)
			}
			t.Add(fault.String(), demoteName(d), fmt.Sprintf("%.3f", r.PrimaryPerRequest()),
				bench.FormatDuration(r.P50), bench.FormatDuration(r.P99), slow, back, fmt.Sprintf("%.3f", r.CallsPerRequest()), probes)
		}
	}
	if _, err := t.WriteTo(w); err != nil {
		return err
	}

	all := bench.DemoteAllDown(httpretry.Demote{After: -1}, scale)
	fmt.Fprintf(w, "\nAll three origins answering 503 for %v (%v compressed), MaxRetries 0: each request must cost exactly one call to each origin, demoted or not.\n\n",
		all.Outage, scaled(all.Outage, scale))
	t = bench.NewTable(1, "Demote", "requests", "calls / request", "fewest", "most")
	for _, d := range rows {
		r, err := run(progress, bench.DemoteAllDown(d, scale))
		if err != nil {
			return err
		}
		t.Add(demoteName(d), fmt.Sprint(r.Requests), fmt.Sprintf("%.3f", r.CallsPerRequest()),
			fmt.Sprint(r.MinCalls), fmt.Sprint(r.MaxCalls))
	}
	_, err := t.WriteTo(w)
	return err
}

// run runs one case and says so on progress with its raw figures.
func run(progress io.Writer, cfg bench.DemoteConfig) (bench.DemoteResult, error) {
	r, err := bench.RunDemote(cfg)
	if err != nil {
		return r, err
	}
	fmt.Fprintf(progress, "%-20s %-18s all-down=%-5v requests=%d ok=%d calls=%d primary=%d slow=%d p50=%v p99=%v back=%v (%v) probes=%d demotions=%d restores=%d took %v\n",
		cfg.Fault, demoteName(cfg.Demote), cfg.AllDown, r.Requests, r.Succeeded, r.Calls, r.PrimaryCalls, r.Slow,
		r.P50, r.P99, r.Back.Round(time.Millisecond), r.Recovered, r.MostProbes, r.Demotions, r.Restores, r.Elapsed.Round(time.Millisecond))
	return r, nil
}

func demoteName(d httpretry.Demote) string {
	if d.After < 0 {
		return "`Demote{After: -1}`"
	}
	return fmt.Sprintf("`Demote{After: %d}`", d.After)
}

func scaled(d time.Duration, scale float64) time.Duration {
	return time.Duration(float64(d) * scale)
}

package main

import (
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/httpretry/httpretry/bench"
)

// runHerd is scenario 4: a herd fails at one instant; how bunched are the
// second attempts?
func runHerd(w, log io.Writer, cfg config) error {
	t := bench.NewTable(1, "library", "second attempts", "busiest 10 ms share", "p50 wait", "p99 wait")
	for _, l := range bench.HerdLibraries() {
		r, err := bench.RunHerd(l, cfg.herdClients)
		if err != nil {
			return err
		}
		fmt.Fprintf(log, "herd %s: %+v\n", l.Name, r)
		share, p50, p99 := "n/a", "n/a", "n/a"
		if r.Resent > 0 {
			share = fmt.Sprintf("%.3f", r.Share)
			p50, p99 = bench.FormatDuration(r.P50), bench.FormatDuration(r.P99)
		}
		t.Add(l.Name, fmt.Sprintf("%d of %d", r.Resent, r.Clients), share, p50, p99)
	}
	const trials = 1001
	ref := bench.UniformReference(cfg.herdClients, trials, 100*time.Millisecond, bench.HerdWindow, 1)
	t.Add("reference: uniform over [0, 100 ms]", strconv.Itoa(cfg.herdClients), fmt.Sprintf("%.3f", ref), "50ms", "99ms")
	fmt.Fprintf(w, "## 4. Herd synchronisation\n\n%d concurrent GETs through one transport; the upstream holds "+
		"them until all have arrived and fails them with 503 at one instant, then answers 200. \"Busiest 10 ms "+
		"share\" is the largest share of the second attempts that arrive within any 10 ms window; waits are "+
		"from the common failure to each second attempt's arrival. The reference row is the median over %d "+
		"simulated sets of %d uniform draws (seeded, reproducible).\n\n", cfg.herdClients, trials, cfg.herdClients)
	_, err := t.WriteTo(w)
	fmt.Fprintln(w)
	return err
}

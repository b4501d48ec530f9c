package main

import (
	"fmt"
	"io"
	"strconv"

	"github.com/httpretry/httpretry/bench"
)

// fleetRow is one fleet of scenario 6 and what its table calls it.
type fleetRow struct {
	name string
	cfg  bench.FleetConfig
}

func fleetRows(cfg config) []fleetRow {
	return []fleetRow{
		{"quiet, outage", cfg.quietFleet},
		{fmt.Sprintf("quiet, %.0f %% blips", 100*cfg.blipFleet.FailRate), cfg.blipFleet},
		{"busy, outage", cfg.busyFleet},
	}
}

// runFleet is scenario 6: fleets of clients, each with a budget of its
// own, in an outage and against random failures.
func runFleet(w, log io.Writer, cfg config) error {
	t := bench.NewTable(2, "fleet", "library", "requests", "upstream requests", "amplification",
		"first attempts failed", "recovered", "wall time")
	for _, row := range fleetRows(cfg) {
		for _, l := range bench.FleetLibraries() {
			r, err := bench.RunFleet(l, row.cfg)
			if err != nil {
				return fmt.Errorf("%s, %s: %w", row.name, l.Name, err)
			}
			fmt.Fprintf(log, "fleet %s %s: %+v\n", row.name, l.Name, r)
			t.Add(row.name, l.Name, strconv.Itoa(r.Requests), strconv.FormatInt(r.Upstream, 10),
				fmt.Sprintf("%.2f×", r.Amplification()), strconv.Itoa(r.FirstFailed),
				fmt.Sprintf("%.1f %%", 100*r.RecoveredShare()), bench.FormatDuration(r.Elapsed))
		}
	}
	q, bl, b := cfg.quietFleet, cfg.blipFleet, cfg.busyFleet
	fmt.Fprintf(w, "## 6. Fleets\n\n"+
		"Every client is a process of its own in miniature: its own base transport and its own instance of "+
		"the library, so its own budget, all against one loopback upstream. Each client starts its requests "+
		"at an even pace whether or not earlier ones have returned. Time is compressed: a budget window of "+
		"%s stands for httpretry's default 10 s, and every duration of every library is scaled by the same "+
		"factor (httpretry's window, backoff and wait budget; retryablehttp's RetryWaitMin and RetryWaitMax; "+
		"failsafe waits for nothing and its budget counts executions in flight).\n\n"+
		"- *quiet, outage*: %d clients × %d requests per window for %d windows; the upstream answers 503 to everything.\n"+
		"- *quiet, blips*: the same fleet; the upstream answers 503 to a seeded %.0f %% of all attempts "+
		"(the same attempts for every library).\n"+
		"- *busy, outage*: %d clients × %d requests per window of %s for %d windows; 503 to everything.\n\n"+
		"Amplification = upstream requests ÷ requests; \"recovered\" is the share of the requests whose first "+
		"attempt failed that ended with a 2xx. Calls still in flight a scaled 30 s and one window after the "+
		"last request started (%s quiet, %s busy) are cancelled and left out.\n\n",
		q.Window, q.Clients, q.PerWindow, q.Windows, 100*bl.FailRate,
		b.Clients, b.PerWindow, b.Window, b.Windows, q.Tail(), b.Tail())
	_, err := t.WriteTo(w)
	fmt.Fprintln(w)
	return err
}

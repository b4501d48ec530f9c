package main

import (
	"fmt"
	"io"
	"strconv"

	"github.com/httpretry/httpretry/bench"
)

// runStorm is scenario 3: a fleet against an upstream in total outage, then
// against one that fails for a while and recovers.
func runStorm(w, log io.Writer, cfg config) error {
	outage := bench.LoadConfig{
		Clients: cfg.clients, PerClient: cfg.perClient,
		Cap: cfg.outageCap, DownFor: -1,
	}
	t := bench.NewTable(1, "library", "client requests", "upstream requests", "amplification", "connections opened", "wall time")
	for _, l := range bench.Libraries() {
		r, err := bench.RunLoad(l, outage)
		if err != nil {
			return err
		}
		fmt.Fprintf(log, "outage %s: %+v\n", l.Name, r)
		t.Add(l.Name, strconv.Itoa(r.Completed), strconv.FormatInt(r.Upstream, 10),
			amplification(r), strconv.FormatInt(r.Connections, 10), bench.FormatDuration(r.Elapsed))
	}
	fmt.Fprintf(w, "## 3. Amplification\n\n")
	fmt.Fprintf(w, "### Total outage\n\n%d concurrent clients × %d sequential GETs, as fast as each call returns; "+
		"the upstream answers every request 503. Amplification = upstream requests ÷ completed client requests. "+
		"The run is capped at %s: a request still in flight then is cancelled and left out of both counts.\n\n",
		cfg.clients, cfg.perClient, cfg.outageCap)
	if _, err := t.WriteTo(w); err != nil {
		return err
	}

	recovery := bench.LoadConfig{
		Clients: cfg.clients, PerClient: cfg.perClient, Interval: cfg.recoveryInterval,
		Cap: cfg.recoveryCap, DownFor: cfg.recoveryDown,
	}
	t = bench.NewTable(1, "library", "client requests", "amplification", "succeeded", "95 % succeed from", "p50 latency", "p99 latency")
	for _, l := range bench.Libraries() {
		r, err := bench.RunLoad(l, recovery)
		if err != nil {
			return err
		}
		fmt.Fprintf(log, "recovery %s: %+v\n", l.Name, r)
		rec := "never"
		if r.Recovered {
			rec = bench.FormatDuration(r.Recovery)
		}
		t.Add(l.Name, strconv.Itoa(r.Completed), amplification(r),
			fmt.Sprintf("%.1f %%", 100*float64(r.Succeeded)/float64(max(r.Completed, 1))),
			rec, bench.FormatDuration(r.P50), bench.FormatDuration(r.P99))
	}
	fmt.Fprintf(w, "\n### Outage of %s, then recovery\n\n%d clients × %d GETs, each client starting its n-th request "+
		"no earlier than n × %s after the start; the upstream answers 503 for the first %s, then 200. "+
		"\"95 %% succeed from\" is the start of the first %s interval from which on at least 95 %% of the "+
		"requests completing in every interval got a 2xx (intervals where nothing completes are skipped).\n\n",
		cfg.recoveryDown, cfg.clients, cfg.perClient, cfg.recoveryInterval, cfg.recoveryDown, bench.RecoveryStep)
	_, err := t.WriteTo(w)
	fmt.Fprintln(w)
	return err
}

func amplification(r bench.LoadResult) string {
	if r.Completed == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.2f", r.Amplification())
}

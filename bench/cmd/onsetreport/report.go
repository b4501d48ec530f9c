package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/httpretry/httpretry/bench"
)

// report measures libs as plan sizes it, each run in a bubble of in, and
// writes the tables to w, the library it is measuring to progress. libs
// must hold httpretry's default and its Hold -1, whose figures the targets
// read.
func report(w, progress io.Writer, plan bench.OnsetPlan, libs []bench.FleetLibrary, in bench.OnsetBubble) error {
	def, before := slices.IndexFunc(libs, named(bench.NameHTTPRetry)), slices.IndexFunc(libs, named(bench.NameHTTPRetryNoHold))
	if def < 0 || before < 0 {
		return fmt.Errorf("the rows must include %s and %s", bench.NameHTTPRetry, bench.NameHTTPRetryNoHold)
	}
	onsets := make([]bench.OnsetFigures, len(libs))
	healths := make([]bench.OnsetHealthFigures, len(libs))
	for i, lib := range libs {
		fmt.Fprintf(progress, "onsetreport: %s\n", lib.Name)
		var err error
		if onsets[i], err = bench.MeasureOnset(lib, plan, in); err != nil {
			return err
		}
		if healths[i], err = bench.MeasureOnsetHealth(lib, plan, in); err != nil {
			return err
		}
	}
	var holds bool
	in(func() { holds = bench.OnsetDefaultHolds() })

	fmt.Fprintf(w, "## An outage earns no credit (DESIGN point 22)\n\n")
	fmt.Fprintf(w, "Virtual time (testing/synctest), the upstream in memory, a budget per client. Rows: httpretry with "+
		"DefaultPolicy (%s), with `Hold: -1` (%s, the behaviour before point 22), with `Budget.Disabled` (%s), and the peers. "+
		"The compressed quiet fleet scales every duration of every library by 500 ms / 10 s, its backoff included, as the "+
		"fleet benchmark does, but for httpretry's `HoldFor`, a real second as in DESIGN point 22's simulations. DefaultPolicy holds a resend in this build: **%s**.\n\n",
		bench.NameHTTPRetry, bench.NameHTTPRetryNoHold, bench.NameHTTPRetryNoBudget, yesNo(holds))
	if err := writeOnset(w, onsets, onsets[def]); err != nil {
		return err
	}
	if err := writeLong(w, onsets, onsets[def], plan); err != nil {
		return err
	}
	return writeHealth(w, healths, healths[def], healths[before], plan)
}

func named(name string) func(bench.FleetLibrary) bool {
	return func(l bench.FleetLibrary) bool { return l.Name == name }
}

func writeOnset(w io.Writer, figs []bench.OnsetFigures, def bench.OnsetFigures) error {
	fmt.Fprintf(w, "### The onset\n\nA total outage (503 to every attempt) after one budget window of health: upstream "+
		"attempts ÷ requests, both counted by send time, in the first spans of the outage. The busy client sends "+
		"%d requests per second, open loop; the quiet fleets are %d clients × %d requests per window, open loop, "+
		"windows of %v (compressed) and %v (real time). DESIGN's 3.32× for the quiet fleet's first 2 windows is what "+
		"it gives with the backoff left at real time and all else compressed; compressed, every resend follows its "+
		"failure within 35 ms, and each client spends its whole floor of 10 on its 4 requests of the first 2 "+
		"windows: (4 + 10) ÷ 4 = 3.50×.\n\n",
		bench.OnsetBusyClient.PerWindow/int(bench.OnsetBusyClient.Window/time.Second), bench.OnsetQuietFleet.Clients,
		bench.OnsetQuietFleet.PerWindow, bench.OnsetQuietFleet.Window, bench.OnsetRealTimeFleet.Window)
	t := bench.NewTable(1, "library", "busy, first 1 s", "busy, first 2 s", "quiet, first 2 windows",
		"quiet, first 4 windows", "real-time, first 4 windows")
	row := func(f bench.OnsetFigures) {
		t.Add(f.Library, times(f.Busy1s), times(f.Busy2s), times(f.Quiet2), times(f.Quiet4), times(f.RealTime4))
	}
	row(bench.OnsetBefore)
	row(bench.OnsetTarget)
	for _, f := range figs {
		row(f)
	}
	if _, err := t.WriteTo(w); err != nil {
		return err
	}
	writeMisses(w, "onset", bench.OnsetMisses(def, false))
	return nil
}

func writeLong(w io.Writer, figs []bench.OnsetFigures, def bench.OnsetFigures, plan bench.OnsetPlan) error {
	busy := time.Duration(plan.BusyOutage) * bench.OnsetBusyClient.Window
	fmt.Fprintf(w, "### A long outage\n\nThe same runs over the whole outage: %v for the busy client, %d windows for the "+
		"fleets (%v compressed, %v in real time). Attempts of the requests that started in the outage ÷ those "+
		"requests. DESIGN gives 1.20× before for every kind; a quiet client also spends its floor credit "+
		"(10, earning 0.2 per request), which adds about 10 ÷ its requests.\n\n",
		busy, plan.FleetOutage, time.Duration(plan.FleetOutage)*bench.OnsetQuietFleet.Window,
		time.Duration(plan.FleetOutage)*bench.OnsetRealTimeFleet.Window)
	t := bench.NewTable(1, "library", "busy client", "quiet fleet", "real-time fleet")
	row := func(f bench.OnsetFigures) {
		t.Add(f.Library, times(f.LongBusy), times(f.LongQuiet), times(f.LongRealTime))
	}
	row(bench.OnsetBefore)
	row(bench.OnsetTarget)
	for _, f := range figs {
		row(f)
	}
	if _, err := t.WriteTo(w); err != nil {
		return err
	}
	var long []string
	for _, m := range bench.OnsetMisses(def, true) {
		if strings.HasPrefix(m, "long") {
			long = append(long, m)
		}
	}
	writeMisses(w, "long outage", long)
	return nil
}

func writeHealth(w io.Writer, figs []bench.OnsetHealthFigures, def, before bench.OnsetHealthFigures, plan bench.OnsetPlan) error {
	loop := bench.OnsetClosedLoop(1)
	fmt.Fprintf(w, "### Health kept\n\nThe share of the requests whose first attempt failed that ended with a 2xx, and "+
		"(in brackets) how many failed first. The open loops as above; the closed loops send each worker's next "+
		"request when its previous one ended, under a %v deadline, the upstream answering after %v, one budget for "+
		"all workers. **Blips**: every attempt fails with %.0f %% throughout, about %d requests per run. Target: at least "+
		"%.1f %% (%.1f %% for the quiet fleet).\n\n",
		loop.Deadline, loop.Latency, 100*bench.OnsetBlipRate, plan.Blips, 100*bench.OnsetBlipTarget, 100*bench.OnsetQuietBlipTarget)
	header := append([]string{"library"}, bench.OnsetHealthClients()...)
	t := bench.NewTable(1, header...)
	for _, h := range figs {
		t.Add(append([]string{h.Library}, shares(h.Blips)...)...)
	}
	if _, err := t.WriteTo(w); err != nil {
		return err
	}

	fmt.Fprintf(w, "\n**Brownout**: every attempt fails with %.0f %% for %s (%v for the busy client, the "+
		"real-time fleet and the loops) after one of health, run again with the next seed until %d first attempts failed. Target: httpretry's "+
		"default no more than %.0f points below `Hold: -1`.\n\n",
		100*bench.OnsetBrownoutRate, windows(plan.Brownout), time.Duration(plan.Brownout)*bench.RealWindow,
		plan.BrownoutFailed, 100*bench.OnsetBrownoutMargin)
	t = bench.NewTable(1, header...)
	for _, h := range figs {
		t.Add(append([]string{h.Library}, shares(h.Brownout)...)...)
	}
	diff := []string{"default − Hold -1"}
	for i, rec := range def.Brownout {
		diff = append(diff, fmt.Sprintf("%+.2f points", 100*(rec.Share()-before.Brownout[i].Share())))
	}
	t.Add(diff...)
	if _, err := t.WriteTo(w); err != nil {
		return err
	}
	writeMisses(w, "health", bench.OnsetHealthMisses(def, before))
	return nil
}

// writeMisses writes what httpretry's default misses of part's targets.
func writeMisses(w io.Writer, part string, miss []string) {
	if len(miss) == 0 {
		fmt.Fprintf(w, "\nhttpretry's default meets every %s target.\n\n", part)
		return
	}
	fmt.Fprintf(w, "\nhttpretry's default misses %d %s targets: %s.\n\n", len(miss), part, strings.Join(miss, "; "))
}

// windows writes n budget windows.
func windows(n int) string {
	if n == 1 {
		return "1 budget window"
	}
	return fmt.Sprintf("%d budget windows", n)
}

func times(v float64) string { return fmt.Sprintf("%.2f×", v) }

func shares(recs []bench.OnsetRecovery) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = fmt.Sprintf("%.2f %% (%d)", 100*r.Share(), r.Failed)
	}
	return out
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no (the engine has not landed: the default behaves as `Hold: -1`, and its figures differ from it by jitter alone)"
}

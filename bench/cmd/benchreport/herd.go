package main

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"time"

	"github.com/httpretry/httpretry/bench"
)

// referenceTrials is how many simulated herds give the uniform reference.
const referenceTrials = 1001

// jitterSpan is the default backoff's first ceiling: full jitter draws the first
// wait uniformly from [0, jitterSpan].
const jitterSpan = 100 * time.Millisecond

// runHerd is scenario 4: a herd fails at one instant; how bunched are the
// second attempts?
func runHerd(w, log io.Writer, cfg config) error {
	t := bench.NewTable(1, "library", "second attempts", "busiest 10 ms share", "uniform reference, same count", "p50 wait", "p99 wait")
	for _, l := range bench.HerdLibraries() {
		r, err := bench.RunHerd(l, cfg.herdClients)
		if err != nil {
			return err
		}
		fmt.Fprintf(log, "herd %s: %+v\n", l.Name, r)
		share, ref, p50, p99 := "n/a", "n/a", "n/a", "n/a"
		if r.Resent > 0 {
			share = fmt.Sprintf("%.3f", r.Share)
			ref = fmt.Sprintf("%.3f", bench.UniformReference(r.Resent, referenceTrials, jitterSpan, bench.HerdWindow, 1))
			p50, p99 = bench.FormatDuration(r.P50), bench.FormatDuration(r.P99)
		}
		t.Add(l.Name, fmt.Sprintf("%d of %d", r.Resent, r.Clients), share, ref, p50, p99)
	}
	fmt.Fprintf(w, "## 4. Herd synchronisation\n\n%d concurrent GETs through one transport; the upstream holds "+
		"them until all have arrived and fails them with 503 at one instant, then answers 200. \"Busiest 10 ms "+
		"share\" is the largest share of the second attempts that arrive within any 10 ms window; waits are "+
		"from the common failure to each second attempt's arrival. The reference is the median share over %d "+
		"seeded simulations of as many draws, uniform over [0, %s]: what perfect full jitter over the first "+
		"backoff ceiling would give for that many second attempts (fewer attempts bunch more by chance).\n\n",
		cfg.herdClients, referenceTrials, jitterSpan)
	if _, err := t.WriteTo(w); err != nil {
		return err
	}
	return runRetryAfterHerd(w, log, cfg)
}

// retryAfterSeconds is what the Retry-After herd's upstream asks for.
const retryAfterSeconds = 1

// runRetryAfterHerd is the second table of scenario 4: a crowd of separate
// clients told to come back in a second, all at once.
func runRetryAfterHerd(w, log io.Writer, cfg config) error {
	ra := retryAfterSeconds * time.Second
	t := bench.NewTable(1, "library", "second attempts", "busiest 10 ms share: median (least–most)", "uniform reference",
		"earliest, after 1 s", "p50 wait", "p99 wait")
	for _, l := range bench.Libraries()[1:] { // bare does not resend
		var (
			shares   []float64
			waits    []time.Duration
			resent   int
			earliest time.Duration
		)
		for round := range max(cfg.raHerdRounds, 1) {
			r, err := bench.RunHerdWith(l, bench.HerdConfig{
				Clients: cfg.raHerdClients, RetryAfter: strconv.Itoa(retryAfterSeconds), Separate: true,
			})
			if err != nil {
				return err
			}
			fmt.Fprintf(log, "retry-after herd %s round %d: resent %d share %.3f min %v p50 %v p99 %v\n",
				l.Name, round+1, r.Resent, r.Share, r.Min, r.P50, r.P99)
			if r.Resent == 0 {
				continue
			}
			if len(waits) == 0 || r.Min < earliest {
				earliest = r.Min
			}
			shares = append(shares, r.Share)
			waits = append(waits, r.Waits...)
			resent += r.Resent
		}
		share, ref, early, p50, p99 := "n/a", "n/a", "n/a", "n/a", "n/a"
		if len(shares) > 0 {
			slices.Sort(shares)
			share = fmt.Sprintf("%.3f (%.3f–%.3f)", shares[len(shares)/2], shares[0], shares[len(shares)-1])
			ref = fmt.Sprintf("%.3f", bench.UniformReference(cfg.raHerdClients, referenceTrials, jitterSpan, bench.HerdWindow, 1))
			early = signedDuration(earliest - ra)
			p50, p99 = bench.FormatDuration(bench.Percentile(waits, 50)), bench.FormatDuration(bench.Percentile(waits, 99))
		}
		t.Add(l.Name, fmt.Sprintf("%d of %d", resent, cfg.raHerdClients*max(cfg.raHerdRounds, 1)), share, ref, early, p50, p99)
	}
	fmt.Fprintf(w, "\n### Retry-After: %d\n\n%d clients, each with its own transport and library instance (so its own "+
		"budget), send one GET each; the upstream holds them until all have arrived and fails them at one instant "+
		"with 503 and `Retry-After: %d`, then answers 200. %d rounds per library: the busiest 10 ms share is the "+
		"median over the rounds, with the least and the most; \"earliest\" is the first second attempt of any "+
		"round, less the second asked for (negative would be earlier than the server asked); the waits pool every "+
		"round. The reference is the median share of %d draws uniform over %s, the spread DESIGN point 16 draws "+
		"from for a 1 s Retry-After; such draws exceed 0.18 in about a quarter of the rounds.\n\n",
		retryAfterSeconds, cfg.raHerdClients, retryAfterSeconds, max(cfg.raHerdRounds, 1), cfg.raHerdClients, jitterSpan)
	_, err := t.WriteTo(w)
	fmt.Fprintln(w)
	return err
}

// signedDuration prints d with its sign: +3.20ms, -1.50ms.
func signedDuration(d time.Duration) string {
	if d < 0 {
		return "-" + bench.FormatDuration(-d)
	}
	return "+" + bench.FormatDuration(d)
}

package main

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strconv"
	"testing"

	"github.com/httpretry/httpretry/bench"
)

// runOverhead is scenario 1: every library around the in-process stub.
func runOverhead(w, log io.Writer, cfg config) error {
	var stub bench.StubTransport
	libs := bench.Libraries()
	t := bench.NewTable(2, "case", "library", "ns/op", "B/op", "allocs/op", "ns/op ÷ bare", "allocs − bare")
	for _, c := range bench.OverheadCases() {
		results := measure(log, c.Name, libs, cfg.rounds, func(l bench.Library) func(*testing.B) {
			return c.Bench(l.Wrap(stub))
		})
		addBenchRows(t, c.Name, libs, results)
	}
	resend := bench.ResendLibraries()
	results := measure(log, "Resend", resend, cfg.rounds, func(l bench.Library) func(*testing.B) {
		return bench.BenchResend(l)
	})
	addBenchRows(t, "Resend", resend, results)
	fmt.Fprintf(w, "## 1. In-process overhead (stub base)\n\n")
	fmt.Fprintf(w, "%d rounds of `testing.Benchmark` runs of %s each, the libraries interleaved in every round; "+
		"ns/op, B/op and allocs/op are those of the run with the median ns/op, and \"÷ bare\" is the median "+
		"of the rounds' ratios to bare's run of the same round. The same cases as `go test -bench . -benchmem` "+
		"in bench/.\n\n"+
		"Resend is the cost of one resend: a GET whose first attempt gets an empty 503 and whose second an "+
		"empty 200, resent at once and with no budget (httpretry: NoBackoff and Budget.Disabled; retryablehttp: "+
		"RetryWaitMin and RetryWaitMax 0; failsafe: its defaults, which do not wait), against `bare-twice`, "+
		"two calls of the bare stub.\n\n", cfg.rounds, cfg.benchtime)
	_, err := t.WriteTo(w)
	fmt.Fprintln(w)
	return err
}

// runLoopback is scenario 2: GETs to a net/http server on 127.0.0.1, every
// library wrapping one shared base transport.
func runLoopback(w, log io.Writer, cfg config) error {
	srv, err := bench.NewOKServer()
	if err != nil {
		return err
	}
	defer srv.Close()
	base := bench.NewLoopbackBase()
	defer base.CloseIdleConnections()
	libs := bench.Libraries()
	results := measure(log, "LoopbackGET", libs, cfg.rounds, func(l bench.Library) func(*testing.B) {
		return bench.LoopbackGET(srv.URL, l.Wrap(base))
	})
	t := bench.NewTable(2, "case", "library", "ns/op", "B/op", "allocs/op", "ns/op ÷ bare", "allocs − bare")
	addBenchRows(t, "LoopbackGET", libs, results)
	fmt.Fprintf(w, "## 2. Loopback overhead (net/http server on 127.0.0.1)\n\n")
	fmt.Fprintf(w, "%d interleaved rounds of %s runs, read as in scenario 1.\n\n", cfg.rounds, cfg.benchtime)
	_, err = t.WriteTo(w)
	fmt.Fprintln(w)
	return err
}

// measure runs one benchmark per library, rounds times with the libraries
// interleaved so that a slow spell of the machine hits them alike, and
// returns every run: results[library][round]. Every other round runs the
// libraries in reverse, so that none always runs after another (the
// loopback server, the scheduler and the GC carry state between runs),
// while httpretry stays next to bare, its reference.
func measure(log io.Writer, name string, libs []bench.Library, rounds int,
	mk func(bench.Library) func(*testing.B)) [][]testing.BenchmarkResult {
	all := make([][]testing.BenchmarkResult, len(libs))
	for r := range max(rounds, 1) {
		for k := range libs {
			i := k
			if r%2 == 1 {
				i = len(libs) - 1 - k
			}
			l := libs[i]
			res := testing.Benchmark(mk(l))
			fmt.Fprintf(log, "round %d %s/%s\t%s\t%s\n", r+1, name, l.Name, res.String(), res.MemString())
			all[i] = append(all[i], res)
		}
	}
	return all
}

// addBenchRows adds one row per library: the run with the median ns/op,
// and the median over rounds of its ratio to the first library (bare) in
// the same round. Pairing by round matters on a virtual machine whose
// speed drifts between runs: two medians taken apart could come from
// different spells.
func addBenchRows(t *bench.Table, name string, libs []bench.Library, all [][]testing.BenchmarkResult) {
	bare := all[0]
	for i, l := range libs {
		med, bareMed := medianRun(all[i]), medianRun(bare)
		t.Add(name, l.Name,
			strconv.FormatInt(med.NsPerOp(), 10),
			strconv.FormatInt(med.AllocedBytesPerOp(), 10),
			strconv.FormatInt(med.AllocsPerOp(), 10),
			fmt.Sprintf("%.2f×", bench.MedianRatio(nsPerOp(all[i]), nsPerOp(bare))),
			fmt.Sprintf("%+d", med.AllocsPerOp()-bareMed.AllocsPerOp()),
		)
	}
}

// medianRun returns the run with the median ns/op.
func medianRun(rs []testing.BenchmarkResult) testing.BenchmarkResult {
	s := slices.SortedFunc(slices.Values(rs), func(a, b testing.BenchmarkResult) int {
		return cmp.Compare(a.NsPerOp(), b.NsPerOp())
	})
	return s[len(s)/2]
}

func nsPerOp(rs []testing.BenchmarkResult) []float64 {
	out := make([]float64, len(rs))
	for i, r := range rs {
		out[i] = float64(r.NsPerOp())
	}
	return out
}

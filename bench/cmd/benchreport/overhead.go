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
	fmt.Fprintf(w, "## 1. In-process overhead (stub base)\n\n")
	fmt.Fprintf(w, "Median of %d interleaved `testing.Benchmark` runs of %s each; "+
		"the same cases as `go test -bench . -benchmem` in bench/.\n\n", cfg.rounds, cfg.benchtime)
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
	fmt.Fprintf(w, "Median of %d interleaved runs of %s each.\n\n", cfg.rounds, cfg.benchtime)
	_, err = t.WriteTo(w)
	fmt.Fprintln(w)
	return err
}

// measure runs one benchmark per library, rounds times with the libraries
// interleaved so that a slow spell of the machine hits them alike, and
// returns for each library the run with the median ns/op.
func measure(log io.Writer, name string, libs []bench.Library, rounds int,
	mk func(bench.Library) func(*testing.B)) []testing.BenchmarkResult {
	all := make([][]testing.BenchmarkResult, len(libs))
	for r := range max(rounds, 1) {
		for i, l := range libs {
			res := testing.Benchmark(mk(l))
			fmt.Fprintf(log, "round %d %s/%s\t%s\t%s\n", r+1, name, l.Name, res.String(), res.MemString())
			all[i] = append(all[i], res)
		}
	}
	out := make([]testing.BenchmarkResult, len(libs))
	for i, rs := range all {
		slices.SortFunc(rs, func(a, b testing.BenchmarkResult) int {
			return cmp.Compare(a.NsPerOp(), b.NsPerOp())
		})
		out[i] = rs[len(rs)/2]
	}
	return out
}

// addBenchRows adds one row per library with its ratios to the first,
// which is bare.
func addBenchRows(t *bench.Table, name string, libs []bench.Library, rs []testing.BenchmarkResult) {
	bare := rs[0]
	for i, l := range libs {
		r := rs[i]
		t.Add(name, l.Name,
			strconv.FormatInt(r.NsPerOp(), 10),
			strconv.FormatInt(r.AllocedBytesPerOp(), 10),
			strconv.FormatInt(r.AllocsPerOp(), 10),
			ratio(float64(r.NsPerOp()), float64(bare.NsPerOp())),
			fmt.Sprintf("%+d", r.AllocsPerOp()-bare.AllocsPerOp()),
		)
	}
}

// ratio prints a/b with two decimals, or "n/a" when b is 0.
func ratio(a, b float64) string {
	if b == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.2f×", a/b)
}

// Command onsetreport measures DESIGN point 22 ("An outage earns no
// credit"), the first two bullets of what it must achieve, and prints
// Markdown tables: what each contender sends in the first seconds of a
// total outage that follows health and over a long one, and how many of
// its failed first attempts it recovers under isolated 5 % blips and a
// 30 % brownout. Every run is in virtual time (testing/synctest) against
// an upstream in memory, so the figures do not depend on the machine; the
// full plan takes about a minute of CPU.
//
//	go run ./cmd/onsetreport [-short]
package main

import (
	"flag"
	"fmt"
	"os"
	"testing"
	"testing/synctest"

	"github.com/httpretry/httpretry/bench"
)

func main() {
	short := flag.Bool("short", false, "the short plan of the tests: the onset only, small blip and brownout runs")
	flag.Parse()
	plan := bench.FullOnsetPlan
	if *short {
		plan = bench.ShortOnsetPlan
	}
	// A synctest bubble needs a *testing.T: testing.Main runs the report as
	// the one test of this program, each run in a bubble of its own. It prints
	// PASS or FAIL on os.Stdout, which must not end up in the report, so the
	// report gets the real stdout and testing a discarded one.
	out := os.Stdout
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		fmt.Fprintln(os.Stderr, "onsetreport:", err)
		os.Exit(1)
	}
	os.Stdout = null
	testing.Main(func(string, string) (bool, error) { return true, nil }, []testing.InternalTest{{
		Name: "onsetreport",
		F: func(t *testing.T) {
			if err := report(out, os.Stderr, plan(), bench.OnsetLibraries(), bubble(t)); err != nil {
				fmt.Fprintln(os.Stderr, "onsetreport:", err)
				t.Fail()
			}
		},
	}}, nil, nil)
}

// bubble is a bench.OnsetBubble of t.
func bubble(t *testing.T) bench.OnsetBubble {
	return func(f func()) { synctest.Test(t, func(*testing.T) { f() }) }
}

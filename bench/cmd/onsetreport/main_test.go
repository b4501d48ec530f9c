package main

import (
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/httpretry/httpretry/bench"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func lib(t *testing.T, name string) bench.FleetLibrary {
	t.Helper()
	l, ok := bench.OnsetLibraryByName(name)
	require.True(t, ok, name)
	return l
}

// tinyPlan checks the plumbing, not the figures.
var tinyPlan = bench.OnsetPlan{BusyOutage: 1, FleetOutage: 4, Blips: 200, Brownout: 1, BrownoutFailed: 10, Seed: 1}

func TestReportPrintsEveryTable(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the busy client alone sends some 20 000 requests per library, seconds under -race")
	}
	// No failsafe row: under -race, its goroutine per attempt (merging
	// contexts), after the other rows' runs in the same process, made the
	// race runtime fail an internal CHECK (tsan_rtl.cpp:346) in 5 of 8 runs.
	libs := []bench.FleetLibrary{lib(t, bench.NameHTTPRetry), lib(t, bench.NameHTTPRetryNoHold), lib(t, bench.NameHTTPRetryNoBudget)}
	var out strings.Builder
	require.NoError(t, report(&out, io.Discard, tinyPlan, libs, bubble(t)))
	s := out.String()
	for _, want := range []string{"### The onset", "### A long outage", "### Health kept", "**Brownout**",
		"| before (DESIGN)", "| target ", "| httpretry-nobudget ", "| default − Hold -1"} {
		assert.Contains(t, s, want)
	}
	assert.Equal(t, 4, strings.Count(s, "| library"), "four tables")
	// With its budget off, httpretry sends each request of the outage 4
	// times.
	assert.Contains(t, s, "| httpretry-nobudget |       4.00× |       4.00× |           4.00× |")
}

func TestReportNeedsDefaultAndNoHold(t *testing.T) {
	err := report(io.Discard, io.Discard, tinyPlan, []bench.FleetLibrary{lib(t, bench.NameHTTPRetry)}, bubble(t))
	assert.ErrorContains(t, err, bench.NameHTTPRetryNoHold)
}

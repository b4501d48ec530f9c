package main

import (
	"flag"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/httpretry/httpretry/bench"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// quickConfig runs every scenario at a toy size: it checks the plumbing,
// not the figures.
func quickConfig() config {
	return config{
		benchtime: "1x",
		rounds:    1,
		scenarios: map[int]bool{1: true, 2: true, 3: true, 4: true, 5: true, 6: true},

		clients: 2, perClient: 3,
		outageCap:        300 * time.Millisecond,
		recoveryDown:     50 * time.Millisecond,
		recoveryInterval: 20 * time.Millisecond,
		recoveryCap:      5 * time.Second,

		herdClients:   10,
		raHerdClients: 5,
		raHerdRounds:  2,

		uploadSize:   1 << 20,
		uploadRounds: 1,

		quietFleet: bench.FleetConfig{Clients: 3, PerWindow: 2, Windows: 2, Window: 20 * time.Millisecond, FailRate: 1},
		blipFleet:  bench.FleetConfig{Clients: 3, PerWindow: 2, Windows: 2, Window: 20 * time.Millisecond, FailRate: 0.5, Seed: 1},
		busyFleet:  bench.FleetConfig{Clients: 2, PerWindow: 5, Windows: 1, Window: 20 * time.Millisecond, FailRate: 1},
	}
}

func TestRunPrintsEveryScenario(t *testing.T) {
	old := flag.Lookup("test.benchtime").Value.String()
	defer func() { _ = flag.Set("test.benchtime", old) }()

	var out strings.Builder
	require.NoError(t, run(&out, io.Discard, quickConfig()))
	report := out.String()
	for _, h := range []string{
		"## 1. In-process overhead", "## 2. Loopback overhead", "## 3. Amplification",
		"### Total outage", "## 4. Herd synchronisation", "## 5. Streamed upload", "## 6. Fleets", "### Retry-After: 1",
		"- machine: ", "- Go: go",
	} {
		assert.Contains(t, report, h)
	}
	for _, row := range []string{"| GET ", "| POSTGetBody ", "| POSTReader ", "| Resend ", "| bare-twice ", "| LoopbackGET ", "| httpretry-nobudget ", "| failsafe-budget ",
		"| quiet, outage ", "| quiet, 50 % blips ", "| busy, outage "} {
		assert.Contains(t, report, row)
	}
	// With a 300 ms cap retryablehttp (1 s first wait) completes nothing.
	assert.Regexp(t, `\| retryablehttp +\| +0 \| +0 \| +n/a \|`, report)
}

func TestParseScenarios(t *testing.T) {
	got, err := parseScenarios("1, 3,5")
	require.NoError(t, err)
	assert.Equal(t, map[int]bool{1: true, 3: true, 5: true}, got)
	for _, bad := range []string{"", "0", "7", "x", "1,,2"} {
		_, err := parseScenarios(bad)
		assert.Error(t, err, bad)
	}
}

package main

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/httpretry/httpretry/bench"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestParseOptions(t *testing.T) {
	opt, err := parseOptions(false, "", 0, "", 0)
	require.NoError(t, err)
	assert.Len(t, opt.loads, 15)
	assert.InDelta(t, 0.25, opt.loads[0], 1e-9)
	assert.InDelta(t, 0.95, opt.loads[14], 1e-9)
	assert.Len(t, opt.seeds, 9)
	assert.Len(t, opt.clients, len(bench.MetastableClients()))
	assert.Positive(t, opt.parallel)

	opt, err = parseOptions(true, "", 0, "no-retry,failsafe", 0)
	require.NoError(t, err)
	assert.Equal(t, tableLoads, opt.loads)
	assert.Equal(t, []uint64{1}, opt.seeds)
	assert.Equal(t, 1, opt.parallel)
	require.Len(t, opt.clients, 2)
	assert.Equal(t, bench.NameNoRetry, opt.clients[0].Name)

	opt, err = parseOptions(false, "0.8, 0.5", 3, "", 4)
	require.NoError(t, err)
	assert.Equal(t, []float64{0.5, 0.8}, opt.loads)
	assert.Equal(t, []uint64{1, 2, 3}, opt.seeds)
	assert.Equal(t, 4, opt.parallel)

	_, err = parseOptions(false, "0.5,x", 0, "", 0)
	assert.Error(t, err)
	_, err = parseOptions(false, "", 0, "nobody", 0)
	assert.Error(t, err)
}

func TestReportInVirtualTime(t *testing.T) {
	// One short run per client at one load: the table has a row per
	// client, and no-retry recovers at 0.5.
	opt, err := parseOptions(false, "0.5", 1, "no-retry,httpretry", 1)
	require.NoError(t, err)
	opt.cfg = bench.MetastableScenario(0, 0)
	opt.cfg.WarmUp, opt.cfg.Horizon = 2*time.Second, 10*time.Second
	var out, progress strings.Builder
	require.NoError(t, report(&out, &progress, bench.VirtualMetastable(t), opt))
	assert.Contains(t, out.String(), "| no-retry  |")
	assert.Contains(t, out.String(), "| httpretry |")
	assert.Regexp(t, `\| no-retry +\| +0\.50 \| +— \| +[0-9.]+ s \(1/1\) \|`, out.String())
	assert.Equal(t, 2, strings.Count(progress.String(), "\n"))
}

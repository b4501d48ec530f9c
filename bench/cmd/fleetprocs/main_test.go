package main

import (
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

func TestRunAgreesInProcessAndAsProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a binary and starts 8 processes")
	}
	// 2 clients × 2 requests in an outage: every library sends every
	// request 1+MaxRetries times (httpretry's floor covers 4 × 3 resends),
	// whether its clients are goroutines or processes.
	cfg := bench.FleetConfig{Clients: 2, PerWindow: 2, Windows: 1, Window: 100 * time.Millisecond, FailRate: 1}
	var out strings.Builder
	require.NoError(t, run(&out, io.Discard, cfg))
	for _, row := range []string{
		`| httpretry       |                    4 |       16 |         4.00× |                     4 |       16 |         4.00× |`,
		`| retryablehttp   |                    4 |       20 |         5.00× |                     4 |       20 |         5.00× |`,
		`| failsafe        |                    4 |       12 |         3.00× |                     4 |       12 |         3.00× |`,
	} {
		assert.Contains(t, out.String(), row)
	}
}

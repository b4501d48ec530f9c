package bench

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func lib(t *testing.T, name string) Library {
	t.Helper()
	l, ok := LibraryByName(name)
	require.True(t, ok, name)
	return l
}

func TestRunLoadOutage(t *testing.T) {
	cfg := LoadConfig{Clients: 4, PerClient: 5, DownFor: -1, Cap: 20 * time.Second}
	tests := []struct {
		lib      string
		min, max float64
	}{
		{NameBare, 1, 1},
		// 20 requests: the budget's floor of 10 resends dominates, and no
		// request goes past 1+MaxRetries attempts.
		{NameHTTPRetry, 1, 1.5},
		{NameFailsafe, 3, 3},
	}
	for _, tt := range tests {
		t.Run(tt.lib, func(t *testing.T) {
			r, err := RunLoad(lib(t, tt.lib), cfg)
			require.NoError(t, err)
			assert.Equal(t, 20, r.Completed)
			assert.Zero(t, r.Succeeded)
			assert.Equal(t, r.Upstream, r.UpstreamTotal, "nothing was cancelled")
			assert.GreaterOrEqual(t, r.Amplification(), tt.min)
			assert.LessOrEqual(t, r.Amplification(), tt.max)
			assert.False(t, r.Recovered)
		})
	}
}

func TestRunLoadCapCancelsAndExcludes(t *testing.T) {
	// retryablehttp's first wait is 1 s: with a 500 ms cap no call
	// completes, and nothing may be left running.
	start := time.Now()
	r, err := RunLoad(lib(t, NameRetryableHTTP), LoadConfig{Clients: 2, PerClient: 3, DownFor: -1, Cap: 500 * time.Millisecond})
	require.NoError(t, err)
	assert.Less(t, time.Since(start), 2*time.Second)
	assert.Zero(t, r.Completed)
	assert.Zero(t, r.Upstream)
	assert.Equal(t, int64(2), r.UpstreamTotal, "each client's first attempt arrived")
	assert.Zero(t, r.Amplification(), "no completed call: no ratio")
}

func TestRunLoadRecovery(t *testing.T) {
	cfg := LoadConfig{Clients: 3, PerClient: 10, Interval: 20 * time.Millisecond, DownFor: 100 * time.Millisecond, Cap: 10 * time.Second}
	r, err := RunLoad(lib(t, NameBare), cfg)
	require.NoError(t, err)
	assert.Equal(t, 30, r.Completed)
	assert.Greater(t, r.Succeeded, 0)
	assert.Less(t, r.Succeeded, 30)
	require.True(t, r.Recovered)
	// Every call completing in the first interval failed; a busy machine
	// may push a failure or two into the next ones.
	assert.GreaterOrEqual(t, r.Recovery, 100*time.Millisecond)
	assert.LessOrEqual(t, r.Recovery, 500*time.Millisecond)
	assert.GreaterOrEqual(t, r.Elapsed, 180*time.Millisecond, "paced: the 10th request starts at 180 ms")
}

func TestRunLoadRejectsEmptyFleet(t *testing.T) {
	_, err := RunLoad(lib(t, NameBare), LoadConfig{})
	assert.Error(t, err)
}

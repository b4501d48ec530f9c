package bench

import (
	"net/http"

	"github.com/httpretry/httpretry"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func lib(t *testing.T, name string) Library {
	t.Helper()
	skipFailsafeUnderRace(t, name)
	l, ok := LibraryByName(name)
	if !ok && name == NameHTTPRetryNoHold {
		l, ok = Library{Name: name, Wrap: func(base http.RoundTripper) http.RoundTripper {
			p := httpretry.DefaultPolicy()
			p.Budget.Hold = -1
			return httpretry.New(base, httpretry.WithPolicy(p))
		}}, true
	}
	require.True(t, ok, name)
	return l
}

// runLoadInBubble runs cfg as RunLoad does, but in a synctest bubble over
// an upstream served in process, for the reasons runFleetInBubble gives:
// over loopback, a loaded machine moved completions across the outage's
// end and first attempts past the cap.
func runLoadInBubble(t *testing.T, l Library, cfg LoadConfig) LoadResult {
	t.Helper()
	require.Positive(t, cfg.Cap)
	var r LoadResult
	synctest.Test(t, func(t *testing.T) {
		up := newUpstream(cfg.Clients*cfg.PerClient, cfg.DownFor)
		up.URL = "http://upstream.invalid"
		r = runLoad(l, cfg, up, inProcessBase{up.origin})
	})
	return r
}

func TestRunLoadOutage(t *testing.T) {
	cfg := LoadConfig{Clients: 4, PerClient: 5, DownFor: -1, Cap: 20 * time.Second}
	tests := []struct {
		lib      string
		min, max float64
	}{
		{NameBare, 1, 1},
		// 20 requests: the budget's floor of 10 resends dominates, and no
		// request goes past 1+MaxRetries attempts (the window alone: Hold
		// -1, as before point 22).
		{NameHTTPRetryNoHold, 1, 1.5},
		{NameFailsafe, 3, 3},
	}
	for _, tt := range tests {
		t.Run(tt.lib, func(t *testing.T) {
			r := runLoadInBubble(t, lib(t, tt.lib), cfg)
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
	cfg := LoadConfig{Clients: 2, PerClient: 3, DownFor: -1, Cap: 500 * time.Millisecond}
	r := runLoadInBubble(t, lib(t, NameRetryableHTTP), cfg)
	assert.Equal(t, cfg.Cap, r.Elapsed, "the run ends at the cap")
	assert.Zero(t, r.Completed)
	assert.Zero(t, r.Upstream)
	assert.Equal(t, int64(2), r.UpstreamTotal, "each client's first attempt arrived")
	assert.Zero(t, r.Amplification(), "no completed call: no ratio")
}

func TestRunLoadCapOverLoopback(t *testing.T) {
	// RunLoad itself, over loopback: the cap cancels a call waiting out
	// retryablehttp's 1 s and leaves it out; a loaded machine may delay
	// the first attempts, which is why the figures above are taken in a
	// bubble.
	r, err := RunLoad(lib(t, NameRetryableHTTP), LoadConfig{Clients: 2, PerClient: 3, DownFor: -1, Cap: 500 * time.Millisecond})
	require.NoError(t, err)
	assert.Zero(t, r.Completed)
	assert.LessOrEqual(t, r.UpstreamTotal, int64(2))
}

func TestRunLoadRecovery(t *testing.T) {
	// Requests every 20 ms from 0 to 180 ms, the upstream down for the
	// first 100 ms: the first five of each client fail, the last five
	// succeed, and every completion is at its start.
	cfg := LoadConfig{Clients: 3, PerClient: 10, Interval: 20 * time.Millisecond, DownFor: 100 * time.Millisecond, Cap: 10 * time.Second}
	r := runLoadInBubble(t, lib(t, NameBare), cfg)
	assert.Equal(t, 30, r.Completed)
	assert.Equal(t, 15, r.Succeeded)
	require.True(t, r.Recovered)
	assert.Equal(t, 100*time.Millisecond, r.Recovery)
	assert.Equal(t, 180*time.Millisecond, r.Elapsed, "paced: the 10th request starts at 180 ms")
}

func TestRunLoadRejectsEmptyFleet(t *testing.T) {
	_, err := RunLoad(lib(t, NameBare), LoadConfig{})
	assert.Error(t, err)
}

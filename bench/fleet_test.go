package bench

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func fleetLib(t *testing.T, name string) FleetLibrary {
	t.Helper()
	skipFailsafeUnderRace(t, name)
	l, ok := FleetLibraryByName(name)
	if !ok {
		l, ok = OnsetLibraryByName(name)
	}
	require.True(t, ok, name)
	return l
}

// runFleetInBubble runs cfg as RunFleet does, but in a synctest bubble
// over an upstream served in process: the network and a loaded scheduler
// take no virtual time, so no call misses the run's deadline and every
// request falls in the budget window cfg's pacing puts it in. Over
// loopback, a loaded machine cut 141 of 200 calls at the deadline and
// bunched a quiet client's requests into one window, whose share then
// granted resends beyond the floor.
func runFleetInBubble(t *testing.T, lib FleetLibrary, cfg FleetConfig) FleetResult {
	t.Helper()
	require.NoError(t, cfg.validate())
	var r FleetResult
	synctest.Test(t, func(t *testing.T) {
		up := newFleetUpstream(cfg)
		up.URL = "http://upstream.invalid"
		r = runFleet(lib, cfg, up, func() fleetBase { return inProcessBase{up.origin} })
	})
	return r
}

func TestBlipIsPureAndNearItsRate(t *testing.T) {
	const n = 100_000
	failed := 0
	for id := range n {
		if Blip(7, id, 1, 0.05) {
			failed++
		}
		assert.Equal(t, Blip(7, id, 2, 0.05), Blip(7, id, 2, 0.05))
	}
	// 5 % of 100 000 is 5000 with a standard deviation of about 69.
	assert.InDelta(t, 5000, failed, 400)
	assert.False(t, Blip(7, 1, 1, 0))
	assert.True(t, Blip(7, 1, 1, 1))
}

func TestRunFleetOutage(t *testing.T) {
	// 4 clients × 3 requests in a total outage: failsafe sends each 3 times,
	// and httpretry's floor of 10 resends per client covers all 3 of its 3
	// requests' resends.
	cfg := FleetConfig{Clients: 4, PerWindow: 3, Windows: 1, Window: 60 * time.Millisecond, FailRate: 1}
	for _, tt := range []struct {
		lib  string
		want int64
	}{
		// The window's floor alone (Hold -1): TestOnsetTargets measures
		// the hold's onset (DESIGN point 22).
		{NameHTTPRetryNoHold, 4 * 3 * 4},
		{NameFailsafe, 4 * 3 * 3},
	} {
		t.Run(tt.lib, func(t *testing.T) {
			r := runFleetInBubble(t, fleetLib(t, tt.lib), cfg)
			assert.Equal(t, 12, r.Requests)
			assert.Equal(t, tt.want, r.Upstream)
			assert.Equal(t, 12, r.FirstFailed)
			assert.Zero(t, r.Recovered)
			assert.Zero(t, r.Succeeded)
		})
	}
}

func TestRunFleetBlips(t *testing.T) {
	cfg := FleetConfig{Clients: 5, PerWindow: 20, Windows: 2, Window: 50 * time.Millisecond, FailRate: 0.2, Seed: 3}
	// failsafe resends twice at once: a request whose first attempt
	// fails is recovered unless its second and third fail as well.
	wantFailed, wantRecovered, wantUpstream := 0, 0, int64(0)
	for id := range cfg.Clients * cfg.PerClient() {
		attempts := 1
		for attempts <= 3 && Blip(cfg.Seed, id, attempts, cfg.FailRate) {
			attempts++
		}
		wantUpstream += int64(min(attempts, 3))
		if attempts > 1 {
			wantFailed++
			if attempts <= 3 {
				wantRecovered++
			}
		}
	}
	require.NotZero(t, wantFailed)
	r := runFleetInBubble(t, fleetLib(t, NameFailsafe), cfg)
	assert.Equal(t, 200, r.Requests)
	assert.Equal(t, wantFailed, r.FirstFailed)
	assert.Equal(t, wantRecovered, r.Recovered)
	assert.Equal(t, wantUpstream, r.Upstream)
	assert.Equal(t, r.Requests-r.FirstFailed+r.Recovered, r.Succeeded)
}

func TestRunFleetScalesRetryableHTTP(t *testing.T) {
	// Scaled by 1/100, retryablehttp waits 10+20+40+80 ms per call instead
	// of 1+2+4+8 s: one request completes well within the run's deadline,
	// after exactly those waits.
	cfg := FleetConfig{Clients: 1, PerWindow: 1, Windows: 1, Window: 100 * time.Millisecond, FailRate: 1}
	r := runFleetInBubble(t, fleetLib(t, NameRetryableHTTP), cfg)
	assert.Equal(t, 150*time.Millisecond, r.Elapsed)
	assert.Equal(t, 1, r.Requests)
	assert.Equal(t, int64(5), r.Upstream)
}

func TestRunFleetRejectsEmpty(t *testing.T) {
	_, err := RunFleet(fleetLib(t, NameHTTPRetry), FleetConfig{Clients: 1})
	assert.Error(t, err)
}

func TestRunFleetQuietOutageEarnsTheFloor(t *testing.T) {
	// 2 clients × 2 requests per window for 30 windows, upstream down: a
	// window's share (20 % of 2 requests) grants nothing, so every resend
	// spends floor credit, which starts at 10 and earns 0.2 per request.
	// Each client's 60 requests earn 12: at most 22 resends each, and at
	// least 21 (a fraction of a credit may be left over at the end).
	// The floor's accounting alone: Hold -1, as before point 22.
	cfg := FleetConfig{Clients: 2, PerWindow: 2, Windows: 30, Window: 50 * time.Millisecond, FailRate: 1}
	r := runFleetInBubble(t, fleetLib(t, NameHTTPRetryNoHold), cfg)
	assert.Equal(t, 120, r.Requests)
	assert.GreaterOrEqual(t, r.Upstream, int64(2*(60+21)))
	assert.LessOrEqual(t, r.Upstream, int64(2*(60+22)))
}

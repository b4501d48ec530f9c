package bench

import (
	"context"
	"errors"
	"io"
	"net/http"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/httpretry/httpretry"
	"github.com/httpretry/httpretry/internal/fakeorigin"
)

// inProcessOrigins are the three origins served in the caller's
// goroutine, a network that takes no time: a refusing origin fails the
// attempt as a refused dial would, and a black-holed one holds it until
// its context ends.
type inProcessOrigins map[string]*demoteOrigin

var inProcessURLs = []string{"http://primary.invalid", "http://second.invalid", "http://third.invalid"}

func newInProcessOrigins() inProcessOrigins {
	origins := inProcessOrigins{}
	for _, u := range inProcessURLs {
		o := &demoteOrigin{}
		o.memory = fakeorigin.New(o.answer).Quiet()
		origins[u[len("http://"):]] = o
	}
	return origins
}

func (origins inProcessOrigins) RoundTrip(r *http.Request) (*http.Response, error) {
	return origins[r.URL.Host].memory.RoundTrip(r)
}

func (origins inProcessOrigins) setFault(i int, f DemoteFault) error {
	origins[inProcessURLs[i][len("http://"):]].fault.Store(int32(f))
	return nil
}

// runDemoteInBubble runs cfg as RunDemote does, but in a synctest bubble
// over origins served in process: requests start, the outage begins and
// ends, per-try timeouts fire and demotions expire at exactly the instants
// cfg describes, however loaded the machine.
func runDemoteInBubble(t *testing.T, cfg DemoteConfig) DemoteResult {
	t.Helper()
	require.NoError(t, cfg.validate())
	var r DemoteResult
	synctest.Test(t, func(t *testing.T) {
		origins := newInProcessOrigins()
		var err error
		r, err = runDemote(cfg, inProcessURLs, origins, origins.setFault)
		require.NoError(t, err)
	})
	return r
}

// mostDemotions bounds how many demotions fit in outage: the nth in a row
// lasts at least min(n×For, Max)/2, and each but the last ends within it.
func mostDemotions(d httpretry.Demote, outage time.Duration) int {
	n, spent := 1, time.Duration(0)
	for ; spent < outage; n++ {
		spent += min(time.Duration(n)*d.For, d.Max) / 2
	}
	return n
}

func TestDemoteOffTriesThePrimaryEveryTime(t *testing.T) {
	for _, fault := range []DemoteFault{FaultRefuse, FaultUnavailable, FaultBlackHole} {
		t.Run(fault.String(), func(t *testing.T) {
			cfg := DemoteScenario(fault, httpretry.Demote{After: -1}, 1)
			r := runDemoteInBubble(t, cfg)
			want := int(cfg.Outage) / int(time.Second) * cfg.Rate
			assert.Equal(t, want, r.Requests)
			assert.Equal(t, want, r.Succeeded, "the fallbacks answer every request")
			assert.Equal(t, want, r.PrimaryCalls, "one attempt to the primary each")
			assert.Equal(t, 2*want, r.Calls, "then one to the first fallback")
			assert.Zero(t, r.Demotions)
			require.True(t, r.Recovered)
			// The first request that starts once it is healthy again.
			assert.LessOrEqual(t, r.Back, cfg.every())
			if fault == FaultBlackHole {
				assert.Equal(t, want, r.Slow, "every request pays PerTryTimeout")
			}
		})
	}
}

func TestDemoteMovesTheDeadPrimaryBack(t *testing.T) {
	for _, fault := range []DemoteFault{FaultRefuse, FaultUnavailable, FaultBlackHole} {
		t.Run(fault.String(), func(t *testing.T) {
			d := httpretry.Demote{After: 5}
			cfg := DemoteScenario(fault, d, 1)
			r := runDemoteInBubble(t, cfg)
			want := int(cfg.Outage) / int(time.Second) * cfg.Rate
			t.Logf("%+v", r)
			assert.Equal(t, want, r.Requests)
			assert.Equal(t, want, r.Succeeded, "no request lost")
			assert.LessOrEqual(t, r.Calls, want+r.PrimaryCalls, "at most one attempt to a fallback each")

			// After 5 failures in a row, only probes reach the primary: one
			// per demotion that expires within the outage, each failing and
			// demoting it again, and the last one, after it, restores it.
			d.For, d.Max = time.Second, 30*time.Second
			assert.GreaterOrEqual(t, r.Demotions, 2)
			assert.LessOrEqual(t, r.Demotions, mostDemotions(d, cfg.Outage))
			assert.Equal(t, 1, r.Restores)
			probes := r.Demotions - 1
			if fault == FaultBlackHole {
				// Requests started before the fifth PerTryTimeout fired went
				// to it first; they pay it, as do the probes.
				early := int(cfg.PerTryTimeout)*cfg.Rate/int(time.Second) + 5
				assert.GreaterOrEqual(t, r.PrimaryCalls, 5+probes)
				assert.LessOrEqual(t, r.PrimaryCalls, early+probes)
				assert.Equal(t, r.PrimaryCalls, r.Slow, "only the attempts to the primary cost PerTryTimeout")
			} else {
				// Its failures are instant: exactly five, then the probes.
				assert.Equal(t, 5+probes, r.PrimaryCalls)
				assert.Zero(t, r.Slow)
			}
			assert.LessOrEqual(t, r.PrimaryPerRequest(), 0.02, "DESIGN point 18's target")
			assert.Equal(t, 1, r.MostProbes, "one probe in flight")
			require.True(t, r.Recovered)
			assert.LessOrEqual(t, r.Back, 15*time.Second, "DESIGN point 18's target")
		})
	}
}

func TestDemoteAllDownCostsEachOriginOnce(t *testing.T) {
	for _, d := range []httpretry.Demote{{}, {After: 5}} {
		cfg := DemoteAllDown(d, 1)
		r := runDemoteInBubble(t, cfg)
		assert.Equal(t, int(cfg.Outage)/int(time.Second)*cfg.Rate, r.Requests)
		assert.Equal(t, 3, r.MinCalls, "Demote%+v", d)
		assert.Equal(t, 3, r.MaxCalls, "Demote%+v", d)
		assert.Zero(t, r.Succeeded)
	}
}

func TestDemoteConfigScalesTime(t *testing.T) {
	cfg := DemoteScenario(FaultBlackHole, httpretry.Demote{After: 5}, 0.1)
	assert.Equal(t, 2*time.Millisecond, cfg.every())
	assert.Equal(t, 2600, cfg.requests())
	p := cfg.policy([]string{"http://b", "http://c"})
	assert.Equal(t, httpretry.Demote{After: 5, For: 100 * time.Millisecond, Max: 3 * time.Second}, p.Demote)
	assert.Equal(t, 20*time.Millisecond, p.PerTryTimeout)
	assert.Zero(t, DemoteScenario(FaultUnavailable, httpretry.Demote{After: -1}, 0.1).PerTryTimeout, "DefaultPolicy's")
	assert.Equal(t, time.Second, p.Budget.Window)
	assert.Equal(t, 3, p.MaxRetries)
	assert.Equal(t, httpretry.Demote{After: -1}, DemoteScenario(FaultRefuse, httpretry.Demote{After: -1}, 0.1).policy(nil).Demote,
		"Demote{} stays off")
	assert.Error(t, DemoteConfig{}.validate())
}

// TestLoopbackOriginFaults drives one loopback origin through its faults
// and back: refusing connections closes even a kept-alive one, and it
// listens again on the same address.
func TestLoopbackOriginFaults(t *testing.T) {
	origins, err := startLoopbackOrigins()
	require.NoError(t, err)
	defer origins.close()
	base := NewLoopbackBase()
	defer base.CloseIdleConnections()
	client := &http.Client{Transport: base}
	url := origins.urls()[0]
	get := func(timeout time.Duration) (int, error) {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := client.Do(req)
		if err != nil {
			return 0, err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	status, err := get(time.Minute)
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, status)

	require.NoError(t, origins.setFault(0, FaultRefuse))
	_, err = get(time.Minute)
	assert.ErrorIs(t, err, syscall.ECONNREFUSED)

	require.NoError(t, origins.setFault(0, FaultUnavailable))
	status, err = get(time.Minute)
	require.NoError(t, err)
	assert.Equal(t, http.StatusServiceUnavailable, status)

	require.NoError(t, origins.setFault(0, FaultBlackHole))
	_, err = get(50 * time.Millisecond)
	assert.True(t, errors.Is(err, context.DeadlineExceeded), "%v", err)

	require.NoError(t, origins.setFault(0, 0))
	status, err = get(time.Minute)
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, status)
	assert.Equal(t, url, origins.urls()[0], "the same address throughout")
}

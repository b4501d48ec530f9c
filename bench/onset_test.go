package bench

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/httpretry/httpretry"
)

func onsetLib(t *testing.T, name string) FleetLibrary {
	t.Helper()
	skipFailsafeUnderRace(t, name)
	l, ok := OnsetLibraryByName(name)
	require.True(t, ok, name)
	return l
}

// onsetInBubble runs f in a synctest bubble: every onset run takes virtual
// time, whatever the load of the machine.
func onsetInBubble(t *testing.T, f func(t *testing.T)) {
	t.Helper()
	synctest.Test(t, f)
}

// onsetBubble is an OnsetBubble of t.
func onsetBubble(t *testing.T) OnsetBubble {
	return func(f func()) { synctest.Test(t, func(*testing.T) { f() }) }
}

// assertOnsetRequestsEndOnce checks that r completed each request it
// started exactly once, numbered 0 to want-1.
func assertOnsetRequestsEndOnce(t *testing.T, r OnsetRun, want int) {
	t.Helper()
	assert.Equal(t, want, r.Started)
	require.Len(t, r.Calls, want)
	for i, c := range r.Calls {
		assert.Equal(t, i, c.ID, "calls are sorted and unique")
		assert.Positive(t, c.Attempts)
	}
	firsts := 0
	for _, s := range r.Sends {
		if s.First {
			firsts++
		}
	}
	assert.Equal(t, want, firsts)
}

func TestOnsetTroubleFails(t *testing.T) {
	tr := OnsetTrouble{After: time.Second, For: 2 * time.Second, Rate: 1}
	assert.False(t, tr.Fails(1, 1, time.Second-1))
	assert.True(t, tr.Fails(1, 1, time.Second))
	assert.True(t, tr.Fails(1, 9, 3*time.Second-1))
	assert.False(t, tr.Fails(1, 1, 3*time.Second))
	assert.True(t, OnsetTrouble{After: time.Second, Rate: 1}.Fails(1, 1, time.Hour), "For 0: to the end")
	assert.False(t, OnsetTrouble{}.Fails(1, 1, 0), "Rate 0: health")
	blips := OnsetTrouble{Rate: 0.05, Seed: 7}
	for id := range 1000 {
		assert.Equal(t, Blip(7, id, 2, 0.05), blips.Fails(id, 2, time.Duration(id)*time.Second))
	}
}

func TestOnsetRunCountsBySendTime(t *testing.T) {
	// Two requests start in [1 s, 2 s), a third at 2 s; four attempts
	// are sent in [1 s, 2 s), one of them a resend of a request that
	// started before.
	r := OnsetRun{Sends: []OnsetSend{
		{At: 900 * time.Millisecond, First: true},
		{At: time.Second},
		{At: time.Second, First: true},
		{At: 1500 * time.Millisecond, First: true},
		{At: 1999 * time.Millisecond},
		{At: 2 * time.Second, First: true},
	}, Calls: []OnsetCall{
		{ID: 0, Start: 900 * time.Millisecond, Attempts: 2, FirstFailed: true, OK: true},
		{ID: 1, Start: time.Second, Attempts: 2, FirstFailed: true},
		{ID: 2, Start: 1500 * time.Millisecond, Attempts: 1},
	}}
	assert.InDelta(t, 2.0, r.Amplification(time.Second, 2*time.Second), 1e-9)
	assert.Zero(t, r.Amplification(3*time.Second, 4*time.Second), "no request: no ratio")
	assert.InDelta(t, 1.5, r.PerRequest(time.Second, 2*time.Second), 1e-9)
	assert.Zero(t, r.PerRequest(3*time.Second, 4*time.Second))
	assert.Equal(t, OnsetRecovery{Client: "c", Failed: 2, Recovered: 1}, r.Recovery("c"))
	assert.InDelta(t, 0.5, r.Recovery("c").Share(), 1e-9)
	assert.Zero(t, OnsetRecovery{}.Share())
}

func TestRunOnsetFleetEveryRequestEndsOnce(t *testing.T) {
	// 4 clients × 5 requests per 100 ms window for 3 windows, the last
	// two down: 60 requests, 20 of them healthy and answered at once.
	cfg := FleetConfig{Clients: 4, PerWindow: 5, Windows: 3, Window: 100 * time.Millisecond}
	for _, l := range OnsetLibraries() {
		t.Run(l.Name, func(t *testing.T) {
			onsetInBubble(t, func(t *testing.T) {
				r, err := RunOnsetFleet(l, cfg, OnsetTrouble{After: cfg.Window, Rate: 1})
				require.NoError(t, err)
				assertOnsetRequestsEndOnce(t, r, 60)
				healthy := 0
				for _, c := range r.Calls {
					assert.Equal(t, c.Start < cfg.Window, c.OK, "request %d", c.ID)
					assert.Equal(t, !c.OK, c.FirstFailed, "request %d", c.ID)
					if c.OK {
						healthy++
						assert.Equal(t, 1, c.Attempts)
					}
				}
				assert.Equal(t, 20, healthy)
				assert.InDelta(t, 1.0, r.Amplification(0, cfg.Window), 1e-9, "health: one attempt each")
			})
		})
	}
	onsetInBubble(t, func(t *testing.T) {
		_, err := RunOnsetFleet(onsetLib(t, NameHTTPRetry), FleetConfig{}, OnsetTrouble{})
		assert.Error(t, err)
	})
}

func TestOnsetDisabledAmplifiesAsMaxRetries(t *testing.T) {
	// With its budget off, httpretry resends each request of a 503 outage
	// MaxRetries (3) times: 4 attempts each, exactly.
	onsetInBubble(t, func(t *testing.T) {
		w := OnsetQuietFleet.Window
		r, err := runOnsetOutage(onsetLib(t, NameHTTPRetryNoBudget), OnsetQuietFleet, 4)
		require.NoError(t, err)
		assertOnsetRequestsEndOnce(t, r, 50*2*6)
		for _, c := range r.Calls {
			want := 1
			if c.Start >= w {
				want = 4
			}
			require.Equal(t, want, c.Attempts, "request %d", c.ID)
		}
		assert.InDelta(t, 4.0, r.PerRequest(w, 5*w), 1e-9)
		// By send time, the resends of the span's last requests (up to
		// 35 ms of scaled waits) may fall past it.
		assert.InDelta(t, 4.0, r.Amplification(w, 5*w), 0.05)
	})
}

func TestRunOnsetFleetBlipsExact(t *testing.T) {
	// failsafe resends twice at once: a request whose first attempt
	// fails is recovered unless its second and third fail as well. The
	// harness must count exactly that.
	cfg := FleetConfig{Clients: 5, PerWindow: 20, Windows: 2, Window: 50 * time.Millisecond}
	tr := OnsetTrouble{Rate: 0.2, Seed: 3}
	want := OnsetRecovery{Client: "c"}
	wantSends := 0
	for id := range cfg.Clients * cfg.PerClient() {
		n := 1
		for n <= 3 && tr.Fails(id, n, 0) {
			n++
		}
		wantSends += min(n, 3)
		if n > 1 {
			want.Failed++
			if n <= 3 {
				want.Recovered++
			}
		}
	}
	require.NotZero(t, want.Failed)
	onsetInBubble(t, func(t *testing.T) {
		r, err := RunOnsetFleet(onsetLib(t, NameFailsafe), cfg, tr)
		require.NoError(t, err)
		assertOnsetRequestsEndOnce(t, r, 200)
		assert.Equal(t, want, r.Recovery("c"))
		assert.Len(t, r.Sends, wantSends)
	})
}

func TestRunOnsetLoopPacesAndEndsAtDeadline(t *testing.T) {
	t.Run("healthy", func(t *testing.T) {
		// 2 workers, 50 ms per request, for 1 s: 20 requests each.
		onsetInBubble(t, func(t *testing.T) {
			cfg := OnsetLoop{Workers: 2, Span: time.Second, Latency: 50 * time.Millisecond}
			r, err := RunOnsetLoop(onsetLib(t, NameHTTPRetry), cfg, OnsetTrouble{})
			require.NoError(t, err)
			assertOnsetRequestsEndOnce(t, r, 40)
			assert.Len(t, r.Sends, 40)
			for _, c := range r.Calls {
				assert.True(t, c.OK)
			}
		})
	})
	t.Run("deadline", func(t *testing.T) {
		// retryablehttp waits 1 s, then 2 s: a request under a 3 s
		// deadline sends at 0 and 1.05 s and ends, failed, at 3 s. One
		// worker for 10 s: requests at 0, 3, 6 and 9 s.
		onsetInBubble(t, func(t *testing.T) {
			cfg := OnsetLoop{Workers: 1, Span: 10 * time.Second, Latency: 50 * time.Millisecond, Deadline: 3 * time.Second}
			start := time.Now()
			r, err := RunOnsetLoop(onsetLib(t, NameRetryableHTTP), cfg, OnsetTrouble{Rate: 1})
			require.NoError(t, err)
			assert.Equal(t, 12*time.Second, time.Since(start))
			assertOnsetRequestsEndOnce(t, r, 4)
			for i, c := range r.Calls {
				assert.Equal(t, time.Duration(i)*3*time.Second, c.Start)
				assert.Equal(t, 2, c.Attempts)
				assert.False(t, c.OK)
				assert.True(t, c.FirstFailed)
			}
		})
	})
	t.Run("invalid", func(t *testing.T) {
		_, err := RunOnsetLoop(onsetLib(t, NameHTTPRetry), OnsetLoop{Workers: 1, Span: time.Second}, OnsetTrouble{})
		assert.Error(t, err, "no latency")
	})
}

func TestMeasureOnsetShape(t *testing.T) {
	// failsafe sends its 3 attempts at once: 3× in every span.
	f, err := MeasureOnset(onsetLib(t, NameFailsafe), ShortOnsetPlan(), onsetBubble(t))
	require.NoError(t, err)
	assert.Equal(t, OnsetFigures{Library: NameFailsafe, Busy1s: 3, Busy2s: 3, Quiet2: 3, Quiet4: 3, RealTime4: 3,
		LongBusy: 3, LongQuiet: 3, LongRealTime: 3}, f)

	_, err = MeasureOnset(onsetLib(t, NameFailsafe), OnsetPlan{BusyOutage: 1, FleetOutage: 3}, onsetBubble(t))
	assert.Error(t, err, "4 fleet windows are read")
}

func TestOnsetBrownoutRepeatsSeeds(t *testing.T) {
	// Each run fails 30 first attempts and recovers a third of them: 100
	// failed take 4 runs, seeds 5 to 8, each in a bubble of its own.
	plan := OnsetPlan{Brownout: 2, BrownoutFailed: 100, Seed: 5}
	var seeds []uint64
	bubbles := 0
	in := OnsetBubble(func(f func()) { bubbles++; f() })
	rec, err := onsetBrownoutRecovery("c", time.Second, plan, in, func(tr OnsetTrouble) (OnsetRun, error) {
		assert.Equal(t, OnsetTrouble{After: time.Second, For: 2 * time.Second, Rate: OnsetBrownoutRate, Seed: tr.Seed}, tr)
		seeds = append(seeds, tr.Seed)
		r := OnsetRun{}
		for i := range 30 {
			r.Calls = append(r.Calls, OnsetCall{ID: i, FirstFailed: true, OK: i%3 == 0})
		}
		return r, nil
	})
	require.NoError(t, err)
	assert.Equal(t, OnsetRecovery{Client: "c", Failed: 120, Recovered: 40}, rec)
	assert.Equal(t, []uint64{5, 6, 7, 8}, seeds)
	assert.Equal(t, 4, bubbles)

	// A client whose first attempts never fail stops at onsetMaxBrownoutRuns.
	runs := 0
	rec, err = onsetBrownoutRecovery("c", time.Second, plan, in, func(OnsetTrouble) (OnsetRun, error) { runs++; return OnsetRun{}, nil })
	require.NoError(t, err)
	assert.Zero(t, rec.Failed)
	assert.Equal(t, onsetMaxBrownoutRuns, runs)
}

func TestMeasureOnsetHealthShape(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: 64 workers for 20 s and the busy client for 30 s take seconds under -race")
	}
	// Not failsafe: see TestReportPrintsEveryTable in cmd/onsetreport.
	plan := ShortOnsetPlan()
	plan.Blips, plan.BrownoutFailed = 400, 20
	h, err := MeasureOnsetHealth(onsetLib(t, NameHTTPRetryNoBudget), plan, onsetBubble(t))
	require.NoError(t, err)
	assert.Equal(t, NameHTTPRetryNoBudget, h.Library)
	for _, recs := range [][]OnsetRecovery{h.Blips, h.Brownout} {
		require.Len(t, recs, len(OnsetHealthClients()))
		for i, rec := range recs {
			assert.Equal(t, OnsetHealthClients()[i], rec.Client)
			assert.Positive(t, rec.Failed, rec.Client)
			assert.LessOrEqual(t, rec.Recovered, rec.Failed, rec.Client)
		}
	}
	for _, rec := range h.Brownout {
		assert.GreaterOrEqual(t, rec.Failed, plan.BrownoutFailed, "%s: runs repeated until enough failed", rec.Client)
	}
}

func TestOnsetProbeNeverHoldsAtHoldMinusOne(t *testing.T) {
	// Hold -1 is the behaviour before point 22, whatever the engine: the
	// probe OnsetDefaultHolds uses must see no hold there. It runs to its end
	// in virtual time and leaves nothing behind.
	onsetInBubble(t, func(t *testing.T) {
		p := httpretry.DefaultPolicy()
		p.Budget.Hold = -1
		assert.False(t, onsetHolds(p))
		t.Logf("DefaultPolicy holds: %v", OnsetDefaultHolds())
	})
}

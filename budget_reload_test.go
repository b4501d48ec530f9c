package httpretry

import (
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func reloadTo(b *Budget, cfg BudgetConfig, now time.Time) {
	b.reloadAt(cfg.withDefaults(), now.UnixNano())
}

// TestBudgetReloadGrowingWindowKeepsCounts: a window that doubles keeps
// every count still inside it, while resends open buckets of the new
// slots, and lets each go when it leaves the new window.
func TestBudgetReloadGrowingWindowKeepsCounts(t *testing.T) {
	ms := time.Millisecond
	b := newTestBudget(BudgetConfig{Window: time.Second, MinRetries: -1, Percent: 100}) // 100 ms slots
	for k := range 10 {
		b.countAt(budgetAt(time.Duration(k) * 90 * ms)) // 0, 90, …, 810 ms
	}
	require.True(t, b.tryReserveAt(budgetAt(850*ms)))
	require.Equal(t, BudgetStats{Requests: 10, Retries: 1}, windowAt(b, budgetAt(900*ms)))

	reloadTo(b, BudgetConfig{Window: 2 * time.Second, MinRetries: -1, Percent: 100}, budgetAt(900*ms)) // 200 ms slots
	for at := 900 * ms; at < 2000*ms; at += 50 * ms {
		b.tryReserveAt(budgetAt(at)) // opens the new slots' buckets, as resends would
		require.Equal(t, 10, windowAt(b, budgetAt(at)).Requests, "at +%v", at)
	}
	assert.Equal(t, BudgetStats{Requests: 10, Retries: 10}, windowAt(b, budgetAt(1999*ms)))

	// The new window lets go of its oldest 200 ms slot at +2 s: the
	// requests of 0, 90 and 180 ms, and the resend of 850 ms stays.
	steps := []struct {
		at   time.Duration
		want int
	}{{2000 * ms, 7}, {2199 * ms, 7}, {2200 * ms, 5}, {2400 * ms, 3}, {2600 * ms, 1}, {2800 * ms, 0}}
	for _, s := range steps {
		assert.Equal(t, s.want, windowAt(b, budgetAt(s.at)).Requests, "at +%v", s.at)
	}
	assert.Equal(t, 10, windowAt(b, budgetAt(2600*ms)).Retries, "granted from 850 ms on")
}

// TestBudgetReloadShrinkingWindowKeepsWhatItCovers: a window cut from 10 s
// to 1 s keeps the counts of the slots it still covers, partly or wholly.
func TestBudgetReloadShrinkingWindowKeepsWhatItCovers(t *testing.T) {
	b := newTestBudget(BudgetConfig{}) // 10 s in 1 s slots
	for s := range 10 {
		recordTimes(b, 10, budgetAt(time.Duration(s)*time.Second))
	}
	require.Equal(t, 20, reserveAll(t, b, budgetAt(9*time.Second)), "20 % of 100")
	require.Equal(t, BudgetStats{Requests: 100, Retries: 20}, windowAt(b, budgetAt(9500*time.Millisecond)))

	reloadTo(b, BudgetConfig{Window: time.Second}, budgetAt(9500*time.Millisecond)) // 100 ms slots
	// (8.5 s, 9.5 s] covers the end of the slot of +8 s and the whole of +9 s
	// so far. Each is counted in the middle of what it covers: (8.6 s, 9 s)
	// at 8.8 s, [9 s, 9.5 s] at 9.25 s, in the 100 ms slots of 8.8 s and
	// 9.2 s, which leave the window at 9.8 s and 10.2 s.
	assert.Equal(t, BudgetStats{Requests: 20, Retries: 20}, windowAt(b, budgetAt(9500*time.Millisecond)))
	assert.Equal(t, BudgetStats{Requests: 20, Retries: 20}, windowAt(b, budgetAt(9799*time.Millisecond)))
	assert.Equal(t, BudgetStats{Requests: 10, Retries: 20}, windowAt(b, budgetAt(9800*time.Millisecond)))
	assert.Equal(t, BudgetStats{Requests: 10, Retries: 20}, windowAt(b, budgetAt(10199*time.Millisecond)))
	assert.Equal(t, BudgetStats{}, windowAt(b, budgetAt(10200*time.Millisecond)))
}

// TestBudgetsReloadWindowRecordsIntoTheNewSlots: after a reload through
// Budgets, Record counts into the new window's current bucket.
func TestBudgetsReloadWindowRecordsIntoTheNewSlots(t *testing.T) {
	bs := NewBudgets()
	small := BudgetConfig{Window: time.Hour}
	big := BudgetConfig{Window: 2 * time.Hour}
	for range 5 {
		bs.For("h", small).Record()
	}
	b := bs.For("h", big)
	for range 5 {
		b.Record()
	}
	assert.Equal(t, 10, b.Stats().Requests)
	assert.Equal(t, 10, bs.For("h", small).Stats().Requests, "and back")
}

// TestBudgetReloadCountsARecordCaughtMidway: Record adds to the bucket it
// read from cur without the lock, so a reload that changes the window can
// come between the two; the request still counts in the new window, at
// every instant of an hour (the slots of the two windows line up
// differently from minute to minute).
func TestBudgetReloadCountsARecordCaughtMidway(t *testing.T) {
	hour := BudgetConfig{Window: time.Hour}
	twoHours := BudgetConfig{Window: 2 * time.Hour}
	for m := range 60 {
		at := budgetAt(time.Duration(m)*time.Minute + 30*time.Second)
		b := newTestBudget(hour)
		b.startTicking(at) // the host's first request makes a bucket current
		caught := b.cur.Load()
		reloadTo(b, twoHours, at)
		caught.requests.Add(1) // the rest of a Record that read cur before the reload
		caught = b.cur.Load()
		reloadTo(b, hour, at)
		caught.requests.Add(1)
		b.stopTicking()
		assert.Equal(t, 3, windowAt(b, at).Requests, "at +%dm30s", m)
		assert.Equal(t, 3, windowAt(b, at.Add(40*time.Minute)).Requests, "at +%dm30s, 40 minutes on", m)
	}
}

// TestBudgetsReloadsUnderLoadCountEveryRequest: workers giving one host
// four windows in turn, each request a reload, count every request
// exactly once.
func TestBudgetsReloadsUnderLoadCountEveryRequest(t *testing.T) {
	bs := NewBudgets()
	windows := []time.Duration{time.Hour, 2 * time.Hour, 90 * time.Minute, 10 * time.Hour}
	const workers, each = 8, 2000
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range each {
				bs.For("h", BudgetConfig{Window: windows[(w+n)%len(windows)]}).Record()
			}
		}()
	}
	wg.Wait()
	b := bs.For("h", BudgetConfig{Window: time.Hour})
	defer b.stopTicking()
	assert.Equal(t, workers*each, b.Stats().Requests)
}

// TestBudgetsTwoWindowsCountEveryRequest: two transports sharing one
// Budgets with windows of 1 h and 2 h, 4,800 requests at once over
// loopback: every request is counted, so the allowance is a fifth of them.
func TestBudgetsTwoWindowsCountEveryRequest(t *testing.T) {
	u := newUpstream(t, always(http.StatusOK))
	base := &http.Transport{MaxIdleConnsPerHost: 16}
	defer base.CloseIdleConnections()
	bs := NewBudgets()
	policy := func(w time.Duration) Option {
		return WithPolicy(Policy{MaxRetries: 2, Budget: BudgetConfig{Window: w}})
	}
	clients := []*http.Client{
		{Transport: New(base, WithBudgets(bs), policy(time.Hour))},
		{Transport: New(base, WithBudgets(bs), policy(2*time.Hour))},
	}
	const workers, each = 16, 300
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				resp, err := clients[w%2].Get(u.URL)
				if !assert.NoError(t, err) {
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}()
	}
	wg.Wait()
	require.EqualValues(t, workers*each, u.calls.Load())
	b := bs.For(strings.TrimPrefix(u.URL, "http://"), BudgetConfig{Window: time.Hour})
	defer b.stopTicking()
	s := b.Stats()
	assert.Equal(t, workers*each, s.Requests)
	assert.Equal(t, workers*each/5, s.Allowance)
}

// TestBudgetTwoWindowsTakeTurnsForHours: windows of 1 h, 90 min, 2 h and
// 10 h over one origin in turn, each request a reload, one every 10 s for
// 20 h at fixed instants. Moving the counts at every reload neither loses
// the recent ones nor keeps the old ones for ever. Counted from a slot's
// first instant, they aged a slot a reload and fell out: the window held
// none of the last hour's 360 requests. Under 1 h the window counts at
// least the requests of its last 45 min and at most those of its last 3 h:
// the error is bounded by the 10 h window's hour-long slots, however many
// reloads there are.
func TestBudgetTwoWindowsTakeTurnsForHours(t *testing.T) {
	windows := []BudgetConfig{{Window: time.Hour}, {Window: 90 * time.Minute}, {Window: 2 * time.Hour},
		{Window: 10 * time.Hour}}
	b := newTestBudget(windows[0])
	const every, n = 10 * time.Second, 7200
	for i := range n {
		now := budgetAt(time.Duration(i) * every)
		reloadTo(b, windows[i%len(windows)], now)
		recordTimes(b, 1, now)
		if i%len(windows) != 0 {
			continue
		}
		got := windowAt(b, now).Requests
		assert.GreaterOrEqual(t, got, min(i+1, int(45*time.Minute/every)), "at +%v", time.Duration(i)*every)
		assert.LessOrEqual(t, got, min(i+1, int(3*time.Hour/every)+1), "at +%v", time.Duration(i)*every)
	}
	end := budgetAt(n * every)
	reloadTo(b, windows[0], end)
	assert.Equal(t, 0, windowAt(b, end.Add(4*time.Hour)).Requests, "gone once the reloads stop")
}

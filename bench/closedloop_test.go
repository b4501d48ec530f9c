package bench

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// shortOutage is a compressed life for the harness's own tests: 1 s of
// health, 2 s down, 1 s back. The figures they check do not depend on
// the phases' lengths, and a short run keeps -race -short fast.
func shortOutage(k OutageKind) Outage {
	return Outage{Kind: k, Healthy: time.Second, Down: 2 * time.Second, After: time.Second}
}

func loopContender(t *testing.T, name string) LoopContender {
	t.Helper()
	skipFailsafeUnderRace(t, name)
	c, ok := LoopContenderByName(name)
	require.True(t, ok, name)
	return c
}

// TestClosedLoopCountsEveryItem: whatever the contender, every item taken
// ends exactly once, and a healthy origin takes each item Service: the
// healthy rate is 200 a second per worker, to the attempt. Short phases:
// the counts hold at any length, and a worker that does not wait between
// attempts costs 1,000 of them a second of outage. A black hole's phase
// after lasts LoopPerTry, for the item it caught to end and the next to
// succeed. -short shares the queue among 3 workers rather than 8: the same
// race, less of it.
func TestClosedLoopCountsEveryItem(t *testing.T) {
	many := 8
	if testing.Short() {
		many = 3
	}
	names := []string{NameBare, NameLoopHTTPRetry, NameLoopDisabled, NameRetryableHTTP, NameFailsafe}
	for _, k := range OutageKinds() {
		for _, name := range names {
			for _, w := range []int{1, many} {
				t.Run(k.String()+"/"+name+"/"+strconv.Itoa(w), func(t *testing.T) {
					o := Outage{Kind: k, Healthy: 500 * time.Millisecond, Down: 250 * time.Millisecond, After: 500 * time.Millisecond}
					if k == OutageBlackHole {
						o.After = LoopPerTry
					}
					cfg := ClosedLoopConfig{Outage: o, Workers: w, Deadline: 10 * time.Second}
					r := RunClosedLoop(t, loopContender(t, name), cfg)
					assert.Equal(t, r.Taken, r.OK+r.Lost, "every item ends once")
					assert.LessOrEqual(t, r.OutageLost, r.OutageTaken)
					assert.LessOrEqual(t, r.OutageLost, r.Lost)
					assert.InDelta(t, 200*float64(w), r.Healthy, 0, "5 ms an item")
					assert.Positive(t, r.Down)
					assert.GreaterOrEqual(t, r.FirstOK, time.Duration(0), "items succeed after the outage")
				})
			}
		}
	}
}

// TestClosedLoopBare: without retries a refused item ends in FailAfter,
// so a worker takes 1,000 items a second, all lost, each one attempt, and
// the first item taken after the outage succeeds in Service.
func TestClosedLoopBare(t *testing.T) {
	r := RunClosedLoop(t, loopContender(t, NameBare), ClosedLoopConfig{Outage: shortOutage(OutageRefused)})
	assert.Equal(t, 200+2000+200, r.Taken)
	assert.Equal(t, 2000, r.OutageTaken)
	assert.Equal(t, 2000, r.Lost)
	assert.Equal(t, 2000, r.OutageLost)
	assert.Equal(t, 2000, r.Down)
	assert.InDelta(t, 5, r.MeanDown, 1e-9, "1,000 attempts a second against 200")
	assert.InDelta(t, 5, r.MaxDown, 1e-9)
	assert.InDelta(t, 1, r.MaxAfter, 1e-9, "one attempt per item once healthy")
	assert.Equal(t, 5*time.Millisecond, r.FirstOK)
	assert.Zero(t, r.PeakParked, "a peer has no budget to read")
}

// TestClosedLoopBareBlackHole: a black hole holds each item for the
// client's Timeout, LoopPerTry, and the item in flight at the outage's end
// is lost too.
func TestClosedLoopBareBlackHole(t *testing.T) {
	r := RunClosedLoop(t, loopContender(t, NameBare), ClosedLoopConfig{Outage: shortOutage(OutageBlackHole)})
	assert.Equal(t, 1, r.OutageTaken, "taken at 1 s, timed out at 3 s")
	assert.Equal(t, 1, r.Lost)
	assert.Equal(t, 1, r.Down)
	assert.Equal(t, 5*time.Millisecond, r.FirstOK)
}

// TestClosedLoopDisabled: with the budget off every item taken in the
// outage makes 1+MaxRetries attempts, the last one's maybe fewer, reaching
// the origin back.
func TestClosedLoopDisabled(t *testing.T) {
	for _, k := range []OutageKind{OutageRefused, Outage503} {
		t.Run(k.String(), func(t *testing.T) {
			r := RunClosedLoop(t, loopContender(t, NameLoopDisabled), ClosedLoopConfig{Outage: shortOutage(k)})
			require.Positive(t, r.OutageLost)
			assert.GreaterOrEqual(t, r.OutageLost, r.OutageTaken-1, "only the last item may reach the origin back")
			assert.Equal(t, r.Lost, r.OutageLost, "nothing fails while healthy")
			assert.GreaterOrEqual(t, r.Down, 4*r.OutageLost)
			assert.LessOrEqual(t, r.Down, 4*r.OutageTaken)
			assert.Zero(t, r.PeakParked)
		})
	}
}

// TestClosedLoopFailsafe: failsafe-go's defaults resend twice at once, so
// each lost item costs exactly 3 attempts of FailAfter; the last item of
// the outage reaches the origin back on its second or third.
func TestClosedLoopFailsafe(t *testing.T) {
	r := RunClosedLoop(t, loopContender(t, NameFailsafe), ClosedLoopConfig{Outage: shortOutage(OutageRefused)})
	assert.Equal(t, r.OutageTaken-1, r.OutageLost)
	assert.GreaterOrEqual(t, r.Down, 3*r.OutageLost+1)
	assert.LessOrEqual(t, r.Down, 3*r.OutageLost+2)
	assert.InDelta(t, 2000/3, r.OutageTaken, 1)
}

// TestClosedLoopDeadlineInContext: go-retryablehttp's waits (1, 2, 4, 8 s)
// outlast a 10 s outage's items only with the deadline on the context: a
// 2 s deadline cuts each item after its second attempt.
func TestClosedLoopDeadlineInContext(t *testing.T) {
	o := Outage{Kind: OutageRefused, Healthy: time.Second, Down: 10 * time.Second, After: time.Second}
	r := RunClosedLoop(t, loopContender(t, NameRetryableHTTP), ClosedLoopConfig{Outage: o, Deadline: 2 * time.Second})
	assert.Equal(t, 5, r.OutageLost, "one item every 2 s")
	assert.Equal(t, 2*5, r.Down, "attempts at 0 and 1 s of each item")
}

// TestClosedLoopTableRows: a table has every contender, the one with
// httpretry's deadline on the context only when there is a deadline.
func TestClosedLoopTableRows(t *testing.T) {
	o := Outage{Kind: OutageBlackHole, Healthy: 100 * time.Millisecond, Down: 100 * time.Millisecond, After: 100 * time.Millisecond}
	with := ClosedLoopTable(t, ClosedLoopConfig{Outage: o, Deadline: time.Second})
	without := ClosedLoopTable(t, ClosedLoopConfig{Outage: o})
	assert.Len(t, with, len(LoopContenders()))
	assert.Len(t, without, len(LoopContenders())-1)
	for _, r := range without {
		assert.NotEqual(t, NameLoopHTTPRetryCtx, r.Contender)
	}
}

// TestOpenLoopArrivesOnTime: an open loop starts its requests on the clock,
// not on its answers: without retries the count is exact, an attempt per
// request, and nothing after the outage exceeds the healthy rate.
func TestOpenLoopArrivesOnTime(t *testing.T) {
	r := RunOpenLoop(t, loopContender(t, NameBare), OpenLoopConfig{Outage: shortOutage(OutageBlackHole), Deadline: 30 * time.Second})
	assert.Equal(t, 800, r.Taken)
	assert.Equal(t, r.Taken, r.OK+r.Lost)
	assert.Equal(t, 400, r.OutageTaken)
	assert.Equal(t, 400, r.Lost, "every one timed out")
	assert.InDelta(t, 200, r.Healthy, 0)
	assert.InDelta(t, 1, r.MeanDown, 1e-9)
	assert.InDelta(t, 1, r.MaxAfter, 1e-9)
	assert.Equal(t, time.Duration(-1), r.DownArrival, "no budget, no streak")
}

func TestCountAttempts(t *testing.T) {
	o := Outage{Healthy: 2 * time.Second, Down: 2 * time.Second, After: time.Second}
	ms := func(v ...int) []time.Duration {
		out := make([]time.Duration, len(v))
		for i, x := range v {
			out[i] = time.Duration(x) * time.Millisecond
		}
		return out
	}
	// 10 a second while healthy; 3 then 1 while down; after, 2 within
	// 100 ms, then spread.
	var arr []time.Duration
	for i := range 20 {
		arr = append(arr, time.Duration(i)*100*time.Millisecond)
	}
	arr = append(arr, ms(2000, 2100, 2999, 3500, 4000, 4099, 4500)...)
	a := countAttempts(o, arr)
	assert.InDelta(t, 10, a.Healthy, 1e-9)
	assert.Equal(t, 4, a.Down)
	assert.InDelta(t, 0.3, a.MaxDown, 1e-9)
	assert.InDelta(t, 0.2, a.MeanDown, 1e-9)
	assert.InDelta(t, 2, a.MaxAfter, 1e-9, "two in 100 ms against one")
	assert.Equal(t, Attempts{}, countAttempts(o, nil))
}

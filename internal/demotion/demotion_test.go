package demotion

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var dt0 = time.Date(2026, time.November, 29, 12, 0, 0, 0, time.UTC)

// defaults is the Rule of a Demote that sets only After, as
// httpretry resolves it.
func defaults(after int32) Rule {
	return Rule{After: after, Base: time.Second, Max: 30 * time.Second}
}

func demoteRand() *rand.Rand { return rand.New(rand.NewPCG(17, 18)) }

// inRange asserts that d was drawn for a demotion whose ceiling is ceil.
func inRange(t *testing.T, ceil, d time.Duration) {
	t.Helper()
	assert.GreaterOrEqual(t, d, ceil/2)
	assert.LessOrEqual(t, d, ceil)
}

// demote returns an origin demoted at dt0 under rule and the
// instant its demotion ends.
func demote(t *testing.T, rule Rule, r *rand.Rand) (*State, time.Time) {
	t.Helper()
	var s State
	for range rule.After - 1 {
		s.Failed(dt0, Probe{}, rule, r)
	}
	ok, d := s.Failed(dt0, Probe{}, rule, r)
	require.True(t, ok)
	return &s, dt0.Add(d)
}

func TestCount(t *testing.T) {
	rule := defaults(3)
	r := demoteRand()
	fail := func(s *State) bool {
		ok, _ := s.Failed(dt0, Probe{}, rule, r)
		return ok
	}

	t.Run("After in a row demote", func(t *testing.T) {
		var s State
		assert.False(t, fail(&s))
		assert.False(t, fail(&s))
		last, _ := s.place(dt0, true)
		assert.False(t, last, "two failures are not yet three")
		ok, d := s.Failed(dt0, Probe{}, rule, r)
		require.True(t, ok)
		inRange(t, time.Second, d)
		assert.Equal(t, d, s.Left(dt0))
		last, _ = s.place(dt0, true)
		assert.True(t, last)
		assert.EqualValues(t, 1, s.streak.Load())
		assert.Zero(t, s.fails.Load(), "a demotion starts the next count afresh")
	})
	t.Run("an answer resets the count", func(t *testing.T) {
		var s State
		fail(&s)
		fail(&s)
		assert.False(t, s.Answered(dt0, Probe{}, false), "nothing to restore")
		assert.False(t, fail(&s))
		assert.False(t, fail(&s))
		assert.True(t, fail(&s))
	})
	t.Run("a 429 resets the count like any answer", func(t *testing.T) {
		var s State
		fail(&s)
		fail(&s)
		assert.False(t, s.Answered(dt0, Probe{}, true))
		assert.False(t, fail(&s))
		assert.False(t, fail(&s))
		assert.True(t, fail(&s))
	})
	t.Run("failures while demoted add nothing", func(t *testing.T) {
		s, _ := demote(t, rule, r)
		left := s.Left(dt0)
		for range 10 {
			assert.False(t, fail(s))
		}
		assert.Equal(t, left, s.Left(dt0))
		assert.Zero(t, s.fails.Load())
		assert.EqualValues(t, 1, s.streak.Load())
	})
	t.Run("After -1 is off", func(t *testing.T) {
		var s State
		for range 200 {
			ok, _ := s.Failed(dt0, Probe{}, defaults(0), r)
			assert.False(t, ok)
		}
		assert.Zero(t, s.fails.Load())
	})
}

func TestRetryAfter(t *testing.T) {
	rule := defaults(1)
	const maxRA = time.Minute

	t.Run("an undemoted origin is not demoted and nothing is counted", func(t *testing.T) {
		s := State{}
		rule := defaults(2)
		s.Hold(dt0, 10*time.Second, maxRA)
		s.Hold(dt0, 10*time.Second, maxRA)
		assert.Zero(t, s.Left(dt0))
		last, _ := s.place(dt0, true)
		assert.False(t, last)
		ok, _ := s.Failed(dt0, Probe{}, rule, demoteRand())
		assert.False(t, ok, "a hold is not a failure")
		ok, _ = s.Failed(dt0, Probe{}, rule, demoteRand())
		assert.True(t, ok)
	})
	t.Run("longer than the demotion has left", func(t *testing.T) {
		s, _ := demote(t, rule, demoteRand())
		s.Hold(dt0, 5*time.Second, maxRA)
		assert.Equal(t, 5*time.Second, s.Left(dt0))
		last, p := s.place(dt0.Add(4*time.Second), true)
		assert.True(t, last)
		assert.Zero(t, p)
		assert.Zero(t, s.fails.Load(), "no failure counted")
		assert.EqualValues(t, 1, s.streak.Load(), "not a demotion in a row")
	})
	t.Run("shorter than the demotion has left", func(t *testing.T) {
		s, _ := demote(t, rule, demoteRand())
		s.Hold(dt0, 5*time.Second, maxRA)
		s.Hold(dt0.Add(time.Second), 2*time.Second, maxRA)
		s.Hold(dt0, 0, maxRA)
		s.Hold(dt0, -time.Second, maxRA)
		assert.Equal(t, 5*time.Second, s.Left(dt0))
	})
	t.Run("at most MaxRetryAfter", func(t *testing.T) {
		s, _ := demote(t, rule, demoteRand())
		s.Hold(dt0, time.Hour, maxRA)
		assert.Equal(t, maxRA, s.Left(dt0))
		s.Hold(dt0, time.Duration(math.MaxInt64), time.Duration(math.MaxInt64))
		assert.EqualValues(t, int64(math.MaxInt64), s.until.Load(), "saturated, not wrapped")
	})
	t.Run("an expired demotion is held again", func(t *testing.T) {
		s, end := demote(t, rule, demoteRand())
		later := end.Add(time.Hour)
		s.Hold(later, 3*time.Second, maxRA)
		assert.Equal(t, 3*time.Second, s.Left(later))
		last, p := s.place(later, true)
		assert.True(t, last)
		assert.Zero(t, p, "no probe before the hold ends")
		_, p = s.place(later.Add(3*time.Second), true)
		assert.NotZero(t, p)
	})
	t.Run("a probe in flight decides", func(t *testing.T) {
		s, end := demote(t, rule, demoteRand())
		_, p := s.place(end, true)
		require.NotZero(t, p)
		s.Hold(end, 10*time.Second, maxRA)
		assert.Equal(t, p.claimed, s.until.Load(), "the claim is intact")
		// The probe's own 429: its claim is given back, then its
		// Retry-After holds the origin.
		assert.False(t, s.Answered(end, p, true))
		s.Hold(end, 10*time.Second, maxRA)
		assert.Equal(t, 10*time.Second, s.Left(end))
	})
}

func TestRuleLength(t *testing.T) {
	rule := Rule{After: 1, Base: time.Second, Max: 4 * time.Second}
	for n, want := range map[int64]time.Duration{
		1: time.Second, 2: 2 * time.Second, 4: 4 * time.Second, 5: 4 * time.Second,
		math.MaxInt64: 4 * time.Second,
	} {
		assert.Equal(t, want, rule.ceiling(n), "n=%d", n)
	}
	huge := Rule{After: 1, Base: time.Nanosecond, Max: time.Duration(math.MaxInt64)}
	assert.Equal(t, time.Duration(math.MaxInt64), huge.ceiling(math.MaxInt64))
	assert.Equal(t, time.Duration(3), huge.ceiling(3))

	r := demoteRand()
	for n := int64(1); n <= 6; n++ {
		ceil := rule.ceiling(n)
		lo, hi := ceil, time.Duration(0)
		for range 10000 {
			d := rule.length(n, r)
			lo, hi = min(lo, d), max(hi, d)
		}
		// Bounds, and both ends of [D/2, D] reached within 1%.
		assert.GreaterOrEqual(t, lo, ceil/2, "n=%d", n)
		assert.Less(t, lo, ceil/2+ceil/100, "n=%d", n)
		assert.LessOrEqual(t, hi, ceil, "n=%d", n)
		assert.Greater(t, hi, ceil-ceil/100, "n=%d", n)
	}
	// The shared source when r is nil.
	for range 1000 {
		inRange(t, 2*time.Second, rule.length(2, nil))
	}
	for range 100 {
		inRange(t, time.Duration(math.MaxInt64), huge.length(math.MaxInt64, r))
	}
}

func TestLengthsInARow(t *testing.T) {
	rule := Rule{After: 2, Base: time.Second, Max: 4 * time.Second}
	r := demoteRand()
	s, end := demote(t, rule, r)
	assert.EqualValues(t, 1, s.streak.Load())
	for n, ceil := range []time.Duration{2: 2 * time.Second, 3: 3 * time.Second, 4: 4 * time.Second, 5: 4 * time.Second, 6: 4 * time.Second, 7: 4 * time.Second} {
		if n < 2 {
			continue
		}
		// Time spent demoted, however long, decays nothing: the probe
		// comes a minute after the demotion expired.
		now := end.Add(time.Minute)
		last, p := s.place(now, true)
		require.False(t, last)
		require.NotZero(t, p)
		ok, d := s.Failed(now, p, rule, r)
		require.True(t, ok, "a failed probe demotes at once, After or not")
		inRange(t, ceil, d)
		assert.EqualValues(t, n, s.streak.Load())
		assert.Equal(t, d, s.Left(now))
		end = now.Add(d)
	}
}

func TestDecay(t *testing.T) {
	rule := defaults(1)
	// restored is an origin demoted three times in a row, restored at the
	// instant it returns.
	restored := func(t *testing.T) (*State, time.Time) {
		r := demoteRand()
		s, end := demote(t, rule, r)
		for range 2 {
			_, p := s.place(end, true)
			ok, d := s.Failed(end, p, rule, r)
			require.True(t, ok)
			end = end.Add(d)
		}
		require.EqualValues(t, 3, s.streak.Load())
		at := end.Add(time.Hour) // long demoted time decays nothing
		_, p := s.place(at, true)
		require.True(t, s.Answered(at, p, false))
		return s, at
	}
	for _, tc := range []struct {
		name  string
		after time.Duration // undemoted, from the restore to the failure
		n     int64
	}{
		{"at once", 0, 4},
		{"just short of For", 999 * time.Millisecond, 4},
		{"one For", time.Second, 3},
		{"two and a half For", 2500 * time.Millisecond, 2},
		{"three For", 3 * time.Second, 1},
		{"long after", time.Hour, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, at := restored(t)
			ok, d := s.Failed(at.Add(tc.after), Probe{}, rule, demoteRand())
			require.True(t, ok)
			assert.Equal(t, tc.n, s.streak.Load())
			inRange(t, time.Duration(tc.n)*time.Second, d)
		})
	}
	t.Run("a clock that steps back decays nothing", func(t *testing.T) {
		s, at := restored(t)
		ok, _ := s.Failed(at.Add(-time.Minute), Probe{}, rule, demoteRand())
		require.True(t, ok)
		assert.EqualValues(t, 4, s.streak.Load())
	})
}

func TestProbe(t *testing.T) {
	rule := defaults(1)

	t.Run("claimed once the demotion has expired", func(t *testing.T) {
		s, end := demote(t, rule, demoteRand())
		last, p := s.place(end.Add(-time.Nanosecond), true)
		assert.True(t, last)
		assert.Zero(t, p, "not before it expires")
		last, p = s.place(end, false)
		assert.True(t, last, "a request that may not move on keeps it last")
		assert.Zero(t, p, "and never probes")
		assert.Zero(t, s.Left(end))

		last, a := s.place(end, true)
		assert.False(t, last, "the prober keeps its configured place")
		require.NotZero(t, a)
		for _, now := range []time.Time{end, end.Add(time.Hour)} {
			last, p = s.place(now, true)
			assert.True(t, last, "others keep it last until the probe ends")
			assert.Zero(t, p)
		}

		s.Release(a)
		last, b := s.place(end.Add(time.Second), true)
		assert.False(t, last, "a released claim is free again")
		require.NotZero(t, b)
		assert.Equal(t, a, b)

		assert.True(t, s.Answered(end.Add(time.Second), b, false), "restored")
		assert.Zero(t, s.until.Load())
		assert.Zero(t, s.fails.Load())
		last, p = s.place(end.Add(time.Second), true)
		assert.False(t, last)
		assert.Zero(t, p)
		assert.False(t, s.Answered(end.Add(time.Second), b, false), "restored once")
	})
	t.Run("a failed probe demotes again", func(t *testing.T) {
		s, end := demote(t, rule, demoteRand())
		_, p := s.place(end, true)
		ok, d := s.Failed(end, p, rule, demoteRand())
		require.True(t, ok)
		inRange(t, 2*time.Second, d)
		last, p := s.place(end, true)
		assert.True(t, last)
		assert.Zero(t, p)
	})
	t.Run("a probe answered 429 gives no verdict", func(t *testing.T) {
		s, end := demote(t, rule, demoteRand())
		_, p := s.place(end, true)
		assert.False(t, s.Answered(end, p, true))
		assert.EqualValues(t, 1, s.streak.Load())
		last, q := s.place(end, true)
		assert.False(t, last)
		assert.Equal(t, p, q, "the next request probes")
	})
	t.Run("any answer from a demoted origin restores it", func(t *testing.T) {
		// As when every candidate is demoted and the configured order
		// sends a request to it.
		s, _ := demote(t, rule, demoteRand())
		assert.False(t, s.Answered(dt0, Probe{}, true), "but not a 429")
		assert.NotZero(t, s.Left(dt0))
		assert.True(t, s.Answered(dt0, Probe{}, false))
		assert.Zero(t, s.Left(dt0))
		assert.Equal(t, dt0.UnixNano(), s.restoredAt.Load())
	})
	t.Run("a probe whose origin another answer restored", func(t *testing.T) {
		rule := defaults(2)
		s, end := demote(t, rule, demoteRand())
		_, a := s.place(end, true)
		require.True(t, s.Answered(end, Probe{}, false), "another request's answer")
		assert.False(t, s.Answered(end, a, false), "restored once")
		ok, _ := s.Failed(end, a, rule, demoteRand())
		assert.False(t, ok, "an ordinary failure, the first of two")
		assert.EqualValues(t, 1, s.fails.Load())
		s.Release(a)
		assert.Zero(t, s.until.Load(), "a stale release changes nothing")
	})
	t.Run("a stale release leaves a newer claim alone", func(t *testing.T) {
		r := demoteRand()
		s, end := demote(t, rule, r)
		_, a := s.place(end, true)
		require.True(t, s.Answered(end, Probe{}, false))
		ok, d := s.Failed(end, Probe{}, rule, r)
		require.True(t, ok)
		_, b := s.place(end.Add(d), true)
		require.NotZero(t, b)
		require.NotEqual(t, a, b)
		s.Release(a)
		assert.Equal(t, b.claimed, s.until.Load())
	})
}

func TestSingleProbe(t *testing.T) {
	const requests = 200
	s, end := demote(t, defaults(1), demoteRand())
	// round lets every request claim at the same instant and returns the
	// claims won and how many requests kept the origin last.
	round := func(now time.Time) (won []Probe, lasts int) {
		var (
			wg    sync.WaitGroup
			mu    sync.Mutex
			start = make(chan struct{})
			nLast atomic.Int32
		)
		for range requests {
			wg.Go(func() {
				<-start
				last, p := s.place(now, true)
				if last {
					nLast.Add(1)
				}
				if p != (Probe{}) {
					mu.Lock()
					won = append(won, p)
					mu.Unlock()
				}
			})
		}
		close(start)
		wg.Wait()
		return won, int(nLast.Load())
	}
	won, lasts := round(end)
	require.Len(t, won, 1, "exactly one probe")
	assert.Equal(t, requests-1, lasts)
	s.Release(won[0])
	won, lasts = round(end.Add(time.Second))
	require.Len(t, won, 1, "a released claim goes to exactly one other")
	assert.Equal(t, requests-1, lasts)
	require.True(t, s.Answered(end, won[0], false))
	won, lasts = round(end.Add(time.Second))
	assert.Empty(t, won)
	assert.Zero(t, lasts)
}

func TestConcurrentVerdicts(t *testing.T) {
	const goroutines, each = 64, 50
	rule := defaults(5)
	var s State
	// run calls f from many goroutines at once and counts its trues.
	run := func(f func(i int) bool) int {
		var (
			wg    sync.WaitGroup
			start = make(chan struct{})
			n     atomic.Int32
		)
		for g := range goroutines {
			wg.Go(func() {
				<-start
				for i := range each {
					if f(g*each + i) {
						n.Add(1)
					}
				}
			})
		}
		close(start)
		wg.Wait()
		return int(n.Load())
	}

	assert.Equal(t, 1, run(func(int) bool {
		ok, _ := s.Failed(dt0, Probe{}, rule, nil)
		return ok
	}), "one demotion however many fail at once")
	assert.Equal(t, 1, run(func(int) bool { return s.Answered(dt0, Probe{}, false) }), "one restore")
	assert.Zero(t, s.until.Load())

	// Everything at once, time moving on: every claim ends in a verdict
	// or a release, so none is left behind.
	run(func(i int) bool {
		now := dt0.Add(time.Duration(i) * 10 * time.Millisecond)
		_, p := s.place(now, true)
		switch i % 7 {
		case 0:
			return s.Answered(now, p, false)
		case 1:
			return s.Answered(now, p, true)
		case 2:
			s.Hold(now, time.Second, time.Minute)
			s.Release(p)
			return false
		default:
			ok, _ := s.Failed(now, p, rule, nil)
			return ok
		}
	})
	assert.GreaterOrEqual(t, s.until.Load(), int64(0), "no claim left behind")
}

func TestAllocs(t *testing.T) {
	rule := defaults(1)
	r := demoteRand()
	var healthy State
	down, end := demote(t, rule, r)
	assert.Zero(t, testing.AllocsPerRun(100, func() {
		healthy.place(dt0, true)
		down.place(dt0, true)
		healthy.Answered(dt0, Probe{}, false)
	}))
	assert.Zero(t, testing.AllocsPerRun(100, func() {
		_, p := down.place(end, true)
		down.Release(p)
		_, p = down.place(end, true)
		down.Failed(end, p, rule, r)
		down.Hold(end, time.Second, time.Minute)
		down.Answered(end, Probe{}, false)
		down.Failed(end, Probe{}, rule, r)
		end = end.Add(time.Hour)
	}))
}

func BenchmarkPlace(b *testing.B) {
	b.ReportAllocs()
	var s State
	for b.Loop() {
		s.place(dt0, true)
	}
}

func BenchmarkAnswered(b *testing.B) {
	b.ReportAllocs()
	var s State
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			s.Answered(dt0, Probe{}, false)
		}
	})
}

// place is Order and Claim at once, as set-up used to do: what the
// demotion's own tests drive. A claim lost puts the origin last, as
// set-up does for a request that comes after the claim.
func (s *State) place(now time.Time, mayProbe bool) (last bool, p Probe) {
	last, probing := s.Order(now, mayProbe)
	if !probing {
		return last, Probe{}
	}
	p, ok := s.Claim(now)
	return !ok, p
}

// TestPhaseOf walks the word through every phase at fixed instants.
func TestPhaseOf(t *testing.T) {
	u := dt0.UnixNano()
	for _, tc := range []struct {
		until int64
		now   time.Time
		want  phase
	}{
		{0, dt0, undemoted},
		{u, dt0.Add(-time.Nanosecond), demoted},
		{u, dt0, expired},
		{u, dt0.Add(time.Hour), expired},
		{-u, dt0.Add(-time.Hour), probed},
		{-u, dt0.Add(time.Hour), probed},
	} {
		assert.Equal(t, tc.want, phaseOf(tc.until, tc.now), "until %d at %v", tc.until, tc.now)
	}
	assert.Equal(t, "undemoted demoted expired probed",
		fmt.Sprint(undemoted, demoted, expired, probed))
}

// TestClaimInEveryPhase: a claim is won only in the expired phase, and an
// origin restored since it was ordered needs none.
func TestClaimInEveryPhase(t *testing.T) {
	var s State
	p, ok := s.Claim(dt0)
	assert.True(t, ok, "undemoted: no probe needed")
	assert.False(t, p.Claimed())

	d, end := demote(t, defaults(1), demoteRand())
	_, ok = d.Claim(end.Add(-time.Nanosecond))
	assert.False(t, ok, "still demoted")
	p, ok = d.Claim(end)
	require.True(t, ok)
	assert.True(t, p.Claimed())
	_, ok = d.Claim(end)
	assert.False(t, ok, "probed by another")
}

// TestLasted: a probe reads the length of the demotion it probes, or base
// once another demotion has begun.
func TestLasted(t *testing.T) {
	rule := defaults(1)
	r := demoteRand()
	s, end := demote(t, rule, r)
	p, ok := s.Claim(end)
	require.True(t, ok)
	assert.Equal(t, end.Sub(dt0), s.Lasted(p, time.Minute))

	require.True(t, s.Answered(end, Probe{}, false), "another request's answer")
	later := end.Add(time.Hour)
	demoted, _ := s.Failed(later, Probe{}, rule, r)
	require.True(t, demoted)
	assert.Equal(t, time.Minute, s.Lasted(p, time.Minute), "another demotion began")
}

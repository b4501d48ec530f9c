package httpretry

import (
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

func demoteRand() *rand.Rand { return rand.New(rand.NewPCG(17, 18)) }

// inRange asserts that d was drawn for a demotion whose ceiling is ceil.
func inRange(t *testing.T, ceil, d time.Duration) {
	t.Helper()
	assert.GreaterOrEqual(t, d, ceil/2)
	assert.LessOrEqual(t, d, ceil)
}

// demoted returns an origin demoted at dt0 under rule (After 1) and the
// instant its demotion ends.
func demoted(t *testing.T, rule demoteRule, r *rand.Rand) (*demotion, time.Time) {
	t.Helper()
	var s demotion
	for range rule.after - 1 {
		s.failed(dt0, probe{}, rule, r)
	}
	ok, d := s.failed(dt0, probe{}, rule, r)
	require.True(t, ok)
	return &s, dt0.Add(d)
}

func TestDemoteProblems(t *testing.T) {
	for _, tc := range []struct {
		name string
		d    Demote
		want []string
	}{
		{"zero", Demote{}, nil},
		{"default", Demote{After: 5}, nil},
		{"full", Demote{After: 100, For: time.Second, Max: time.Minute}, nil},
		{"for and max alone", Demote{For: time.Second, Max: 2 * time.Second}, nil},
		{"max equal to for", Demote{After: 1, For: time.Second, Max: time.Second}, nil},
		{"for above the default max", Demote{After: 1, For: time.Minute}, nil},
		{"max below the default for", Demote{After: 1, Max: time.Millisecond}, nil},
		{"after negative: off", Demote{After: -1}, nil},
		{"after very negative: off", Demote{After: -1000}, nil},
		{"after too large", Demote{After: 101}, []string{"Demote.After 101 is above 100"}},
		{"for negative", Demote{After: 5, For: -time.Second}, []string{"Demote.For -1s is negative"}},
		{"max negative", Demote{After: 5, Max: -time.Second}, []string{"Demote.Max -1s is negative"}},
		{"max below for", Demote{After: 5, For: 2 * time.Second, Max: time.Second},
			[]string{"Demote.Max 1s is less than Demote.For 2s"}},
		{"off, still checked", Demote{After: -1, For: -time.Second, Max: -time.Millisecond}, []string{
			"Demote.For -1s is negative",
			"Demote.Max -1ms is negative",
		}},
		{"all at once", Demote{After: 300, For: -time.Second, Max: -time.Millisecond}, []string{
			"Demote.After 300 is above 100",
			"Demote.For -1s is negative",
			"Demote.Max -1ms is negative",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, tc.d.problems())
		})
	}
}

func TestDemoteResolve(t *testing.T) {
	for _, tc := range []struct {
		name string
		d    Demote
		want demoteRule
	}{
		{"zero: the default", Demote{}, demoteRule{after: 5, base: time.Second, max: 30 * time.Second}},
		{"off", Demote{After: -1, For: 2 * time.Second}, demoteRule{after: 0, base: 2 * time.Second, max: 30 * time.Second}},
		{"default", Demote{After: 5}, demoteRule{after: 5, base: time.Second, max: 30 * time.Second}},
		{"set", Demote{After: 3, For: 2 * time.Second, Max: 10 * time.Second},
			demoteRule{after: 3, base: 2 * time.Second, max: 10 * time.Second}},
		{"max only", Demote{After: 1, Max: 5 * time.Second}, demoteRule{after: 1, base: time.Second, max: 5 * time.Second}},
		{"max below the default for", Demote{After: 1, Max: time.Millisecond},
			demoteRule{after: 1, base: time.Second, max: time.Millisecond}},
		{"for above the default max", Demote{After: 1, For: time.Minute},
			demoteRule{after: 1, base: time.Minute, max: time.Minute}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, tc.d.resolve())
		})
	}
}

func TestDemotionCount(t *testing.T) {
	rule := Demote{After: 3}.resolve()
	r := demoteRand()
	fail := func(s *demotion) bool {
		ok, _ := s.failed(dt0, probe{}, rule, r)
		return ok
	}

	t.Run("After in a row demote", func(t *testing.T) {
		var s demotion
		assert.False(t, fail(&s))
		assert.False(t, fail(&s))
		last, _ := s.place(dt0, true)
		assert.False(t, last, "two failures are not yet three")
		ok, d := s.failed(dt0, probe{}, rule, r)
		require.True(t, ok)
		inRange(t, time.Second, d)
		assert.Equal(t, d, s.left(dt0))
		last, _ = s.place(dt0, true)
		assert.True(t, last)
		assert.EqualValues(t, 1, s.streak.Load())
		assert.Zero(t, s.fails.Load(), "a demotion starts the next count afresh")
	})
	t.Run("an answer resets the count", func(t *testing.T) {
		var s demotion
		fail(&s)
		fail(&s)
		assert.False(t, s.answered(dt0, probe{}, false), "nothing to restore")
		assert.False(t, fail(&s))
		assert.False(t, fail(&s))
		assert.True(t, fail(&s))
	})
	t.Run("a 429 resets the count like any answer", func(t *testing.T) {
		var s demotion
		fail(&s)
		fail(&s)
		assert.False(t, s.answered(dt0, probe{}, true))
		assert.False(t, fail(&s))
		assert.False(t, fail(&s))
		assert.True(t, fail(&s))
	})
	t.Run("failures while demoted add nothing", func(t *testing.T) {
		s, _ := demoted(t, rule, r)
		left := s.left(dt0)
		for range 10 {
			assert.False(t, fail(s))
		}
		assert.Equal(t, left, s.left(dt0))
		assert.Zero(t, s.fails.Load())
		assert.EqualValues(t, 1, s.streak.Load())
	})
	t.Run("After -1 is off", func(t *testing.T) {
		var s demotion
		for range 200 {
			ok, _ := s.failed(dt0, probe{}, Demote{After: -1}.resolve(), r)
			assert.False(t, ok)
		}
		assert.Zero(t, s.fails.Load())
	})
}

func TestDemotionRetryAfter(t *testing.T) {
	rule := Demote{After: 1, For: time.Second}.resolve()
	const maxRA = time.Minute

	t.Run("an undemoted origin is not demoted and nothing is counted", func(t *testing.T) {
		s := demotion{}
		rule := Demote{After: 2}.resolve()
		s.hold(dt0, 10*time.Second, maxRA)
		s.hold(dt0, 10*time.Second, maxRA)
		assert.Zero(t, s.left(dt0))
		last, _ := s.place(dt0, true)
		assert.False(t, last)
		ok, _ := s.failed(dt0, probe{}, rule, demoteRand())
		assert.False(t, ok, "a hold is not a failure")
		ok, _ = s.failed(dt0, probe{}, rule, demoteRand())
		assert.True(t, ok)
	})
	t.Run("longer than the demotion has left", func(t *testing.T) {
		s, _ := demoted(t, rule, demoteRand())
		s.hold(dt0, 5*time.Second, maxRA)
		assert.Equal(t, 5*time.Second, s.left(dt0))
		last, p := s.place(dt0.Add(4*time.Second), true)
		assert.True(t, last)
		assert.Zero(t, p)
		assert.Zero(t, s.fails.Load(), "no failure counted")
		assert.EqualValues(t, 1, s.streak.Load(), "not a demotion in a row")
	})
	t.Run("shorter than the demotion has left", func(t *testing.T) {
		s, _ := demoted(t, rule, demoteRand())
		s.hold(dt0, 5*time.Second, maxRA)
		s.hold(dt0.Add(time.Second), 2*time.Second, maxRA)
		s.hold(dt0, 0, maxRA)
		s.hold(dt0, -time.Second, maxRA)
		assert.Equal(t, 5*time.Second, s.left(dt0))
	})
	t.Run("at most MaxRetryAfter", func(t *testing.T) {
		s, _ := demoted(t, rule, demoteRand())
		s.hold(dt0, time.Hour, maxRA)
		assert.Equal(t, maxRA, s.left(dt0))
		s.hold(dt0, time.Duration(math.MaxInt64), time.Duration(math.MaxInt64))
		assert.EqualValues(t, int64(math.MaxInt64), s.until.Load(), "saturated, not wrapped")
	})
	t.Run("an expired demotion is held again", func(t *testing.T) {
		s, end := demoted(t, rule, demoteRand())
		later := end.Add(time.Hour)
		s.hold(later, 3*time.Second, maxRA)
		assert.Equal(t, 3*time.Second, s.left(later))
		last, p := s.place(later, true)
		assert.True(t, last)
		assert.Zero(t, p, "no probe before the hold ends")
		_, p = s.place(later.Add(3*time.Second), true)
		assert.NotZero(t, p)
	})
	t.Run("a probe in flight decides", func(t *testing.T) {
		s, end := demoted(t, rule, demoteRand())
		_, p := s.place(end, true)
		require.NotZero(t, p)
		s.hold(end, 10*time.Second, maxRA)
		assert.Equal(t, p.claimed, s.until.Load(), "the claim is intact")
		// The probe's own 429: its claim is given back, then its
		// Retry-After holds the origin.
		assert.False(t, s.answered(end, p, true))
		s.hold(end, 10*time.Second, maxRA)
		assert.Equal(t, 10*time.Second, s.left(end))
	})
}

func TestDemoteRuleLength(t *testing.T) {
	rule := Demote{After: 1, For: time.Second, Max: 4 * time.Second}.resolve()
	for n, want := range map[int64]time.Duration{
		1: time.Second, 2: 2 * time.Second, 4: 4 * time.Second, 5: 4 * time.Second,
		math.MaxInt64: 4 * time.Second,
	} {
		assert.Equal(t, want, rule.ceiling(n), "n=%d", n)
	}
	huge := Demote{After: 1, For: time.Nanosecond, Max: time.Duration(math.MaxInt64)}.resolve()
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

func TestDemotionLengthsInARow(t *testing.T) {
	rule := Demote{After: 2, For: time.Second, Max: 4 * time.Second}.resolve()
	r := demoteRand()
	s, end := demoted(t, rule, r)
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
		ok, d := s.failed(now, p, rule, r)
		require.True(t, ok, "a failed probe demotes at once, After or not")
		inRange(t, ceil, d)
		assert.EqualValues(t, n, s.streak.Load())
		assert.Equal(t, d, s.left(now))
		end = now.Add(d)
	}
}

func TestDemotionDecay(t *testing.T) {
	rule := Demote{After: 1, For: time.Second, Max: 30 * time.Second}.resolve()
	// restored is an origin demoted three times in a row, restored at the
	// instant it returns.
	restored := func(t *testing.T) (*demotion, time.Time) {
		r := demoteRand()
		s, end := demoted(t, rule, r)
		for range 2 {
			_, p := s.place(end, true)
			ok, d := s.failed(end, p, rule, r)
			require.True(t, ok)
			end = end.Add(d)
		}
		require.EqualValues(t, 3, s.streak.Load())
		at := end.Add(time.Hour) // long demoted time decays nothing
		_, p := s.place(at, true)
		require.True(t, s.answered(at, p, false))
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
			ok, d := s.failed(at.Add(tc.after), probe{}, rule, demoteRand())
			require.True(t, ok)
			assert.Equal(t, tc.n, s.streak.Load())
			inRange(t, time.Duration(tc.n)*time.Second, d)
		})
	}
	t.Run("a clock that steps back decays nothing", func(t *testing.T) {
		s, at := restored(t)
		ok, _ := s.failed(at.Add(-time.Minute), probe{}, rule, demoteRand())
		require.True(t, ok)
		assert.EqualValues(t, 4, s.streak.Load())
	})
}

func TestDemotionProbe(t *testing.T) {
	rule := Demote{After: 1, For: time.Second}.resolve()

	t.Run("claimed once the demotion has expired", func(t *testing.T) {
		s, end := demoted(t, rule, demoteRand())
		last, p := s.place(end.Add(-time.Nanosecond), true)
		assert.True(t, last)
		assert.Zero(t, p, "not before it expires")
		last, p = s.place(end, false)
		assert.True(t, last, "a request that may not move on keeps it last")
		assert.Zero(t, p, "and never probes")
		assert.Zero(t, s.left(end))

		last, a := s.place(end, true)
		assert.False(t, last, "the prober keeps its configured place")
		require.NotZero(t, a)
		for _, now := range []time.Time{end, end.Add(time.Hour)} {
			last, p = s.place(now, true)
			assert.True(t, last, "others keep it last until the probe ends")
			assert.Zero(t, p)
		}

		s.release(a)
		last, b := s.place(end.Add(time.Second), true)
		assert.False(t, last, "a released claim is free again")
		require.NotZero(t, b)
		assert.Equal(t, a, b)

		assert.True(t, s.answered(end.Add(time.Second), b, false), "restored")
		assert.Zero(t, s.until.Load())
		assert.Zero(t, s.fails.Load())
		last, p = s.place(end.Add(time.Second), true)
		assert.False(t, last)
		assert.Zero(t, p)
		assert.False(t, s.answered(end.Add(time.Second), b, false), "restored once")
	})
	t.Run("a failed probe demotes again", func(t *testing.T) {
		s, end := demoted(t, rule, demoteRand())
		_, p := s.place(end, true)
		ok, d := s.failed(end, p, rule, demoteRand())
		require.True(t, ok)
		inRange(t, 2*time.Second, d)
		last, p := s.place(end, true)
		assert.True(t, last)
		assert.Zero(t, p)
	})
	t.Run("a probe answered 429 gives no verdict", func(t *testing.T) {
		s, end := demoted(t, rule, demoteRand())
		_, p := s.place(end, true)
		assert.False(t, s.answered(end, p, true))
		assert.EqualValues(t, 1, s.streak.Load())
		last, q := s.place(end, true)
		assert.False(t, last)
		assert.Equal(t, p, q, "the next request probes")
	})
	t.Run("any answer from a demoted origin restores it", func(t *testing.T) {
		// As when every candidate is demoted and the configured order
		// sends a request to it.
		s, _ := demoted(t, rule, demoteRand())
		assert.False(t, s.answered(dt0, probe{}, true), "but not a 429")
		assert.NotZero(t, s.left(dt0))
		assert.True(t, s.answered(dt0, probe{}, false))
		assert.Zero(t, s.left(dt0))
		assert.Equal(t, dt0.UnixNano(), s.restoredAt.Load())
	})
	t.Run("a probe whose origin another answer restored", func(t *testing.T) {
		rule := Demote{After: 2, For: time.Second}.resolve()
		s, end := demoted(t, rule, demoteRand())
		_, a := s.place(end, true)
		require.True(t, s.answered(end, probe{}, false), "another request's answer")
		assert.False(t, s.answered(end, a, false), "restored once")
		ok, _ := s.failed(end, a, rule, demoteRand())
		assert.False(t, ok, "an ordinary failure, the first of two")
		assert.EqualValues(t, 1, s.fails.Load())
		s.release(a)
		assert.Zero(t, s.until.Load(), "a stale release changes nothing")
	})
	t.Run("a stale release leaves a newer claim alone", func(t *testing.T) {
		r := demoteRand()
		s, end := demoted(t, rule, r)
		_, a := s.place(end, true)
		require.True(t, s.answered(end, probe{}, false))
		ok, d := s.failed(end, probe{}, rule, r)
		require.True(t, ok)
		_, b := s.place(end.Add(d), true)
		require.NotZero(t, b)
		require.NotEqual(t, a, b)
		s.release(a)
		assert.Equal(t, b.claimed, s.until.Load())
	})
}

func TestDemotionSingleProbe(t *testing.T) {
	const requests = 200
	s, end := demoted(t, Demote{After: 1}.resolve(), demoteRand())
	// round lets every request claim at the same instant and returns the
	// claims won and how many requests kept the origin last.
	round := func(now time.Time) (won []probe, lasts int) {
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
				if p != (probe{}) {
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
	s.release(won[0])
	won, lasts = round(end.Add(time.Second))
	require.Len(t, won, 1, "a released claim goes to exactly one other")
	assert.Equal(t, requests-1, lasts)
	require.True(t, s.answered(end, won[0], false))
	won, lasts = round(end.Add(time.Second))
	assert.Empty(t, won)
	assert.Zero(t, lasts)
}

func TestDemotionConcurrentVerdicts(t *testing.T) {
	const goroutines, each = 64, 50
	rule := Demote{After: 5}.resolve()
	var s demotion
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
		ok, _ := s.failed(dt0, probe{}, rule, nil)
		return ok
	}), "one demotion however many fail at once")
	assert.Equal(t, 1, run(func(int) bool { return s.answered(dt0, probe{}, false) }), "one restore")
	assert.Zero(t, s.until.Load())

	// Everything at once, time moving on: every claim ends in a verdict
	// or a release, so none is left behind.
	run(func(i int) bool {
		now := dt0.Add(time.Duration(i) * 10 * time.Millisecond)
		_, p := s.place(now, true)
		switch i % 7 {
		case 0:
			return s.answered(now, p, false)
		case 1:
			return s.answered(now, p, true)
		case 2:
			s.hold(now, time.Second, time.Minute)
			s.release(p)
			return false
		default:
			ok, _ := s.failed(now, p, rule, nil)
			return ok
		}
	})
	assert.GreaterOrEqual(t, s.until.Load(), int64(0), "no claim left behind")
}

func TestDemotionAllocs(t *testing.T) {
	rule := Demote{After: 1}.resolve()
	r := demoteRand()
	var healthy demotion
	down, end := demoted(t, rule, r)
	assert.Zero(t, testing.AllocsPerRun(100, func() {
		healthy.place(dt0, true)
		down.place(dt0, true)
		healthy.answered(dt0, probe{}, false)
	}))
	assert.Zero(t, testing.AllocsPerRun(100, func() {
		_, p := down.place(end, true)
		down.release(p)
		_, p = down.place(end, true)
		down.failed(end, p, rule, r)
		down.hold(end, time.Second, time.Minute)
		down.answered(end, probe{}, false)
		down.failed(end, probe{}, rule, r)
		end = end.Add(time.Hour)
	}))
}

func TestDemoteLast(t *testing.T) {
	// Upper-case candidates go last.
	for _, tc := range []struct {
		name     string
		in, want string
	}{
		{"none", "", ""},
		{"one candidate", "a", "a"},
		{"one candidate last", "A", "A"},
		{"none last", "abcd", "abcd"},
		{"all last: the configured order", "ABCD", "ABCD"},
		{"the primary", "Abc", "bcA"},
		{"a middle one", "aBc", "acB"},
		{"the last one", "abC", "abC"},
		{"all but one", "ABcD", "cABD"},
		{"stable both ways", "AbCdEf", "bdfACE"},
		{"eight", "hGfEdCbA", "hfdbGECA"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := []byte(tc.in)
			var seen []byte
			demoteLast(s, func(c *byte) bool {
				seen = append(seen, *c)
				return 'A' <= *c && *c <= 'Z'
			})
			assert.Equal(t, tc.want, string(s))
			assert.Equal(t, tc.in, string(seen), "once each, in configured order")
		})
	}
}

// candidate stands for the attempt loop's target: a struct holding the
// origin's shared standing and what the request keeps of it.
type candidate struct {
	name  string
	s     *demotion
	probe probe
	_     [4]int64 // the rest of a target's size
}

func TestDemoteLastCandidates(t *testing.T) {
	rule := Demote{After: 1}.resolve()
	r := demoteRand()
	primary, end := demoted(t, rule, r)
	backup, _ := demoted(t, rule, r)
	var healthy demotion
	order := func(now time.Time, mayProbe bool) (names []string, probing []string) {
		c := []candidate{{name: "primary", s: primary}, {name: "backup", s: backup}, {name: "other", s: &healthy}}
		demoteLast(c, func(c *candidate) bool {
			last, p := c.s.place(now, mayProbe)
			c.probe = p
			return last
		})
		for _, c := range c {
			names = append(names, c.name)
			if c.probe != (probe{}) {
				probing = append(probing, c.name)
			}
		}
		return names, probing
	}
	names, probing := order(dt0, true)
	assert.Equal(t, []string{"other", "primary", "backup"}, names)
	assert.Empty(t, probing)

	later := end.Add(time.Hour) // both demotions over
	names, probing = order(later, false)
	assert.Equal(t, []string{"other", "primary", "backup"}, names, "no probe without moving on")
	assert.Empty(t, probing)
	names, probing = order(later, true)
	assert.Equal(t, []string{"primary", "backup", "other"}, names, "probes keep their places")
	assert.Equal(t, []string{"primary", "backup"}, probing)
	names, probing = order(later, true)
	assert.Equal(t, []string{"other", "primary", "backup"}, names, "last while probed")
	assert.Empty(t, probing)

	ok, _ := healthy.failed(later, probe{}, rule, r)
	require.True(t, ok)
	names, _ = order(later, true)
	assert.Equal(t, []string{"primary", "backup", "other"}, names, "all last: the configured order")
}

func TestDemoteLastAllocs(t *testing.T) {
	rule := Demote{After: 1}.resolve()
	down, _ := demoted(t, rule, demoteRand())
	var up demotion
	orig := []candidate{{s: down}, {s: &up}, {s: down}, {s: &up}}
	c := make([]candidate, len(orig))
	now := dt0
	assert.Zero(t, testing.AllocsPerRun(100, func() {
		copy(c, orig)
		demoteLast(c, func(c *candidate) bool {
			last, p := c.s.place(now, true)
			c.probe = p
			return last
		})
	}))
	assert.Same(t, &up, c[0].s)
	assert.Same(t, down, c[3].s)
}

func BenchmarkDemotionPlace(b *testing.B) {
	b.ReportAllocs()
	var s demotion
	for b.Loop() {
		s.place(dt0, true)
	}
}

func BenchmarkDemotionAnswered(b *testing.B) {
	b.ReportAllocs()
	var s demotion
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			s.answered(dt0, probe{}, false)
		}
	})
}

// BenchmarkDemoteLast orders a primary and three fallbacks, the primary
// demoted, as a request with fallbacks would.
func BenchmarkDemoteLast(b *testing.B) {
	b.ReportAllocs()
	rule := Demote{After: 1}.resolve()
	var down, up demotion
	down.failed(dt0, probe{}, rule, demoteRand())
	orig := []candidate{{s: &down}, {s: &up}, {s: &up}, {s: &up}}
	c := make([]candidate, len(orig))
	for b.Loop() {
		copy(c, orig)
		demoteLast(c, func(c *candidate) bool {
			last, p := c.s.place(dt0, true)
			c.probe = p
			return last
		})
	}
}

// place is order and claim at once, as set-up used to do: what the
// demotion's own tests drive. A claim lost puts the origin last, as
// set-up does for a request that comes after the claim.
func (s *demotion) place(now time.Time, mayProbe bool) (last bool, p probe) {
	last, probing := s.order(now, mayProbe)
	if !probing {
		return last, probe{}
	}
	p, ok := s.claim(now)
	return !ok, p
}

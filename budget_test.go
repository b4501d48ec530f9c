package httpretry

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// bt0 is a fixed instant on a whole second, so that the default window's
// 1 s buckets start exactly at bt0, bt0+1s, and so on.
var bt0 = time.Date(2026, time.November, 29, 12, 0, 0, 0, time.UTC)

func budgetAt(d time.Duration) time.Time { return bt0.Add(d) }

// windowAt is what b counts in its window at now: its Stats without the
// allowance and the credit, which tests of the floor check.
func windowAt(b *Budget, now time.Time) BudgetStats {
	s := b.statsAt(now)
	return BudgetStats{Requests: s.Requests, Retries: s.Retries}
}

func newTestBudget(cfg BudgetConfig) *Budget {
	b := &Budget{}
	b.configure(cfg)
	return b
}

func recordTimes(b *Budget, n int, now time.Time) {
	for range n {
		b.countAt(now)
	}
}

// reserveAll reserves until the budget refuses and returns the grants.
func reserveAll(t *testing.T, b *Budget, now time.Time) int {
	t.Helper()
	for n := 0; n < 1_000_000; n++ {
		if !b.tryReserveAt(now) {
			return n
		}
	}
	t.Fatal("the budget never refused")
	return 0
}

func TestBudgetMinRetriesFloor(t *testing.T) {
	b := newTestBudget(BudgetConfig{})
	for i := range 10 {
		require.True(t, b.tryReserveAt(bt0), "grant %d", i+1)
	}
	assert.False(t, b.tryReserveAt(bt0), "the 11th")
	assert.False(t, b.tryReserveAt(budgetAt(9*time.Second)), "still the same window")
	assert.Equal(t, BudgetStats{Requests: 0, Retries: 10}, windowAt(b, bt0))
}

func TestBudgetZeroValue(t *testing.T) {
	var b Budget // default config without configure
	assert.Equal(t, 10, reserveAll(t, &b, bt0))
	recordTimes(&b, 100, bt0)
	assert.Equal(t, 10, reserveAll(t, &b, bt0), "20 %% of 100 is 20, 10 of them already spent")
	assert.Equal(t, BudgetStats{Requests: 100, Retries: 20}, windowAt(&b, bt0))
}

func TestBudgetPercent(t *testing.T) {
	b := newTestBudget(BudgetConfig{Percent: 20})
	recordTimes(b, 1000, bt0)
	assert.Equal(t, 200, reserveAll(t, b, bt0))
	assert.Equal(t, BudgetStats{Requests: 1000, Retries: 200}, windowAt(b, bt0))
	// One more request does not make room: 20 % of 1001 is 200.2.
	b.countAt(bt0)
	assert.False(t, b.tryReserveAt(bt0))
	// Four more do: 20 % of 1005 is 201.
	recordTimes(b, 4, bt0)
	assert.True(t, b.tryReserveAt(bt0))
	assert.False(t, b.tryReserveAt(bt0))
}

func TestBudgetMaxNotSum(t *testing.T) {
	tests := []struct {
		name     string
		cfg      BudgetConfig
		requests int
		want     int
	}{
		{"default, quiet", BudgetConfig{}, 0, 10},
		{"default, 30 requests: floor, not 10+6", BudgetConfig{}, 30, 10},
		{"default, 49 requests: 9.8 rounds down", BudgetConfig{}, 49, 10},
		{"default, 50 requests: both 10", BudgetConfig{}, 50, 10},
		{"default, 55 requests", BudgetConfig{}, 55, 11},
		{"default, 100 requests: 20, not 30", BudgetConfig{}, 100, 20},
		{"percent 50, 100 requests", BudgetConfig{Percent: 50}, 100, 50},
		{"percent 100, min 1, 5 requests", BudgetConfig{Percent: 100, MinRetries: 1}, 5, 5},
		{"percent 200", BudgetConfig{Percent: 200, MinRetries: 1}, 10, 20},
		{"min 3, quiet", BudgetConfig{MinRetries: 3}, 0, 3},
		{"min 3, 20 requests", BudgetConfig{MinRetries: 3}, 20, 4},
		{"min 50, 100 requests", BudgetConfig{MinRetries: 50}, 100, 50},
		{"strict, quiet", BudgetConfig{MinRetries: -1}, 0, 0},
		{"strict, 4 requests: 0.8 rounds down", BudgetConfig{MinRetries: -1}, 4, 0},
		{"strict, 5 requests", BudgetConfig{MinRetries: -1}, 5, 1},
		{"strict, 10 requests", BudgetConfig{MinRetries: -1}, 10, 2},
		{"strict, percent 50, 7 requests", BudgetConfig{MinRetries: -1, Percent: 50}, 7, 3},
		{"very negative min is strict", BudgetConfig{MinRetries: -1000}, 100, 20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newTestBudget(tt.cfg)
			recordTimes(b, tt.requests, bt0)
			assert.Equal(t, tt.want, reserveAll(t, b, bt0))
			assert.Equal(t, BudgetStats{Requests: tt.requests, Retries: tt.want}, windowAt(b, bt0))
		})
	}
}

func TestBudgetStrictQuietWindow(t *testing.T) {
	b := newTestBudget(BudgetConfig{MinRetries: -1})
	assert.False(t, b.tryReserveAt(bt0))
	assert.False(t, b.tryReserveAt(budgetAt(time.Hour)))
	assert.Equal(t, BudgetStats{}, windowAt(b, bt0))
	assert.Equal(t, BudgetStats{}, windowAt(b, budgetAt(time.Hour)))
}

func TestBudgetWindowRollsBucketByBucket(t *testing.T) {
	b := newTestBudget(BudgetConfig{}) // 10 s window in 1 s buckets
	for i := range 10 {
		recordTimes(b, 10, budgetAt(time.Duration(i)*time.Second+500*time.Millisecond))
	}
	require.Equal(t, BudgetStats{Requests: 100}, windowAt(b, budgetAt(9*time.Second+999*time.Millisecond)))
	for k := 1; k <= 10; k++ {
		// At bt0+(9+k)s the first k buckets have left the window.
		now := budgetAt(time.Duration(9+k) * time.Second)
		want := 100 - 10*k
		assert.Equal(t, BudgetStats{Requests: want}, windowAt(b, now), "at +%ds", 9+k)
		assert.Equal(t, BudgetStats{Requests: want}, windowAt(b, now.Add(999*time.Millisecond)), "at +%ds+999ms", 9+k)
		assert.Equal(t, BudgetStats{Requests: want + 10}, windowAt(b, now.Add(-time.Nanosecond)), "just before +%ds", 9+k)
	}
}

func TestBudgetWindowRolls(t *testing.T) {
	b := newTestBudget(BudgetConfig{})
	recordTimes(b, 100, bt0)
	recordTimes(b, 50, budgetAt(3500*time.Millisecond))
	for range 5 {
		require.True(t, b.tryReserveAt(budgetAt(3500*time.Millisecond)))
	}

	steps := []struct {
		at   time.Duration
		want BudgetStats
	}{
		{0, BudgetStats{Requests: 100}},
		{3 * time.Second, BudgetStats{Requests: 150, Retries: 5}},
		{3500 * time.Millisecond, BudgetStats{Requests: 150, Retries: 5}},
		{9999 * time.Millisecond, BudgetStats{Requests: 150, Retries: 5}},
		{10 * time.Second, BudgetStats{Requests: 50, Retries: 5}},
		{12999 * time.Millisecond, BudgetStats{Requests: 50, Retries: 5}},
		{13 * time.Second, BudgetStats{}},
		{time.Hour, BudgetStats{}},
	}
	for _, s := range steps {
		assert.Equal(t, s.want, windowAt(b, budgetAt(s.at)), "at +%v", s.at)
	}

	// At +10s: 50 requests and 5 retries count, so 5 more are granted.
	assert.Equal(t, 5, reserveAll(t, b, budgetAt(10*time.Second)))
	// At +13s the resends of +3.5s have left too; only the 5 charged at
	// +10s count against the floor of 10, which spends 5 of its credits.
	assert.Equal(t, BudgetStats{Retries: 5}, windowAt(b, budgetAt(13*time.Second)))
	assert.Equal(t, 5, reserveAll(t, b, budgetAt(13*time.Second)))
	// At +20s the resends of +10s are gone, those of +13s are not; the
	// floor spends its 5 last credits.
	assert.Equal(t, BudgetStats{Retries: 5}, windowAt(b, budgetAt(20*time.Second)))
	assert.Equal(t, 5, reserveAll(t, b, budgetAt(20*time.Second)))
	// A full window after the last charge the window is empty, but the
	// floor is not granted afresh: its credit is earned back by requests.
	assert.Equal(t, BudgetStats{}, windowAt(b, budgetAt(30*time.Second)))
	assert.Equal(t, 0, reserveAll(t, b, budgetAt(30*time.Second)))
	recordTimes(b, 5, budgetAt(30*time.Second))
	assert.Equal(t, 2, reserveAll(t, b, budgetAt(30*time.Second)), "the share of 5 requests, and the credit they earned")
	assert.Equal(t, BudgetStats{Requests: 5, Retries: 2}, windowAt(b, budgetAt(30*time.Second)))

	// A write into a bucket that held a slot one window older clears it.
	b.countAt(budgetAt(40 * time.Second))
	assert.Equal(t, BudgetStats{Requests: 1}, windowAt(b, budgetAt(40*time.Second)))
	assert.Equal(t, BudgetStats{Requests: 1}, windowAt(b, budgetAt(49*time.Second)))
}

func TestBudgetCustomWindow(t *testing.T) {
	b := newTestBudget(BudgetConfig{Window: time.Minute, MinRetries: -1, Percent: 100}) // 6 s buckets
	recordTimes(b, 7, bt0)
	assert.Equal(t, BudgetStats{Requests: 7}, windowAt(b, budgetAt(59*time.Second)))
	assert.Equal(t, BudgetStats{}, windowAt(b, budgetAt(60*time.Second)))
	assert.Equal(t, 7, reserveAll(t, b, budgetAt(59*time.Second)))
	assert.Equal(t, 0, reserveAll(t, b, budgetAt(60*time.Second)))
}

func TestBudgetsReloadKeepsCounts(t *testing.T) {
	bs := NewBudgets()
	b := bs.For("api.example.com", BudgetConfig{Percent: 20})
	recordTimes(b, 100, bt0)
	require.Equal(t, 20, reserveAll(t, b, bt0))

	same := bs.For("api.example.com", BudgetConfig{Percent: 20})
	require.Same(t, b, same)
	assert.Equal(t, BudgetStats{Requests: 100, Retries: 20}, windowAt(b, bt0))
	assert.False(t, b.tryReserveAt(bt0))

	b2 := bs.For("api.example.com", BudgetConfig{Percent: 50})
	require.Same(t, b, b2, "a reload keeps the budget")
	assert.Equal(t, BudgetStats{Requests: 100, Retries: 20}, windowAt(b2, bt0), "a reload keeps the counts")
	assert.Equal(t, 30, reserveAll(t, b2, bt0), "the new percent applies: 50 of 100, 20 spent")

	// Lowering it refuses at once; the counts are still kept.
	b3 := bs.For("api.example.com", BudgetConfig{Percent: 10})
	require.Same(t, b, b3)
	assert.False(t, b3.tryReserveAt(bt0))
	assert.Equal(t, BudgetStats{Requests: 100, Retries: 50}, windowAt(b3, bt0))
}

func TestBudgetsZeroValue(t *testing.T) {
	var bs Budgets
	b := bs.For("example.com", BudgetConfig{})
	require.NotNil(t, b)
	assert.Same(t, b, bs.For("example.com", BudgetConfig{}))
	assert.NotSame(t, b, bs.For("example.org", BudgetConfig{}))
	assert.Equal(t, 10, reserveAll(t, b, bt0))
}

func TestBudgetsHostCaseInsensitive(t *testing.T) {
	bs := NewBudgets()
	b := bs.For("API.Example.COM", BudgetConfig{})
	assert.Same(t, b, bs.For("api.example.com", BudgetConfig{}))
	assert.Same(t, b, bs.For("Api.Example.Com", BudgetConfig{}))
	other := bs.For("api.example.com:8443", BudgetConfig{})
	assert.NotSame(t, b, other)
	assert.Equal(t, map[string]*Budget{"api.example.com": b, "api.example.com:8443": other},
		budgetRegistry(t, bs), "one key per host, whatever its spellings")
}

func TestBudgetsEvictIdleHosts(t *testing.T) {
	bs := &Budgets{}
	t0 := bt0.UnixNano()
	sec := int64(time.Second)

	a := bs.insertBudget("a", t0) // first insertion: sweeps the empty registry
	a.countAt(bt0)
	long := bs.insertBudget("long", t0)
	long.configure(BudgetConfig{Window: time.Minute})
	long.countAt(bt0)
	b := bs.insertBudget("b", t0+sec) // no sweep: 1 s since the last
	b.countAt(budgetAt(5 * time.Second))
	assert.Len(t, budgetRegistry(t, bs), 3)

	// 10.5 s after the last sweep: "a" has been idle for a whole window;
	// "b" has not, nor has "long" with its 1 min window.
	c := bs.insertBudget("c", t0+10*sec+sec/2)
	c.countAt(budgetAt(10500 * time.Millisecond))
	assert.ElementsMatch(t, []string{"b", "c", "long"}, mapKeys(budgetRegistry(t, bs)))
	a2 := bs.insertBudget("a", t0+10*sec+sec/2)
	assert.NotSame(t, a, a2, "an evicted host starts afresh")
	assert.Equal(t, BudgetStats{}, windowAt(a2, bt0))
	a2.countAt(budgetAt(10500 * time.Millisecond))

	// "b" is idle from +15 s, but no sweep runs until 10 s after the last.
	bs.insertBudget("d", t0+16*sec)
	assert.Contains(t, budgetRegistry(t, bs), "b")

	// The next sweep forgets it, and "d", which never counted anything;
	// "long" stays within its minute, "a" and "c" were active at +19s.
	a2.countAt(budgetAt(19 * time.Second))
	c.countAt(budgetAt(19 * time.Second))
	bs.insertBudget("e", t0+21*sec)
	assert.ElementsMatch(t, []string{"a", "c", "e", "long"}, mapKeys(budgetRegistry(t, bs)))
	assert.Same(t, long, budgetRegistry(t, bs)["long"])

	// A minute and more later, everything idle goes.
	bs.insertBudget("f", t0+61*sec)
	assert.ElementsMatch(t, []string{"f"}, mapKeys(budgetRegistry(t, bs)))
}

// registry is a snapshot of bs's hosts; it also checks that the count the
// registry keeps for its bound is the number of keys it holds.
func budgetRegistry(t *testing.T, bs *Budgets) map[string]*Budget {
	t.Helper()
	m := make(map[string]*Budget)
	bs.hosts.Range(func(k, v any) bool {
		m[k.(string)] = &v.(*originRecord).budget
		return true
	})
	bs.mu.Lock()
	size := bs.size
	bs.mu.Unlock()
	require.Equal(t, len(m), size, "the registry's count of its keys")
	return m
}

func mapKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestBudgetsBoundedHosts(t *testing.T) {
	bs := &Budgets{}
	t0 := bt0.UnixNano()
	oldest := bs.insertBudget("oldest", t0)
	oldest.countAt(bt0)
	for i := 1; i < maxBudgetHosts; i++ {
		bs.insertBudget(fmt.Sprintf("h%d", i), t0+int64(time.Second)).countAt(budgetAt(time.Second))
	}
	require.Len(t, budgetRegistry(t, bs), maxBudgetHosts)

	// Full, and nobody idle: the least recently active tenth goes, the
	// oldest first, so that the next thousand insertions need no scan.
	bs.insertBudget("new", t0+2*int64(time.Second)).countAt(budgetAt(2 * time.Second))
	require.Len(t, budgetRegistry(t, bs), maxBudgetHosts-maxBudgetHosts/10+1)
	assert.NotContains(t, budgetRegistry(t, bs), "oldest")
	assert.Contains(t, budgetRegistry(t, bs), "new")

	// It never grows past the bound.
	for i := range 10 {
		now := t0 + 3*int64(time.Second) + int64(i)*int64(time.Millisecond)
		bs.insertBudget(fmt.Sprintf("more%d", i), now).countAt(time.Unix(0, now))
		require.LessOrEqual(t, len(budgetRegistry(t, bs)), maxBudgetHosts, "after insertion %d", i)
	}
	assert.Len(t, budgetRegistry(t, bs), maxBudgetHosts-maxBudgetHosts/10+11)
	assert.Contains(t, budgetRegistry(t, bs), "more9")

	// An existing host is found, not inserted.
	assert.Same(t, budgetRegistry(t, bs)["more9"], bs.insertBudget("more9", t0+4*int64(time.Second)))
	assert.Len(t, budgetRegistry(t, bs), maxBudgetHosts-maxBudgetHosts/10+11)
}

func TestBudgetConcurrentTryReserveExact(t *testing.T) {
	const goroutines, perG = 8, 500
	b := newTestBudget(BudgetConfig{Percent: 20})
	recordTimes(b, 1000, bt0)
	var granted atomic.Int64
	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() {
			for range perG {
				if b.tryReserveAt(bt0) {
					granted.Add(1)
				}
			}
		})
	}
	wg.Wait()
	assert.Equal(t, int64(200), granted.Load())
	assert.Equal(t, BudgetStats{Requests: 1000, Retries: 200}, windowAt(b, bt0))
}

func TestBudgetConcurrentRecordAndReserve(t *testing.T) {
	// With Percent 100 and no floor, each request makes room for exactly
	// one resend. Every goroutine records, then tries twice: the ungranted
	// room never exceeds the tries still to come, so by the end every
	// request's resend was granted and none more.
	const goroutines, perG = 8, 300
	b := newTestBudget(BudgetConfig{Percent: 100, MinRetries: -1})
	var granted atomic.Int64
	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() {
			for range perG {
				now := bt0
				b.countAt(now)
				if b.tryReserveAt(now) {
					granted.Add(1)
				}
				if b.tryReserveAt(now) { // a second try may only succeed on another's request
					granted.Add(1)
				}
			}
		})
	}
	wg.Wait()
	s := windowAt(b, bt0)
	assert.Equal(t, goroutines*perG, s.Requests)
	assert.Equal(t, int64(s.Retries), granted.Load())
	assert.Equal(t, goroutines*perG, s.Retries, "every request makes room for exactly one")
}

func TestBudgetConcurrentRealClock(t *testing.T) {
	const goroutines, perG = 8, 200
	bs := NewBudgets()
	var granted atomic.Int64
	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() {
			for range perG {
				b := bs.For("Race.Example", BudgetConfig{MinRetries: -1, Percent: 50})
				b.Record()
				if b.TryReserve() {
					granted.Add(1)
				}
				_ = b.Stats()
			}
		})
	}
	wg.Wait()
	s := bs.For("race.example", BudgetConfig{MinRetries: -1, Percent: 50}).Stats()
	assert.Equal(t, goroutines*perG, s.Requests)
	assert.Equal(t, int64(s.Retries), granted.Load())
	// Callers whose clocks straddle a bucket boundary may each miss the
	// other's newest bucket, so allow one extra grant per goroutine.
	assert.LessOrEqual(t, s.Retries, s.Requests/2+goroutines)
	assert.Positive(t, s.Retries)
}

func TestBudgetNoAllocations(t *testing.T) {
	b := newTestBudget(BudgetConfig{Percent: 50})
	now := bt0
	allocs := testing.AllocsPerRun(1000, func() {
		b.countAt(now)
		b.tryReserveAt(now)
		windowAt(b, now)
		now = now.Add(700 * time.Millisecond) // roll buckets over as well
	})
	assert.Zero(t, allocs)

	bs := NewBudgets()
	bs.For("api.example.com", BudgetConfig{})
	allocs = testing.AllocsPerRun(1000, func() {
		bs.For("api.example.com", BudgetConfig{}).countAt(bt0)
	})
	assert.Zero(t, allocs, "For on a known lower-case host")
	allocs = testing.AllocsPerRun(1000, func() {
		bs.For("api.example.com:443", BudgetConfig{}).countAt(bt0)
	})
	assert.Zero(t, allocs, "For on another lower-case spelling of the host it returned last")
}

func TestBudgetsForAfterEviction(t *testing.T) {
	bs := NewBudgets()
	a := bs.For("a.example", BudgetConfig{})
	b := bs.For("b.example", BudgetConfig{})
	require.NotSame(t, a, b)
	assert.Same(t, a, bs.For("a.example", BudgetConfig{}))
	assert.Same(t, a, bs.For("a.example", BudgetConfig{}), "twice in a row")
	assert.Same(t, b, bs.For("b.example", BudgetConfig{}))

	// A sweep far in the future forgets both; For must not hand out the
	// forgotten budget, even the one it returned last.
	far := time.Now().Add(time.Hour).UnixNano()
	bs.insertBudget("c.example", far)
	assert.NotContains(t, budgetRegistry(t, bs), "b.example")
	b2 := bs.For("b.example", BudgetConfig{})
	assert.NotSame(t, b, b2)
	assert.Same(t, b2, bs.For("b.example", BudgetConfig{}))
	assert.NotSame(t, a, bs.For("a.example", BudgetConfig{}))
}

func TestConfigsThatMeanTheSameBudgetDoNotReconfigure(t *testing.T) {
	var bs Budgets
	b := bs.For("api.example.com", BudgetConfig{})
	before := b.params.Load()
	bs.For("api.example.com", DefaultPolicy().Budget)
	bs.For("api.example.com", BudgetConfig{Window: -1})
	assert.Same(t, before, b.params.Load())
	bs.For("api.example.com", BudgetConfig{Percent: 50})
	assert.NotSame(t, before, b.params.Load())
}

func TestBudgetsForTakesDefaultPortsAsTheDefault(t *testing.T) {
	var bs Budgets
	b := bs.For("api.example.com", BudgetConfig{})
	for _, h := range []string{"api.example.com:443", "API.example.com:80", "Api.Example.Com"} {
		assert.Same(t, b, bs.For(h, BudgetConfig{}), h)
	}
	assert.NotSame(t, b, bs.For("api.example.com:8443", BudgetConfig{}))
	v6 := bs.For("[::1]", BudgetConfig{})
	assert.Same(t, v6, bs.For("[::1]:443", BudgetConfig{}))
	assert.Equal(t, "[::1]", hostKey("[::1]:443"))
	assert.Equal(t, "[::443]", hostKey("::443"), "not a port: a bare IPv6 address, in brackets")
}

func TestBudgetSeesResendsChargedJustAcrossASlotEdge(t *testing.T) {
	b := newTestBudget(BudgetConfig{MinRetries: 1, Percent: 1})
	edge := budgetAt(5 * time.Second)
	// One goroutine's clock has passed the edge and takes the only resend;
	// another read its clock just before the edge.
	require.True(t, b.tryReserveAt(edge))
	assert.False(t, b.tryReserveAt(edge.Add(-time.Microsecond)))
}

// countAt is Record at a fixed instant, so that tests can walk the window
// without sleeping; unlike recordAt, it leaves the ticker that Record
// keeps alone, and it stamps the registry's clock as Record does.
func (b *Budget) countAt(now time.Time) {
	if b.rec != nil {
		b.rec.stamp()
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.current(now.UnixNano()).requests.Add(1)
}

// insertBudget is the budget of the record insert adds.
func (bs *Budgets) insertBudget(key string, now int64) *Budget { return &bs.insert(key, now).budget }

// A learned copy takes the one reservation a resend takes, with the cap
// on learned copies inside it: 100 requests at q 0.95 allow 10 copies
// though the share allows 20, and a refund gives back both counts.
func TestALearnedCopyIsOneReservationUnderItsCap(t *testing.T) {
	b := newTestBudget(BudgetConfig{MinRetries: -1})
	recordTimes(b, 100, bt0)
	var last reservation
	for i := range 10 {
		res, ok := reserved(b.reserveAt(bt0, 0.95))
		require.True(t, ok, "copy %d", i+1)
		last = res
	}
	_, ok := reserved(b.reserveAt(bt0, 0.95))
	assert.False(t, ok, "the 11th copy is over the cap")
	assert.Equal(t, 10, b.statsAt(bt0).Retries)
	last.refund()
	assert.Equal(t, 9, b.statsAt(bt0).Retries, "the refund gives back the resend")
	_, ok = reserved(b.reserveAt(bt0, 0.95))
	assert.True(t, ok, "and the copy under the cap")
	for range 10 {
		_, ok = reserved(b.reserveAt(bt0, 0))
		require.True(t, ok, "resends are under the share alone")
	}
	_, ok = reserved(b.reserveAt(bt0, 0))
	assert.False(t, ok, "the share: 20")
}

// Resends do not count against the cap on learned copies, and refunding a
// resend gives back no copy: the cap counts copies only.
func TestResendsAndCopiesShareTheShareNotTheCap(t *testing.T) {
	t.Run("resends leave the cap alone", func(t *testing.T) {
		b := newTestBudget(BudgetConfig{MinRetries: -1})
		recordTimes(b, 100, bt0) // share 20; cap at q 0.95: 10
		for i := range 10 {
			_, ok := reserved(b.reserveAt(bt0, 0))
			require.True(t, ok, "resend %d", i+1)
		}
		for i := range 10 {
			_, ok := reserved(b.reserveAt(bt0, 0.95))
			require.True(t, ok, "copy %d beside 10 resends", i+1)
		}
	})
	t.Run("a resend's refund gives back no copy", func(t *testing.T) {
		b := newTestBudget(BudgetConfig{Percent: 100, MinRetries: -1})
		recordTimes(b, 10, bt0) // share 10; cap at q 0.95: 1
		_, ok := reserved(b.reserveAt(bt0, 0.95))
		require.True(t, ok, "the one copy")
		resend, ok := reserved(b.reserveAt(bt0, 0))
		require.True(t, ok)
		resend.refund()
		_, ok = reserved(b.reserveAt(bt0, 0.95))
		assert.False(t, ok, "the cap still holds its copy")
	})
}

// reserved is reserveAt's answer as granted or not.
func reserved(res reservation, refused Reason) (reservation, bool) { return res, refused == 0 }

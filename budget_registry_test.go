package httpretry

import (
	"context"
	"fmt"
	"net/url"
	"runtime"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/httpretry/httpretry/internal/demotion"
	"github.com/httpretry/httpretry/internal/latency"
)

// spelling is one of the many ways to write host in a URL: the bits of i
// choose which of its letters are upper case, and whether an explicit
// default port follows.
func spelling(host string, i int) string {
	b := []byte(host)
	for j := range b {
		if i&(1<<j) != 0 && 'a' <= b[j] && b[j] <= 'z' {
			b[j] -= 'a' - 'A'
		}
	}
	switch i % 3 {
	case 1:
		return string(b) + ":443"
	case 2:
		return string(b) + ":80"
	}
	return string(b)
}

// checkOneKeyPerHost asserts that every key of bs is a canonical host and
// that no two keys share a budget, and returns the keys.
func checkOneKeyPerHost(t *testing.T, bs *Budgets) map[string]*Budget {
	t.Helper()
	reg := budgetRegistry(t, bs)
	seen := make(map[*Budget]string, len(reg))
	for k, b := range reg {
		require.Equal(t, hostKey(k), k, "keys are canonical hosts")
		require.Equal(t, k, b.rec.key)
		if other, dup := seen[b]; dup {
			t.Fatalf("%q and %q share a budget", k, other)
		}
		seen[b] = k
	}
	return reg
}

// TestBudgetsMillionHostsBounded feeds a registry a million host names, half
// of them distinct and half spellings of a few thousand others, as whoever
// controls request URLs could: it holds at most maxBudgetHosts keys, no
// two for one host, and little memory. Under the race detector, where a
// million take a minute, it feeds 100 000: still ten registries' worth.
func TestBudgetsMillionHostsBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("a million insertions take seconds")
	}
	const aliased = 5_000
	n := 1_000_000
	if raceEnabled {
		n = 100_000
	}
	bs := NewBudgets()
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for i := range n {
		var host string
		if i%2 == 0 {
			host = fmt.Sprintf("host-%d.example", i)
		} else {
			host = spelling(fmt.Sprintf("alias-%d.example", (i/2)%aliased), i/2/aliased)
		}
		bs.For(host, BudgetConfig{}).Record()
		if i%100_000 == 0 {
			require.LessOrEqual(t, len(budgetRegistry(t, bs)), maxBudgetHosts, "after %d hosts", i)
		}
	}
	reg := checkOneKeyPerHost(t, bs)
	assert.LessOrEqual(t, len(reg), maxBudgetHosts)
	assert.Greater(t, len(reg), maxBudgetHosts-maxBudgetHosts/10-1, "the cut takes a tenth, not more")

	runtime.GC()
	runtime.ReadMemStats(&after)
	grew := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("%d keys, heap grew by %d KiB (%d B per key)", len(reg), grew>>10, grew/int64(len(reg)))
	// About 1.2 KiB per host held (12 MiB), ticker included; a forgotten
	// budget must not stay reachable (through its ticker, say): before
	// forgetting stopped it, this test measured 150 MiB.
	assert.Less(t, grew, int64(24<<20), "heap held by a full registry")
	runtime.KeepAlive(bs)
}

// TestBudgetsSpellingsShareOneKey: every spelling of a host finds the one
// budget stored under its canonical name, and adds no key.
func TestBudgetsSpellingsShareOneKey(t *testing.T) {
	bs := NewBudgets()
	b := bs.For("api.example.com", BudgetConfig{})
	for i := range 5000 {
		require.Same(t, b, bs.For(spelling("api.example.com", i), BudgetConfig{}), spelling("api.example.com", i))
	}
	assert.Equal(t, map[string]*Budget{"api.example.com": b}, checkOneKeyPerHost(t, bs))
	assert.Equal(t, 1, bs.size)
}

// TestBudgetsFullCutKeepsAHostWhole: the cut of a full registry, among
// hosts that were all last active in the same slot, cannot split a host
// into two budgets, because a host has one key whatever its spellings.
func TestBudgetsFullCutKeepsAHostWhole(t *testing.T) {
	bs := &Budgets{}
	t0 := bt0.UnixNano()
	hosts := make([]string, maxBudgetHosts)
	for i := range hosts {
		hosts[i] = fmt.Sprintf("h%d.example", i)
		b := bs.insertBudget(hosts[i], t0)
		b.countAt(bt0) // all equally active: the cut breaks ties as it likes
	}
	require.Len(t, budgetRegistry(t, bs), maxBudgetHosts)

	// Reach each host through another spelling, several times over, while
	// new hosts make the registry cut a tenth again and again.
	for round := range 3 {
		for i, h := range hosts {
			bs.insertBudget(hostKey(spelling(h, i+round)), t0+int64(round+1)).countAt(bt0)
			if i%997 == 0 {
				bs.insertBudget(fmt.Sprintf("new-%d-%d.example", round, i), t0+int64(round+1)).countAt(bt0)
			}
		}
	}
	reg := checkOneKeyPerHost(t, bs)
	assert.LessOrEqual(t, len(reg), maxBudgetHosts)
	for _, h := range hosts[:100] {
		b, ok := reg[h]
		if !ok {
			continue // forgotten by a cut, whole
		}
		for i := range 8 {
			assert.Same(t, b, bs.For(spelling(h, i), BudgetConfig{}), spelling(h, i))
		}
	}
	assert.False(t, strings.ContainsFunc(strings.Join(mapKeys(reg), ""), func(r rune) bool { return 'A' <= r && r <= 'Z' }))
}

// TestBudgetsForgottenHostStopsTicking: a forgotten budget's ticker is
// stopped, so that nothing keeps it alive once no request holds it.
func TestBudgetsForgottenHostStopsTicking(t *testing.T) {
	bs := NewBudgets()
	b := bs.For("a.example", BudgetConfig{})
	b.Record() // starts ticking
	require.NotNil(t, b.cur.Load())
	bs.mu.Lock()
	bs.sweep(time.Now().Add(time.Hour).UnixNano())
	bs.mu.Unlock()
	assert.Empty(t, budgetRegistry(t, bs))
	assert.True(t, b.rec.evicted.Load())
	assert.Nil(t, b.cur.Load(), "no current bucket: the ticker is stopped")
	assert.False(t, b.ticker.Stop(), "the ticker was already stopped")
}

// TestABudgetInABubbleStopsItsTimer: httpretrytest promises that a
// transport and its budgets leave no timer in a synctest bubble once
// their host is idle: the budget's ticker stops at the end of the first
// slot with no request, 2 s after the last one here, and nothing else of
// the transport outlives its request (synctest.Test fails on a goroutine
// left blocked).
func TestABudgetInABubbleStopsItsTimer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		bs := NewBudgets()
		p := fastPolicy(2)
		p.Budget = BudgetConfig{}
		rt := New(newScripted(statusThenOK(503, nil, 1)), WithPolicy(p), WithBudgets(bs))
		resp, err := get(t, rt, context.Background())
		require.NoError(t, err)
		resp.Body.Close()
		b := bs.For("api.example.com", BudgetConfig{})
		require.NotNil(t, b.cur.Load(), "ticking while the host is busy")

		time.Sleep(time.Second)
		synctest.Wait() // the tick due now has run
		assert.NotNil(t, b.cur.Load(), "the slot after the request's is still counted")
		time.Sleep(time.Second)
		synctest.Wait()
		assert.Nil(t, b.cur.Load(), "a slot with no request stops the ticker")
		assert.False(t, b.ticker.Stop(), "no timer is set")
	})
}

// The idle sweep keeps a host that is demoted or has learned a hedge
// delay: with its budget disabled it records no request and always looks
// idle, yet its standing is in use (points 17 and 18). A host that saw
// fewer samples than warm up an estimate has learned nothing, and goes.
func TestBudgetsIdleSweepKeepsDemotedAndLearnedHosts(t *testing.T) {
	bs := NewBudgets()
	now := time.Now()
	bs.record("idle.example")
	bs.record("cold.example").learned().Record(time.Millisecond, 0.95)
	for range latency.Every {
		bs.record("learned.example").learned().Record(time.Millisecond, 0.95)
	}
	demoted := bs.record("demoted.example")
	for range 5 {
		demoted.demotion.Failed(now, demotion.Probe{}, Demote{After: 5, For: time.Hour}.resolve(), nil)
	}
	require.True(t, demoted.demotion.Active())
	bs.mu.Lock()
	bs.sweep(now.Add(time.Hour).UnixNano())
	bs.mu.Unlock()
	assert.ElementsMatch(t, []string{"learned.example", "demoted.example"}, mapKeys(budgetRegistry(t, bs)))
}

// TestBudgetsFullKeepsItsBusyHosts is the attack on a full registry: 20
// hosts used at every step and 25 000 used once each, 50 a step, all
// within one budget slot, where every host last seen in the slot looked
// equally recent. The cut must take hosts used once, never a busy one: a
// busy host forgotten came back with an empty window and a full floor
// credit, and was granted more than max(share, MinRetries) in one window.
func TestBudgetsFullKeepsItsBusyHosts(t *testing.T) {
	const (
		busy, churn, perStep = 20, 25_000, 50
		steps                = churn / perStep
		step                 = 500 * time.Microsecond // 250 ms in all: one slot, one window
	)
	bs := &Budgets{}
	cfg := BudgetConfig{Percent: 20, MinRetries: 10}
	names := make([]string, busy)
	for h := range names {
		names[h] = fmt.Sprintf("busy-%d.example", h)
	}
	first := make([]*Budget, busy)
	granted := make([]int, busy)
	for i := range steps {
		now := bt0.Add(time.Duration(i) * step)
		ns := now.UnixNano()
		for h := range busy {
			// Every request to an upstream in an outage asks for a resend.
			b := bs.insertBudget(names[h], ns)
			b.configure(cfg)
			b.countAt(now)
			if b.tryReserveAt(now) {
				granted[h]++
			}
			if first[h] == nil {
				first[h] = b
			}
		}
		for j := range perStep {
			b := bs.insertBudget(fmt.Sprintf("once-%d-%d.example", i, j), ns)
			b.configure(cfg)
			b.countAt(now)
		}
	}
	reg := budgetRegistry(t, bs)
	forgotten := 0
	for h := range busy {
		if reg[names[h]] != first[h] {
			forgotten++
		}
	}
	assert.Zero(t, forgotten, "busy hosts forgotten")
	// The run is one window: each busy host's grants are bounded by that
	// window's share of its requests, or the floor.
	share := cfg.Percent * steps / 100
	for h, n := range granted {
		assert.LessOrEqual(t, n, max(share, cfg.MinRetries), names[h])
	}
	assert.LessOrEqual(t, len(reg), maxBudgetHosts)
}

// TestBudgetsClockMovesWithSlots: with no insertion to move the registry's
// clock, a busy budget's slot ticks do, so that a host recorded after a
// tick is more recent than one recorded before it.
func TestBudgetsClockMovesWithSlots(t *testing.T) {
	bs := NewBudgets()
	cfg := BudgetConfig{Window: 100 * time.Millisecond} // 10 ms slots
	before, busy := bs.For("before.example", cfg), bs.For("busy.example", cfg)
	inserted := bs.clock.Load()
	before.Record()
	busy.Record() // starts busy's ticker
	assert.Equal(t, inserted, before.rec.used.Load())
	require.Eventually(t, func() bool { return bs.clock.Load() > inserted }, time.Minute, time.Millisecond,
		"busy's next slot moves the clock")
	busy.Record()
	assert.Greater(t, busy.rec.used.Load(), before.rec.used.Load())

	bs.mu.Lock()
	defer bs.mu.Unlock()
	bs.size = maxBudgetHosts // as if full: the cut takes the least recent tenth, at least one
	bs.sweep(inserted)
	assert.True(t, before.rec.evicted.Load())
	assert.False(t, busy.rec.evicted.Load())
}

// BenchmarkBudgetsHotPath measures the two tricks of a request's budget
// bookkeeping against what they save (Budgets.last against the map, and
// Record on the ticker's bucket against one that reads the clock), and
// the origin every request's key is taken from.
func BenchmarkBudgetsHotPath(b *testing.B) {
	const host = "api.example.com"
	cfg := BudgetConfig{}.withDefaults() // as RetryTransport passes it
	bs := NewBudgets()
	bud := bs.forKey(host, cfg)
	bud.Record() // starts the ticker
	b.Run("For/last", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			bs.forKey(host, cfg)
		}
	})
	b.Run("For/map", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			bs.hosts.Load(host)
			bs.record(host).budget.configure(cfg)
		}
	})
	b.Run("Record/ticker", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			bud.Record()
		}
	})
	b.Run("Record/clock", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			bud.countAt(time.Now())
		}
	})
	b.Run("originOf", func(b *testing.B) {
		u := &url.URL{Scheme: "https", Host: host}
		b.ReportAllocs()
		for b.Loop() {
			originOf(u)
		}
	})
}

// BenchmarkRegistry measures a request's bookkeeping in a Budgets (its
// record found or added, its budget configured, the request recorded)
// with the requests spread over 1,000 hosts, over the cap's 10,000, and
// with every request to a host the registry has not seen while it sits
// full, as under a flood of hostnames: each op is then an insertion, and
// every thousandth a sweep of the whole registry that forgets a tenth.
func BenchmarkRegistry(b *testing.B) {
	cfg := BudgetConfig{}.withDefaults() // as RetryTransport passes it
	keys := func(n int) []string {
		k := make([]string, n)
		for i := range k {
			k[i] = fmt.Sprintf("h%d.example", i)
		}
		return k
	}
	for _, n := range []int{1000, maxBudgetHosts} {
		b.Run(fmt.Sprintf("hosts=%d", n), func(b *testing.B) {
			bs := NewBudgets()
			hosts := keys(n)
			for _, h := range hosts {
				bs.forKey(h, cfg).Record()
			}
			defer stopAll(bs)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				bs.forKey(hosts[i%n], cfg).Record()
				i++
			}
		})
	}
	b.Run("below-cap/new-host", func(b *testing.B) {
		fresh := keys(maxBudgetHosts - 1)
		bs := NewBudgets()
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if i == len(fresh) {
				b.StopTimer()
				stopAll(bs)
				bs, i = NewBudgets(), 0
				b.StartTimer()
			}
			bs.forKey(fresh[i], cfg).Record()
			i++
		}
		stopAll(bs)
	})
	b.Run("full/new-host", func(b *testing.B) {
		bs := NewBudgets()
		for _, h := range keys(maxBudgetHosts) {
			bs.forKey(h, cfg).Record()
		}
		defer stopAll(bs)
		fresh := keys(maxBudgetHosts + 100_000)[maxBudgetHosts:]
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			bs.forKey(fresh[i%len(fresh)], cfg).Record()
			i++
		}
	})
}

// stopAll stops the tickers of bs's budgets, so that a benchmark leaves
// no timer behind.
func stopAll(bs *Budgets) {
	bs.hosts.Range(func(_, v any) bool {
		v.(*originRecord).budget.stopTicking()
		return true
	})
}

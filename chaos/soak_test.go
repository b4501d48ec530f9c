package chaos

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/httpretry/httpretry"
	"github.com/stretchr/testify/assert"
)

// soakPhase is one stretch of upstream weather.
type soakPhase struct {
	name     string
	failPct  int32
	resetPct int32
	toxics   []toxic
	down     bool // the proxy refuses connections
}

// soakPhases cycle during the soak. Toxics that end a stream (reset_peer,
// limit_data) are left out on purpose: toxiproxy leaks a goroutine and a
// chunk per connection they cut, which would pollute the heap figure;
// resets come from the upstream itself instead.
var soakPhases = []soakPhase{
	{name: "healthy"},
	{name: "degraded", failPct: 20, toxics: []toxic{{Type: "latency", Attributes: map[string]any{"latency": 20, "jitter": 10}}}},
	{name: "outage", failPct: 90, toxics: []toxic{{Type: "latency", Attributes: map[string]any{"latency": 50}}}},
	{name: "resets", resetPct: 20, toxics: []toxic{{Type: "slicer", Attributes: map[string]any{"average_size": 256, "size_variation": 128, "delay": 50}}}},
	{name: "slow network", failPct: 10, toxics: []toxic{{Type: "bandwidth", Attributes: map[string]any{"rate": 256}}}},
	{name: "black hole", toxics: []toxic{{Type: "timeout", Attributes: map[string]any{"timeout": 0}}}},
	{name: "refused", down: true},
}

// soakStats holds the soak's counters in memory fixed before the heap is
// first measured, so that the measure sees httpretry, not the test.
type soakStats struct {
	ok, rtErr, non200, readErr, violations atomic.Int64
	lat                                    [10001]atomic.Int64 // by millisecond; the last holds the rest
	requestsAt, retriesAt                  []atomic.Int64      // by slot of soakSlot since start
	firstViolation                         atomic.Pointer[string]
}

const soakSlot = 100 * time.Millisecond

func (s *soakStats) record(c *call) {
	switch {
	case c.violation != "":
		s.violations.Add(1)
		v := c.violation
		s.firstViolation.CompareAndSwap(nil, &v)
	case c.err != nil:
		s.rtErr.Add(1)
	case c.readErr != nil:
		s.readErr.Add(1)
	case c.status != 200:
		s.non200.Add(1)
	default:
		s.ok.Add(1)
	}
	s.lat[min(int(c.elapsed/time.Millisecond), len(s.lat)-1)].Add(1)
}

// percentile is the latency below which q of the calls fell, to 1 ms.
func (s *soakStats) percentile(q float64) time.Duration {
	var total int64
	for i := range s.lat {
		total += s.lat[i].Load()
	}
	want := int64(q * float64(total))
	var seen int64
	for i := range s.lat {
		if seen += s.lat[i].Load(); seen >= want {
			return time.Duration(i+1) * time.Millisecond
		}
	}
	return time.Duration(len(s.lat)) * time.Millisecond
}

// TestSoak runs mixed traffic from 32 goroutines for 60 s (6 s under
// -short) through toxiproxy to an upstream whose failure rate, resets and
// latency change every few seconds, and reports requests, upstream calls,
// amplification, p99 latency and the heap in use at start and end. It
// asserts the invariants on every call, the budget on every sliding window,
// and that the heap does not grow.
func TestSoak(t *testing.T) {
	duration, phaseLen := 60*time.Second, 3*time.Second
	if testing.Short() {
		duration, phaseLen = 6*time.Second, 850*time.Millisecond
	}
	const workers = 32
	const maxRequests = 1 << 20

	up := newUpstream(t)
	up.seqCalls = make([]atomic.Int32, maxRequests)
	proxy := newFaultProxy(t, up.addr())
	base := newBase()
	p := httpretry.DefaultPolicy()
	p.Backoff = httpretry.ExponentialJitter(10*time.Millisecond, 200*time.Millisecond)
	p.PerTryTimeout = 500 * time.Millisecond
	p.MaxRetryAfter = 2 * time.Second
	// The window's bound alone (Hold -1): it counts EventRetry as resends,
	// and with point 22's hold a probe or a release of a parked request
	// (its workers are closed loops with deadlines) is announced so too,
	// uncharged or charged without asking, by design.
	p.Budget.Hold = -1
	slots := int(duration/soakSlot) + 200 // the warm-up and the pause after it too
	st := &soakStats{requestsAt: make([]atomic.Int64, slots), retriesAt: make([]atomic.Int64, slots)}
	var begin atomic.Int64 // unix nanos of the measured run's start
	slotOf := func() int {
		return min(max(int(time.Duration(time.Now().UnixNano()-begin.Load())/soakSlot), 0), slots-1)
	}
	rt := newRetrying(t, base, p, httpretry.WithObserver(func(e httpretry.Event) {
		if e.Kind == httpretry.EventRetry {
			st.retriesAt[slotOf()].Add(1)
		}
	}))

	var seq atomic.Int64
	var stop atomic.Bool
	var unkeyedSent atomic.Int64
	work := func(w int, wg *sync.WaitGroup) {
		defer wg.Done()
		rnd := rand.New(rand.NewPCG(uint64(w), uint64(time.Now().UnixNano())))
		for !stop.Load() {
			n := seq.Add(1)
			if n >= maxRequests {
				return
			}
			s := spec{respSize: rnd.IntN(16 << 10), getBody: rnd.IntN(2) == 0}
			switch k := rnd.IntN(100); {
			case k < 60:
				s.kind = kindGet
			case k < 85:
				s.kind = kindKeyedPost
			default:
				s.kind = kindUnkeyedPost
				s.seq = int(n)
				unkeyedSent.Add(1)
			}
			if s.kind != kindGet {
				off := rnd.IntN(len(payload) / 2)
				s.body = payload[off : off+rnd.IntN(8<<10)]
			}
			st.requestsAt[slotOf()].Add(1)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			st.record(send(ctx, rt, proxy.URL(), s))
			cancel()
		}
	}

	// Warm up on a healthy upstream so that the pools exist before the
	// heap is first measured.
	var wg sync.WaitGroup
	begin.Store(time.Now().UnixNano())
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go work(w, &wg)
	}
	time.Sleep(time.Second)
	stop.Store(true)
	wg.Wait()
	rt.CloseIdleConnections()
	assert.Eventually(t, func() bool { return up.srv.Open() == 0 }, 5*time.Second, 10*time.Millisecond)
	heapStart := heapInUse()
	// Reset the outcome counters but not the timeline: the budget still
	// counts the warm-up's requests in its window, so must the check.
	st.ok.Store(0)
	st.rtErr.Store(0)
	st.non200.Store(0)
	st.readErr.Store(0)
	for i := range st.lat {
		st.lat[i].Store(0)
	}
	callsBefore, attemptsBefore, unkeyedBefore := up.calls(), base.calls.Load(), unkeyedSent.Load()

	stop.Store(false)
	start := time.Now()
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go work(w, &wg)
	}
	var last soakPhase
	for i := 0; time.Since(start) < duration; i++ {
		ph := soakPhases[i%len(soakPhases)]
		resetToxics(t, proxy, last)
		last = ph
		proxy.enable()
		up.failPct.Store(ph.failPct)
		up.resetPct.Store(ph.resetPct)
		for _, tx := range ph.toxics {
			proxy.add(tx)
		}
		if ph.down {
			proxy.disable()
		}
		time.Sleep(min(phaseLen, duration-time.Since(start)))
	}
	resetToxics(t, proxy, last)
	proxy.enable()
	up.failPct.Store(0)
	up.resetPct.Store(0)
	stop.Store(true)
	wg.Wait()
	elapsed := time.Since(start)
	rt.CloseIdleConnections()
	assert.Eventually(t, func() bool { return up.srv.Open() == 0 }, 5*time.Second, 10*time.Millisecond)
	heapEnd := heapInUse()

	requests := st.ok.Load() + st.rtErr.Load() + st.non200.Load() + st.readErr.Load() + st.violations.Load()
	calls := up.calls() - callsBefore
	attempts := base.calls.Load() - attemptsBefore
	t.Logf("soak %s, %d workers: requests=%d ok=%d rt-errors=%d non-200=%d body-read-errors=%d",
		elapsed.Round(time.Millisecond), workers, requests, st.ok.Load(), st.rtErr.Load(), st.non200.Load(), st.readErr.Load())
	t.Logf("attempts=%d upstream-calls=%d amplification=%.3f (attempts/requests %.3f) p50=%s p99=%s unkeyed-posts=%d",
		attempts, calls, float64(calls)/float64(requests), float64(attempts)/float64(requests),
		st.percentile(0.50), st.percentile(0.99), unkeyedSent.Load()-unkeyedBefore)
	t.Logf("heap in use after GC: start %.2f MiB, end %.2f MiB", float64(heapStart)/(1<<20), float64(heapEnd)/(1<<20))

	assert.Zero(t, st.violations.Load(), "calls that broke an invariant, first: %v", st.firstViolation.Load())
	assert.Zero(t, up.badBodies.Load(), "a complete request body differed from the original")
	for i := range up.seqCalls {
		if n := up.seqCalls[i].Load(); n > 1 {
			assert.Failf(t, "an unkeyed POST reached the upstream twice", "seq %d: %d calls", i, n)
			break
		}
	}
	assert.Positive(t, st.ok.Load(), "no call succeeded")
	checkSoakBudget(t, st, p.Budget)
	// Not growing: allow for allocator noise, not for a leak that scales
	// with the requests (tens of thousands of them).
	assert.LessOrEqual(t, heapEnd, heapStart+heapStart/4+2<<20, "heap in use grew over the soak")
}

// checkSoakBudget checks the soak's sliding windows against the budget,
// with the budget's own bucketing in mind: at a grant, the budget counts
// the resends of at least the last 9 s and the requests of at most the
// last 10 s. So for every slot in which a resend was granted, the resends
// of the 8.8 s up to it must fit what the requests of the 11 s up to it
// allow (the margins cover the slot width and the observer's lag).
func checkSoakBudget(t *testing.T, st *soakStats, cfg httpretry.BudgetConfig) {
	t.Helper()
	window := 10 * time.Second
	retrySlots := int((window - 1200*time.Millisecond) / soakSlot)
	requestSlots := int((window + time.Second) / soakSlot)
	worst := 0.0
	for end := range st.retriesAt {
		if st.retriesAt[end].Load() == 0 {
			continue
		}
		var retries, requests int
		for i := max(end-retrySlots+1, 0); i <= end; i++ {
			retries += int(st.retriesAt[i].Load())
		}
		for i := max(end-requestSlots+1, 0); i <= end; i++ {
			requests += int(st.requestsAt[i].Load())
		}
		allowed := budgetLimit(requests, cfg) - requests
		if retries > allowed {
			assert.Failf(t, "resends beyond the budget", "window ending at slot %d: %d resends, %d allowed for %d requests", end, retries, allowed, requests)
			return
		}
		if allowed > 0 {
			worst = max(worst, float64(retries)/float64(allowed))
		}
	}
	t.Logf("budget: the fullest window used %.0f%% of its resend allowance", 100*worst)
}

// resetToxics removes every toxic of phase ph from proxy: reset stops the
// proxy first (see faultProxy.quiesce), and the phase change is then one
// more fault.
func resetToxics(t *testing.T, proxy *faultProxy, ph soakPhase) {
	t.Helper()
	if len(ph.toxics) > 0 {
		proxy.reset()
	}
}

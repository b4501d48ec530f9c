package chaos

import (
	"context"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/httpretry/httpretry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// demoteRig is a primary upstream behind a fault proxy and two healthy
// standbys reached directly, named as the fallbacks of a policy with
// Demote. It is the base under httpretry too, to count the attempts that
// reach the primary once it has been demoted.
type demoteRig struct {
	t        *testing.T
	primary  *upstream
	standbys []*upstream
	proxy    *faultProxy
	base     *originBase
	rt       *httpretry.RetryTransport
	policy   httpretry.Policy
	gen      *rig // its spec generator only
	tally    tally

	// demoted is set by the primary's first EventDemote; after counts the
	// attempts sent to the primary from then on.
	demoted atomic.Bool
	after   atomic.Int64

	mu                 sync.Mutex
	demotes, restores  int
	firstDemote, ended time.Time // of the faults' stretch
}

// demoteWorkers is how many requests are in flight at once: at most one
// fewer had passed their choice of origin, and not yet sent, when the
// primary was demoted.
const demoteWorkers = 6

func newDemoteRig(t *testing.T, p httpretry.Policy) *demoteRig {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	r := &demoteRig{t: t, primary: newUpstream(t), base: newOriginBase(), policy: p,
		gen: &rig{rnd: rand.New(rand.NewPCG(seed, 11))}}
	r.proxy = newFaultProxy(t, r.primary.addr())
	for range 2 {
		s := newUpstream(t)
		r.standbys = append(r.standbys, s)
		r.policy.Fallbacks = append(r.policy.Fallbacks, s.srv.URL)
	}
	r.rt = newRetrying(t, r, r.policy, httpretry.WithObserver(r.observe))
	return r
}

// RoundTrip counts an attempt to the demoted primary and forwards it.
func (r *demoteRig) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Host == r.proxy.addr && r.demoted.Load() {
		r.after.Add(1)
	}
	return r.base.RoundTrip(req)
}

// CloseIdleConnections forwards to the base.
func (r *demoteRig) CloseIdleConnections() { r.base.CloseIdleConnections() }

func (r *demoteRig) observe(e httpretry.Event) {
	r.base.observe(e)
	if e.Origin != r.proxy.URL() {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	switch e.Kind {
	case httpretry.EventDemote:
		if r.demotes == 0 {
			r.firstDemote = time.Now()
		}
		r.demotes++
		r.demoted.Store(true)
	case httpretry.EventRestore:
		r.restores++
	}
}

// drive sends n requests of each kind from demoteWorkers goroutines and
// returns their calls.
func (r *demoteRig) drive(n int) []*call {
	specs := r.gen.specs(n)
	jobs := make(chan spec)
	var (
		mu  sync.Mutex
		out []*call
		wg  sync.WaitGroup
	)
	for range demoteWorkers {
		wg.Go(func() {
			for s := range jobs {
				c := r.send(s)
				mu.Lock()
				out = append(out, c)
				mu.Unlock()
			}
		})
	}
	for _, s := range specs {
		jobs <- s
	}
	close(jobs)
	wg.Wait()
	return out
}

func (r *demoteRig) send(s spec) *call {
	ctx := context.WithValue(context.Background(), requestIDKey{}, s.id)
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	c := send(ctx, r.rt, r.proxy.URL(), s)
	r.tally.add(c)
	return c
}

// hostsOf is the hosts the attempts of request id went to.
func (r *demoteRig) hostsOf(id string) []string {
	r.base.mu.Lock()
	defer r.base.mu.Unlock()
	return append([]string(nil), r.base.hosts[id]...)
}

// giveUpOf is the Reason of request id's EventGiveUp, 0 if none.
func (r *demoteRig) giveUpOf(id string) httpretry.Reason {
	r.base.mu.Lock()
	defer r.base.mu.Unlock()
	for _, e := range r.base.seen[id] {
		if e.Kind == httpretry.EventGiveUp {
			return e.Reason
		}
	}
	return 0
}

// checkServed asserts that each call got its answer: a GET or a keyed
// POST always, from whichever origin; an unkeyed POST too, unless
// orPrimary allows it to end on the primary alone, which may have
// received it and so keeps it.
func (r *demoteRig) checkServed(calls []*call, orPrimary bool) {
	t := r.t
	for _, c := range calls {
		hosts := r.hostsOf(c.id)
		if c.kind == kindUnkeyedPost && orPrimary && !c.ok() {
			assert.Equal(t, []string{r.proxy.addr}, hosts, c.id)
			assert.Equal(t, httpretry.ReasonNotIdempotent, r.giveUpOf(c.id), c.id)
			continue
		}
		assert.True(t, c.ok(), "%s: %s via %v", c.id, statusOf(c), hosts)
	}
}

// checkInvariants asserts, for every request: the bound candidates +
// MaxRetries at the base, at the dials and at the servers, and an unkeyed
// POST served by and connected to at most one origin; and for the run,
// byte-identical request bodies at every origin, every request body
// closed and no connection left open.
func (r *demoteRig) checkInvariants() {
	t := r.t
	assert.Empty(t, r.tally.violations(), "calls that broke an invariant")
	bound := 3 + r.policy.MaxRetries
	ups := append([]*upstream{r.primary}, r.standbys...)
	r.base.mu.Lock()
	for _, u := range ups {
		u.mu.Lock()
	}
	for _, c := range r.tally.calls {
		served, origins, connected := 0, 0, 0
		for _, u := range ups {
			served += u.perID[c.id]
			if u.perID[c.id] > 0 {
				origins++
			}
		}
		for _, d := range r.base.dials[c.id] {
			if d.err == nil {
				connected++
			}
		}
		assert.LessOrEqual(t, len(r.base.hosts[c.id]), bound, c.id)
		assert.LessOrEqual(t, len(r.base.dials[c.id]), bound, c.id)
		assert.LessOrEqual(t, served, bound, c.id)
		if c.kind == kindUnkeyedPost {
			assert.LessOrEqual(t, origins, 1, "%s: an unkeyed POST reached two origins", c.id)
			assert.LessOrEqual(t, connected, 1, "%s: an unkeyed POST connected to two origins", c.id)
		}
	}
	for _, u := range ups {
		u.mu.Unlock()
	}
	r.base.mu.Unlock()
	for i, u := range ups {
		assert.Zero(t, u.badBodies.Load(), "origin %d: a complete request body differed from the original", i)
	}
	for i, s := range r.standbys {
		assert.Zero(t, s.cutBodies.Load(), "standby %d received a cut body", i)
	}
	r.rt.CloseIdleConnections()
	assert.Eventually(t, func() bool { return len(r.tally.unclosedBodies()) == 0 },
		2*time.Second, 10*time.Millisecond, "request bodies never closed: %v", r.tally.unclosedBodies())
	assert.Eventually(t, func() bool {
		for _, u := range ups {
			if u.srv.Open() != 0 {
				return false
			}
		}
		return true
	}, 5*time.Second, 10*time.Millisecond, "connections still open")
}

// TestDemoteUnderNetworkFaults black-holes the primary (a timeout toxic
// on its upstream stream), then resets its connections (reset_peer), then
// heals it, with two healthy standbys, and drives GETs, keyed POSTs and
// unkeyed POSTs from six workers. No request is lost: every GET and keyed
// POST is answered, and an unkeyed POST fails only on the primary it may
// have reached, before it is demoted. Once demoted, the primary gets only
// its probes, one per demotion that expired (each failed one demotes it
// again), besides requests that had chosen it just before: counted, not
// timed. Once healed, a probe restores it and it is first again.
func TestDemoteUnderNetworkFaults(t *testing.T) {
	p := chaosPolicy()
	// PerTryTimeout is what a black-holed attempt costs; no answer of a
	// loopback standby comes near it.
	p.PerTryTimeout = 2 * time.Second
	p.Demote = httpretry.Demote{After: 5, For: 100 * time.Millisecond, Max: 400 * time.Millisecond}
	r := newDemoteRig(t, p)

	r.proxy.add(toxic{Type: "timeout", Stream: "upstream", Attributes: map[string]any{"timeout": 0}})
	blackHole := r.drive(12)
	require.True(t, r.demoted.Load(), "the black-holed primary was demoted")
	r.proxy.remove("timeout_upstream")
	r.proxy.add(toxic{Type: "reset_peer", Attributes: map[string]any{"timeout": 0}})
	// Requests until three probes have met the resets, each demoting the
	// primary again.
	r.mu.Lock()
	want := r.demotes + 3
	r.mu.Unlock()
	var resets []*call
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
		resets = append(resets, r.drive(2)...)
		r.mu.Lock()
		enough := r.demotes >= want
		r.mu.Unlock()
		if enough {
			break
		}
	}
	r.mu.Lock()
	r.ended = time.Now()
	demotes, restores, faulty := r.demotes, r.restores, r.ended.Sub(r.firstDemote)
	r.mu.Unlock()
	after := int(r.after.Load())

	// Healed: requests one at a time until a probe restores it.
	r.proxy.reset()
	var healed []*call
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		healed = append(healed, r.send(r.gen.specs(1)[0]))
		r.mu.Lock()
		back := r.restores > 0
		r.mu.Unlock()
		if back {
			break
		}
	}
	last := r.send(spec{kind: kindGet, id: "after-restore", respSize: 100})

	t.Logf("black hole: %d requests; reset_peer: %d; healed: %d; primary demoted %d times in %v, attempts to it after the first demotion %d; restores %d",
		len(blackHole), len(resets), len(healed), demotes, faulty.Round(time.Millisecond), after, r.restores)
	r.checkServed(blackHole, true)
	r.checkServed(resets, false)
	r.checkServed(healed, false)
	r.checkServed([]*call{last}, false)

	assert.GreaterOrEqual(t, demotes, want, "three probes met the resets")
	assert.Zero(t, restores, "neither a black hole nor a reset restores the primary")
	// Each probe but the last ended in a new demotion, so demotions bound
	// the probes, and time bounds the demotions: each lasts at least For/2
	// before the next can begin.
	assert.LessOrEqual(t, demotes, 1+int(faulty/(p.Demote.For/2)), "demotions in %v", faulty)
	assert.LessOrEqual(t, after, demoteWorkers-1+demotes-1,
		"attempts to the demoted primary beyond its probes and the requests that had chosen it")
	assert.Less(t, after, len(blackHole)+len(resets), "the primary is not tried by every request")

	assert.Equal(t, 1, r.restores, "a probe restored the healed primary")
	assert.Equal(t, []string{r.proxy.addr}, r.hostsOf(last.id), "restored, the primary is first again")
	r.checkInvariants()
}

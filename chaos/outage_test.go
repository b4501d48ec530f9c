package chaos

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestOutageStartsAndEnds toggles faults while traffic flows: the proxy goes
// down (connections cut, dials refused), comes back, then resets every new
// connection for a while, then heals. Calls in flight across each edge
// must keep every invariant, and traffic must recover once the fault ends.
func TestOutageStartsAndEnds(t *testing.T) {
	p := chaosPolicy()
	p.MaxRetries = 5
	r := newRig(t, p)

	steps := []struct {
		at   time.Duration
		name string
		do   func()
	}{
		{300 * time.Millisecond, "proxy down", r.proxy.disable},
		{700 * time.Millisecond, "proxy up", r.proxy.enable},
		{1000 * time.Millisecond, "reset_peer on", func() {
			r.proxy.add(toxic{Name: "reset", Type: "reset_peer", Toxicity: 0.5, Attributes: map[string]any{"timeout": 0}})
		}},
		{1400 * time.Millisecond, "reset_peer off", func() { r.proxy.remove("reset") }},
		{1600 * time.Millisecond, "upstream 503s", func() { r.up.failPct.Store(100) }},
		{1900 * time.Millisecond, "upstream healthy", func() { r.up.failPct.Store(0) }},
	}

	// healed is when the last step ran: a call that starts after it meets
	// no fault and must succeed. Planned instants would not do: a loaded
	// machine runs a step late, and calls started between the plan and
	// the step meet the fault.
	var stop atomic.Bool
	var okAfterHeal atomic.Int64
	var healed atomic.Pointer[time.Time]
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				specs := r.specsLocked(1)
				for _, s := range specs {
					ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
					started := time.Now()
					c := send(ctx, r.rt, r.proxy.URL(), s)
					cancel()
					r.tally.add(c)
					if h := healed.Load(); c.ok() && h != nil && started.After(*h) {
						okAfterHeal.Add(1)
					}
				}
			}
		}()
	}
	start := time.Now()
	for _, s := range steps {
		time.Sleep(time.Until(start.Add(s.at)))
		s.do()
		t.Logf("%s at %s", s.name, time.Since(start).Round(time.Millisecond))
	}
	now := time.Now()
	healed.Store(&now)
	// Traffic after the heal until a call started after it succeeded: a
	// count, not a span a slow scheduler could fill with one call.
	assert.Eventually(t, func() bool { return okAfterHeal.Load() > 0 }, 10*time.Second, 10*time.Millisecond,
		"no call succeeded after the outage ended")
	stop.Store(true)
	wg.Wait()

	t.Log(r.summary("outage"))
	r.checkInvariants()
}

// specsLocked is specs for use from many goroutines.
func (r *rig) specsLocked(n int) []spec {
	r.specMu.Lock()
	defer r.specMu.Unlock()
	return r.specs(n)
}

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
	runFor := 2400 * time.Millisecond

	var stop atomic.Bool
	var okAfterHeal atomic.Int64
	healedAt := time.Now().Add(steps[len(steps)-1].at + 100*time.Millisecond)
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Bounded in count as well as time.
			for i := 0; i < 2000 && !stop.Load(); i++ {
				specs := r.specsLocked(1)
				for _, s := range specs {
					ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
					c := send(ctx, r.rt, r.proxy.URL(), s)
					cancel()
					r.tally.add(c)
					if c.ok() && time.Now().After(healedAt) {
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
	time.Sleep(time.Until(start.Add(runFor)))
	stop.Store(true)
	wg.Wait()

	t.Log(r.summary("outage"))
	assert.Positive(t, okAfterHeal.Load(), "no call succeeded after the outage ended")
	r.checkInvariants()
}

// specsLocked is specs for use from many goroutines.
func (r *rig) specsLocked(n int) []spec {
	r.specMu.Lock()
	defer r.specMu.Unlock()
	return r.specs(n)
}

package bench

import (
	"time"

	"github.com/httpretry/httpretry"
)

// parkedSample is what a run read of BudgetStats at one instant, summed over
// the hosts of its registry (a run has one).
type parkedSample struct {
	at     time.Duration // from the start of the run
	parked int
}

// parkedSampler reads a registry's BudgetStats every period until stopped:
// Parked has no event of its own (DESIGN point 22), so sampling it is how
// an operator, and a run, sees parking.
type parkedSampler struct {
	quit    chan struct{}
	done    chan []parkedSample
	samples []parkedSample
}

// startParkedSampler starts sampling bs; a nil bs (a peer) gives no samples.
func startParkedSampler(bs *httpretry.Budgets, period time.Duration, start time.Time) *parkedSampler {
	s := &parkedSampler{quit: make(chan struct{}), done: make(chan []parkedSample, 1)}
	if bs == nil {
		s.done <- nil
		return s
	}
	go func() {
		var got []parkedSample
		tick := time.NewTicker(period)
		defer tick.Stop()
		for {
			select {
			case <-s.quit:
				s.done <- got
				return
			case <-tick.C:
			}
			got = append(got, parkedSample{at: time.Since(start), parked: originStats(bs).Parked})
		}
	}()
	return s
}

// stop ends the sampling and returns the sampler, its samples read.
func (s *parkedSampler) stop() *parkedSampler {
	close(s.quit)
	s.samples = <-s.done
	return s
}

// peak is the most requests parked in any sample from the instant from on.
func (s *parkedSampler) peak(from time.Duration) int {
	n := 0
	for _, p := range s.samples {
		if p.at >= from {
			n = max(n, p.parked)
		}
	}
	return n
}

package bench

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/httpretry/httpretry/internal/fakeorigin"
)

// OutageKind is how an origin fails while it is down.
type OutageKind int

const (
	// OutageRefused refuses every connection: the base returns a
	// *net.OpError wrapping ECONNREFUSED after Outage.FailAfter.
	OutageRefused OutageKind = iota
	// Outage503 answers every attempt 503 after Outage.FailAfter.
	Outage503
	// OutageBlackHole takes every attempt and answers nothing until the
	// attempt's context ends.
	OutageBlackHole
)

// OutageKinds lists every kind, in the order of the report.
func OutageKinds() []OutageKind { return []OutageKind{OutageRefused, Outage503, OutageBlackHole} }

// String names k as the report does: refused, 503 or black hole.
func (k OutageKind) String() string {
	switch k {
	case OutageRefused:
		return "refused"
	case Outage503:
		return "503"
	case OutageBlackHole:
		return "black hole"
	}
	return fmt.Sprintf("OutageKind(%d)", int(k))
}

// Outage is the life of an origin in a loop run: healthy for Healthy,
// down for Down, healthy again for After. The zero Outage is the one of
// DESIGN point 22: 10 s, 20 s, 30 s.
type Outage struct {
	Kind    OutageKind
	Healthy time.Duration // 0: 10 s
	Down    time.Duration // 0: 20 s
	After   time.Duration // 0: 30 s
	// Service is how long a healthy origin takes to answer 200; 0: 5 ms.
	Service time.Duration
	// FailAfter is how long a refusal or a 503 takes; 0: 1 ms. Not 0:
	// a client that resends without waiting (the bare base, failsafe-go's
	// defaults) would otherwise take items for ever at one virtual instant.
	FailAfter time.Duration
}

func (o Outage) resolved() Outage {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&o.Healthy, 10*time.Second)
	def(&o.Down, 20*time.Second)
	def(&o.After, 30*time.Second)
	def(&o.Service, 5*time.Millisecond)
	def(&o.FailAfter, time.Millisecond)
	return o
}

// End is how long the run lasts: the three phases.
func (o Outage) End() time.Duration { return o.Healthy + o.Down + o.After }

// Recovered is the instant, from the start, at which the origin is back.
func (o Outage) Recovered() time.Duration { return o.Healthy + o.Down }

// loopOrigin is the upstream of a loop run, in process: an http.RoundTripper
// that answers as o says at each attempt's arrival and logs that arrival. Its
// every wait is a timer, so a synctest bubble runs it in virtual time.
type loopOrigin struct {
	o       Outage
	start   time.Time
	healthy *fakeorigin.Origin
	down    *fakeorigin.Origin // nil for OutageRefused

	mu       sync.Mutex
	arrivals []time.Duration // since start, in order: the bubble's clock only moves forward
}

func newLoopOrigin(o Outage, start time.Time) *loopOrigin {
	lo := &loopOrigin{o: o, start: start,
		healthy: fakeorigin.New(fakeorigin.Always(fakeorigin.Answer{After: o.Service})).Quiet()}
	switch o.Kind {
	case Outage503:
		a := fakeorigin.Status(http.StatusServiceUnavailable)
		a.After = o.FailAfter
		lo.down = fakeorigin.New(fakeorigin.Always(a)).Quiet()
	case OutageBlackHole:
		lo.down = fakeorigin.New(fakeorigin.Always(fakeorigin.Answer{Fault: fakeorigin.BlackHole})).Quiet()
	}
	return lo
}

// isDown reports whether the origin is down at at, from the start.
func (lo *loopOrigin) isDown(at time.Duration) bool {
	return at >= lo.o.Healthy && at < lo.o.Recovered()
}

// RoundTrip logs r's arrival and answers it as the origin's phase says.
func (lo *loopOrigin) RoundTrip(r *http.Request) (*http.Response, error) {
	at := time.Since(lo.start)
	lo.mu.Lock()
	lo.arrivals = append(lo.arrivals, at)
	lo.mu.Unlock()
	switch {
	case !lo.isDown(at):
		return lo.healthy.RoundTrip(r)
	case lo.down != nil:
		return lo.down.RoundTrip(r)
	}
	// A refusal: fakeorigin refuses at once, and a dial takes a round trip.
	if r.Body != nil {
		r.Body.Close()
	}
	if err := sleepCtx(r.Context(), lo.o.FailAfter); err != nil {
		return nil, err
	}
	return nil, fakeorigin.RefusedError()
}

// CloseIdleConnections does nothing: the origin has no connections. The
// libraries forward it to their base.
func (*loopOrigin) CloseIdleConnections() {}

// Arrivals returns the instants, from the start, at which attempts arrived.
func (lo *loopOrigin) Arrivals() []time.Duration {
	lo.mu.Lock()
	defer lo.mu.Unlock()
	return append([]time.Duration(nil), lo.arrivals...)
}

// sleepCtx waits d, or until ctx ends, and returns ctx's error then.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

package httpretry

import (
	"sync/atomic"
	"time"
)

// An origin's failures in a row (DESIGN point 22). A window budget lends
// an outage the credit of the healthy seconds before it, and a share that
// never runs out keeps a server that fell behind from catching up. So
// after Hold failures in a row a resend waits for evidence (hold.go), and
// after 2·Hold the origin is down: a request with a deadline parks there
// until the origin answers (park.go). Every attempt's outcome is counted
// here, in the order attempts complete; at a streak of 0 an attempt costs
// one atomic load at its start and one at its answer.

// mark is what an outcome says of its origin's streak.
type mark uint8

const (
	markNone    mark = iota // a 429, or an attempt the caller or a bound ended: no word
	markFailure             // one more failure in a row
	markAnswer              // any other response: the streak ends
)

// outage is the part of an origin's record that counts its failures in a
// row and wakes the resends that wait on them.
type outage struct {
	streak   atomic.Int64
	resets   atomic.Int64 // answers that ended a streak
	inflight atomic.Int64 // attempts that started at a streak above 0, not yet settled
	// lastStart is when the latest attempt counted in flight started, in
	// Unix nanoseconds: it postpones the next probe (see probeTick).
	lastStart atomic.Int64
	// sig is closed, and cleared, by each outcome and each counted start,
	// so that a held resend hears them; nil while no one listens.
	sig atomic.Pointer[chan struct{}]
	parking
}

// watch returns a channel closed at the origin's next outcome or counted
// start. Take it before reading the state it guards, so that nothing
// between the reading and the waiting goes unheard.
func (o *outage) watch() <-chan struct{} {
	for {
		if p := o.sig.Load(); p != nil {
			return *p
		}
		ch := make(chan struct{})
		if o.sig.CompareAndSwap(nil, &ch) {
			return ch
		}
	}
}

// notify wakes every listener.
func (o *outage) notify() {
	if o.sig.Load() == nil {
		return
	}
	if p := o.sig.Swap(nil); p != nil {
		close(*p)
	}
}

// started counts an attempt to the origin starting now: in flight when
// the streak is above 0, and then postponing the next probe. At a streak
// of 0 it costs one atomic load and is not counted.
func (o *outage) started(now *instant) bool {
	if o.streak.Load() == 0 {
		return false
	}
	o.inflight.Add(1)
	o.lastStart.Store(now.read().UnixNano())
	o.notify()
	return true
}

// settle counts an attempt's outcome m, and its leaving the in-flight
// count if started counted it.
func (r *originRecord) settle(counted bool, m mark) {
	o := &r.out
	switch m {
	case markAnswer:
		if o.streak.Load() == 0 {
			if counted {
				o.inflight.Add(-1)
				o.notify()
			}
			return
		}
		if o.streak.Swap(0) != 0 {
			o.resets.Add(1)
			r.answered()
		}
	case markFailure:
		if n := o.streak.Add(1); n == 2*r.budget.loadParams().hold {
			r.wentDown()
		}
		if o.draining.Load() {
			r.stopDrain()
		}
	}
	if counted {
		o.inflight.Add(-1)
	}
	o.notify()
}

// down reports whether the origin is down: 2·Hold failures in a row, under
// a budget that holds.
func (r *originRecord) down() bool {
	h := r.budget.loadParams().hold
	return h > 0 && r.out.streak.Load() >= 2*h
}

// gap is Window ÷ the requests in the budget's window now, at least 1: how
// long until the origin's next attempt is likely.
func (b *Budget) gap(now time.Time) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	p := b.loadParams()
	requests, _, _ := b.window(now.UnixNano(), p)
	return time.Duration(p.window / max(requests, 1))
}

// takeCredit takes one whole floor credit for a held resend that decides
// blind (rule 5), unless res was funded by the floor already.
func (b *Budget) takeCredit(res reservation) bool {
	if res.spent {
		return true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	p := b.loadParams()
	if p.cfg.MinRetries < 0 || p.floorCap()-b.debt < creditUnit {
		return false
	}
	b.debt += creditUnit
	return true
}

// chargeAt counts one resend in the window at now without asking: a
// released resend that holds no reservation (see drain).
func (b *Budget) chargeAt(now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.current(now.UnixNano()).retries.Add(1)
}

package httpretry

import (
	"sync"
	"sync/atomic"
	"time"
)

// Parking (DESIGN point 22, rules 6 to 10). A closed loop (a worker, a CLI,
// a queue consumer) that gave up on a down origin would take its next item
// at once and hammer the origin with the waits the budget saved. So a
// request with a deadline parks instead: it sends nothing until it is the
// one to probe the origin, or an answer releases it. An open loop (a
// server's handlers) must not park: it would drain its parked requests on
// top of its own arrivals. A closed loop starts a request only after an
// earlier one ended, so each end of a parked request grants a token, and
// a first attempt at the down origin without a token to take is an open
// loop's arrival: the parked requests end as they would have without a
// deadline, and the origin parks nothing more until it answers.

// wake is why a parked request stops waiting.
type wake uint8

const (
	wakeProbe   wake = iota + 1 // send the origin one attempt (rule 9)
	wakeRelease                 // the origin answered: resend (rule 10)
	wakeEvict                   // an open loop's arrival ended the parking (rule 7)
)

// parker is one parked request, as its origin's queue holds it.
type parker struct {
	wake chan wake // buffered: the origin never blocks on a request
}

// parking is the part of an origin's record that holds its parked
// requests, and the probe and drain that wake them. It exists in use only
// while the origin is down or drains.
type parking struct {
	parked   atomic.Int64 // len(queue), read without the lock
	draining atomic.Bool
	mu       sync.Mutex
	queue    []*parker // the one parked longest first
	// closed says an arrival without a token ended the parking: no
	// request parks until an answer ends the streak.
	closed  bool
	tokens  int
	tokenAt time.Time // the latest grant: tokens lapse P after it
	gap0    time.Duration
	probe   *time.Timer
	drain   *time.Timer
}

// interval is P: the probe interval and the tokens' lapse. The caller
// holds mu.
func (r *originRecord) interval() time.Duration {
	return max(r.budget.loadParams().holdFor, 10*r.out.gap0)
}

// park queues pk at the origin at now, first in line when again (its
// probe or release failed). It reports false when the parking is closed
// (rule 7), unless again. A request that parks while the streak is 0 and
// no drain runs is released at once.
func (r *originRecord) park(pk *parker, again bool, now time.Time) bool {
	o := &r.out
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed && !again {
		return false
	}
	if o.gap0 == 0 {
		o.gap0 = r.budget.gap(now)
	}
	if again {
		o.queue = append([]*parker{pk}, o.queue...)
	} else {
		o.queue = append(o.queue, pk)
	}
	o.parked.Store(int64(len(o.queue)))
	switch {
	case o.streak.Load() == 0 && !o.draining.Load():
		r.releaseFirst()
	case o.probe == nil:
		o.probe = time.AfterFunc(r.untilProbe(now), r.probeTick)
	}
	return true
}

// unpark takes pk out of the queue, at its deadline or its context's end.
// It reports false when pk was woken first: its wake is then waiting in
// pk.wake.
func (r *originRecord) unpark(pk *parker) bool {
	o := &r.out
	o.mu.Lock()
	defer o.mu.Unlock()
	for i, q := range o.queue {
		if q == pk {
			o.queue = append(o.queue[:i:i], o.queue[i+1:]...)
			r.queued()
			return true
		}
	}
	return false
}

// untilProbe is how long from now until the next probe may go: P after
// the latest attempt that started while the origin failed. The caller
// holds mu.
func (r *originRecord) untilProbe(now time.Time) time.Duration {
	next := time.Unix(0, r.out.lastStart.Load()).Add(r.interval())
	return max(next.Sub(now), 0)
}

// probeTick wakes the request parked longest to probe the origin, when
// no attempt to it started for P; otherwise it waits for that.
func (r *originRecord) probeTick() {
	o := &r.out
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.queue) == 0 {
		o.probe = nil
		return
	}
	now := time.Now()
	if d := r.untilProbe(now); d > 0 {
		o.probe.Reset(d)
		return
	}
	o.lastStart.Store(now.UnixNano()) // the probe's start: the next one waits P
	t := o.probe
	r.wakeFirst(wakeProbe)
	if o.probe != nil {
		t.Reset(r.interval())
	}
}

// wakeFirst wakes the request parked longest with w. The caller holds mu
// and the queue is not empty.
func (r *originRecord) wakeFirst(w wake) {
	o := &r.out
	pk := o.queue[0]
	o.queue = o.queue[1:]
	r.queued()
	pk.wake <- w
}

// queued publishes the queue's length, and stops the probe timer once no
// one is parked. The caller holds mu.
func (r *originRecord) queued() {
	o := &r.out
	o.parked.Store(int64(len(o.queue)))
	if len(o.queue) == 0 && o.probe != nil {
		o.probe.Stop()
		o.probe = nil
	}
}

// releaseFirst releases the request parked longest, and the next one
// gap₀ later while the streak stays 0 (rule 10). The caller holds mu.
func (r *originRecord) releaseFirst() {
	o := &r.out
	r.wakeFirst(wakeRelease)
	if len(o.queue) == 0 {
		o.draining.Store(false)
		return
	}
	o.draining.Store(true)
	if o.drain == nil {
		o.drain = time.AfterFunc(max(o.gap0, 1), r.drainTick)
		return
	}
	o.drain.Reset(max(o.gap0, 1))
}

func (r *originRecord) drainTick() {
	o := &r.out
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.draining.Load() || len(o.queue) == 0 || o.streak.Load() != 0 {
		o.draining.Store(false)
		return
	}
	r.releaseFirst()
}

// stopDrain stops the drain at a failure: the next answer restarts it.
func (r *originRecord) stopDrain() {
	o := &r.out
	o.mu.Lock()
	defer o.mu.Unlock()
	o.draining.Store(false)
	if o.drain != nil {
		o.drain.Stop()
	}
}

// answered is told that an answer ended the origin's streak: the parking
// reopens, its tokens are cleared, and the drain starts.
func (r *originRecord) answered() {
	o := &r.out
	o.mu.Lock()
	defer o.mu.Unlock()
	o.closed, o.tokens = false, 0
	if len(o.queue) > 0 {
		r.releaseFirst()
	}
}

// wentDown notes gap₀ as the origin becomes down.
func (r *originRecord) wentDown() {
	g := r.budget.gap(time.Now())
	o := &r.out
	o.mu.Lock()
	defer o.mu.Unlock()
	o.gap0 = g
}

// arrive counts a request's first attempt starting at the down origin,
// with requests parked there (rule 7): it takes a token if one is left;
// otherwise the parked requests are an open loop's, and each is evicted.
func (r *originRecord) arrive(now time.Time) {
	o := &r.out
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.queue) == 0 {
		return
	}
	if o.tokens > 0 && now.Sub(o.tokenAt) < r.interval() {
		o.tokens--
		return
	}
	for len(o.queue) > 0 {
		r.wakeFirst(wakeEvict)
	}
	o.closed, o.tokens = true, 0
}

// grant gives the origin one token: a request that parked there ended,
// as a closed loop's worker ends an item before it takes the next.
func (r *originRecord) grant(now time.Time) {
	o := &r.out
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return
	}
	if o.tokens > 0 && now.Sub(o.tokenAt) >= r.interval() {
		o.tokens = 0 // lapsed
	}
	o.tokens++
	o.tokenAt = now
}

package httpretry

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync/atomic"
	"time"
)

// Demote moves an origin that keeps failing behind a request's other
// candidates (its own origin, then Fallbacks) for a while, so that requests
// stop paying an attempt, or a whole PerTryTimeout, to an origin that is
// down. An origin is never removed: every candidate still gets its attempt
// if the ones before it fail, and when every candidate is demoted the
// configured order stays. Once a demotion has passed, one request at a time
// probes the origin in its configured place, and an answer restores it. A
// request with one candidate is unaffected. The zero value demotes as
// DefaultPolicy does, after 5 failures in a row, as a "demote" key left out
// of JSON does; After -1 keeps the configured order.
type Demote struct {
	// After is the number of consecutive failures of an origin that
	// demote it, at most 100; 0 means 5, and a negative value turns
	// demotion off.
	After int
	// For is the length of the first demotion: the nth in a row lasts up
	// to min(n×For, Max), drawn uniformly from its upper half, and n falls
	// by 1 for every For the origin then spends undemoted; 0 means 1 s.
	For time.Duration
	// Max is the longest demotion, at least For when both are set; 0
	// means 30 s, or For when that is longer.
	Max time.Duration
}

const (
	defaultDemoteAfter = 5
	maxDemoteAfter     = 100
	defaultDemoteFor   = time.Second
	defaultDemoteMax   = 30 * time.Second
)

// problems words each invalid field of d as "Demote.Field text". Unlike
// Hedge.Max, For and Max do not need After: a negative After alone turns
// demotion off, so that a host entry can do so over a default that sets the
// others, and they are still checked then.
func (d Demote) problems() []string {
	var bad []string
	if d.After > maxDemoteAfter {
		bad = append(bad, fmt.Sprintf("Demote.After %d is above %d", d.After, maxDemoteAfter))
	}
	if d.For < 0 {
		bad = append(bad, fmt.Sprintf("Demote.For %v is negative", d.For))
	}
	if d.Max < 0 {
		bad = append(bad, fmt.Sprintf("Demote.Max %v is negative", d.Max))
	}
	if d.For > 0 && d.Max > 0 && d.Max < d.For {
		bad = append(bad, fmt.Sprintf("Demote.Max %v is less than Demote.For %v", d.Max, d.For))
	}
	return bad
}

// demoteRule is a valid Demote with its defaults resolved, built once per
// host policy. An after of 0 turns demotion off.
type demoteRule struct {
	after     int32
	base, max time.Duration // base > 0
}

// resolve applies d's defaults; d must be valid.
func (d Demote) resolve() demoteRule {
	r := demoteRule{after: int32(max(d.After, 0)), base: d.For, max: d.Max}
	if d.After == 0 {
		r.after = defaultDemoteAfter
	}
	if r.base == 0 {
		r.base = defaultDemoteFor
	}
	if r.max == 0 {
		r.max = max(defaultDemoteMax, r.base)
	}
	return r
}

// ceiling is D, the longest nth demotion in a row: min(n×base, max).
func (r demoteRule) ceiling(n int64) time.Duration {
	if n > int64(r.max/r.base) {
		return r.max
	}
	return time.Duration(n) * r.base
}

// length draws the nth demotion in a row uniformly from [D/2, D], so that
// the clients that saw an origin fail together do not all probe it in the
// same instant. A nil rng uses math/rand/v2's shared source, as
// Backoff.Delay does.
func (r demoteRule) length(n int64, rng *rand.Rand) time.Duration {
	d := r.ceiling(n)
	lo := d / 2
	if rng == nil {
		return lo + time.Duration(rand.Int64N(int64(d-lo)+1))
	}
	return lo + time.Duration(rng.Int64N(int64(d-lo)+1))
}

// demotion is one origin's standing under Demote, shared by every request
// to it. Every operation takes the instant it happens at; none locks,
// allocates, starts a goroutine or sets a timer: a demotion's end is found
// when it is read. The zero value is an undemoted origin with no history.
// It is safe for concurrent use.
type demotion struct {
	// until holds the whole standing in one word, so that claiming the
	// probe and every verdict on it is one compare-and-swap: 0, undemoted;
	// u > 0, demoted until the Unix nanosecond u, and from then on expired
	// with its probe free; -u, expired at u with its probe claimed.
	until atomic.Int64
	// fails counts consecutive failures while undemoted.
	fails atomic.Int32
	// streak is n of the latest demotion, its rank in a row.
	streak atomic.Int64
	// restoredAt is the Unix nanosecond of the latest restore, from which
	// streak decays.
	restoredAt atomic.Int64
	// since is the Unix nanosecond the latest demotion began: with until,
	// its length, which bounds its probe (see lasted).
	since atomic.Int64
}

// probe is a request's claim on the probe of an origin whose demotion has
// expired. The request keeps it and gives it back exactly once: with a
// verdict (failed or answered) or with release. The zero probe is no
// claim.
type probe struct {
	claimed int64 // the value of until that marks this claim: -u
}

// order decides where the origin goes among a request's candidates at
// now, and claims nothing. It goes last while demoted, and while another
// request probes it. Once the demotion has expired and its probe is free,
// it keeps its configured place for a request that may probe (probing),
// which claims the probe when its attempt is paid for (see claim). A
// request may probe when it may move on to another candidate (it may be
// resent and its body replayed): a POST without a key never probes. An
// undemoted origin costs one atomic load.
func (s *demotion) order(now time.Time, mayProbe bool) (last, probing bool) {
	u := s.until.Load()
	switch {
	case u == 0:
		return false, false
	case u < 0 || !mayProbe || now.UnixNano() < u:
		return true, false
	}
	return false, true
}

// claim claims, at now, the probe of an origin whose demotion has expired,
// for the attempt about to go to it, so that one request at a time probes
// it. ok is false when another request claimed it first, or the origin
// was demoted again since it was ordered; an origin restored since needs
// no probe, and ok is true with none.
func (s *demotion) claim(now time.Time) (p probe, ok bool) {
	u := s.until.Load()
	switch {
	case u == 0:
		return probe{}, true
	case u < 0 || now.UnixNano() < u:
		return probe{}, false
	case s.until.CompareAndSwap(u, -u):
		return probe{claimed: -u}, true
	}
	return probe{}, false // another request's claim or answer came first
}

// failed records a failure of the origin at now: a status the policy
// retries other than 429, a transport error or PerTryTimeout firing. It
// returns whether the failure demoted the origin and for how long
// (EventDemote's Delay). A failed probe p demotes it again, one more in a
// row. Otherwise failures count only while the origin is undemoted, and
// the After-th in a row demotes it, its rank in the row 1 + the previous
// one's less what it has since decayed. r is as for Backoff.Delay.
func (s *demotion) failed(now time.Time, p probe, rule demoteRule, r *rand.Rand) (bool, time.Duration) {
	if rule.after <= 0 {
		return false, 0
	}
	t := now.UnixNano()
	if p.claimed != 0 {
		n := s.streak.Load() + 1
		d := rule.length(n, r)
		if s.until.CompareAndSwap(p.claimed, addNanos(t, d)) {
			s.streak.Store(n)
			s.since.Store(t)
			return true, d
		}
		// Another request's answer restored the origin during the probe:
		// this is a failure like any other.
	}
	// Failures from requests under way when the origin was demoted, or sent
	// to it because every candidate was, add nothing to its demotion.
	if s.until.Load() != 0 || s.fails.Add(1) < rule.after {
		return false, 0
	}
	n := 1 + s.decayed(t, rule.base)
	d := rule.length(n, r)
	// Failures at the same instant may all reach After; one demotes.
	if !s.until.CompareAndSwap(0, addNanos(t, d)) {
		return false, 0
	}
	s.streak.Store(n)
	s.since.Store(t)
	s.fails.Store(0)
	return true, d
}

// lasted is the length of the demotion that probe p probes, from its
// start to its end, a Retry-After that held it included; base when it
// cannot be told (another demotion began meanwhile).
func (s *demotion) lasted(p probe, base time.Duration) time.Duration {
	if d := time.Duration(-p.claimed - s.since.Load()); d > 0 {
		return d
	}
	return base
}

// decayed is the latest demotion's rank in a row less one for every base
// the origin has spent undemoted since its restore, at the Unix nanosecond
// t.
func (s *demotion) decayed(t int64, base time.Duration) int64 {
	n := s.streak.Load()
	if n == 0 {
		return 0
	}
	spent := max(t-s.restoredAt.Load(), 0)
	return max(n-spent/int64(base), 0)
}

// answered records an answer from the origin at now (any status but a
// failure's) and returns whether it restored the origin (EventRestore). Any
// answer resets the count of failures, and one from a demoted origin
// restores it: its probe's, or another request's (sent when every
// candidate was demoted, say). tooMany says the answer was a 429: the
// origin is alive but asks for less, so it restores nothing, and a probe
// answered with it gives back its claim with no verdict.
func (s *demotion) answered(now time.Time, p probe, tooMany bool) bool {
	s.clearFails()
	if tooMany {
		s.release(p)
		return false
	}
	for {
		u := s.until.Load()
		if u == 0 {
			return false
		}
		if s.until.CompareAndSwap(u, 0) {
			s.restoredAt.Store(now.UnixNano())
			return true
		}
	}
}

// clearFails resets the count of failures. Only a reset writes: answers
// from a healthy origin, the common case, leave the line every request to
// it shares clean (parallel BenchmarkDemotionAnswered on 2 cores: 5 ns
// against 9 ns a store).
func (s *demotion) clearFails() {
	if s.fails.Load() != 0 {
		s.fails.Store(0)
	}
}

// release gives back p with no verdict: its request ended first
// (canceled, past its deadline, or won by a copy sent elsewhere), and the
// next request may probe. A claim already ended by another request's
// verdict is left alone.
func (s *demotion) release(p probe) {
	if p.claimed != 0 {
		s.until.CompareAndSwap(p.claimed, -p.claimed)
	}
}

// hold keeps a demoted origin demoted until at least ra after now, as an
// answer from it asked with Retry-After, capped at maxRetryAfter, without
// counting a failure. It leaves alone an undemoted origin, and one under a
// probe, whose verdict decides: call hold after the verdict on the same
// answer.
func (s *demotion) hold(now time.Time, ra, maxRetryAfter time.Duration) {
	ra = min(ra, maxRetryAfter)
	if ra <= 0 {
		return
	}
	end := addNanos(now.UnixNano(), ra)
	for {
		u := s.until.Load()
		if u <= 0 || u >= end || s.until.CompareAndSwap(u, end) {
			return
		}
	}
}

// standing reports whether the origin has a demotion running, expired or
// under a probe: one atomic load, so that a request whose origins have
// none pays nothing more.
func (s *demotion) standing() bool { return s.until.Load() != 0 }

// left is how long the origin stays demoted after now (BudgetStats'
// DemotedFor): 0 when it is undemoted, or its demotion has expired.
func (s *demotion) left(now time.Time) time.Duration {
	if u, t := s.until.Load(), now.UnixNano(); u > t {
		return time.Duration(u - t)
	}
	return 0
}

// addNanos is the Unix nanosecond d after t, saturated rather than wrapped
// to a negative value, which would read as a claimed probe.
func addNanos(t int64, d time.Duration) int64 {
	if int64(d) > math.MaxInt64-t {
		return math.MaxInt64
	}
	return t + int64(d)
}

// demoteLast moves the elements of s for which last reports true to the
// back of s, in place and stably: each group keeps its configured order,
// so with none or every one of them last, s is unchanged. Nothing is
// removed. last is called once per element, front to back. A request has a
// handful of candidates: shifting them costs less than any scratch space.
func demoteLast[T any](s []T, last func(*T) bool) {
	front := 0 // where the next element that stays in front goes
	for i := range s {
		if last(&s[i]) {
			continue
		}
		if i > front {
			x := s[i]
			copy(s[front+1:i+1], s[front:i])
			s[front] = x
		}
		front++
	}
}

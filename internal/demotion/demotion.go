// Package demotion keeps one origin's standing under httpretry's Demote:
// whether it is demoted, until when, and which request probes it once the
// demotion has passed. Every operation takes the instant it happens at;
// none locks, allocates, starts a goroutine or sets a timer.
package demotion

import (
	"math"
	"math/rand/v2"
	"sync/atomic"
	"time"
)

// Rule is a valid httpretry.Demote with its defaults resolved. An After of
// 0 turns demotion off.
type Rule struct {
	// After is the number of consecutive failures that demote an origin.
	After int32
	// Base is the length of the first demotion in a row, above 0; Max is
	// the longest.
	Base, Max time.Duration
}

// ceiling is D, the longest nth demotion in a row: min(n×Base, Max).
func (r Rule) ceiling(n int64) time.Duration {
	if n > int64(r.Max/r.Base) {
		return r.Max
	}
	return time.Duration(n) * r.Base
}

// length draws the nth demotion in a row uniformly from [D/2, D], so that
// the clients that saw an origin fail together do not all probe it in the
// same instant. A nil rng uses math/rand/v2's shared source, as
// httpretry's Backoff.Delay does.
func (r Rule) length(n int64, rng *rand.Rand) time.Duration {
	d := r.ceiling(n)
	lo := d / 2
	if rng == nil {
		return lo + time.Duration(rand.Int64N(int64(d-lo)+1))
	}
	return lo + time.Duration(rng.Int64N(int64(d-lo)+1))
}

// State is one origin's standing, shared by every request to it. A
// demotion's end is found when it is read. The zero value is an undemoted
// origin with no history. It is safe for concurrent use.
type State struct {
	// until holds the whole standing in one word, so that claiming the
	// probe and every verdict on it is one compare-and-swap. phaseOf
	// alone reads its sign.
	until atomic.Int64
	// fails counts consecutive failures while undemoted.
	fails atomic.Int32
	// streak is n of the latest demotion, its rank in a row.
	streak atomic.Int64
	// restoredAt is the Unix nanosecond of the latest restore, from which
	// streak decays.
	restoredAt atomic.Int64
	// since is the Unix nanosecond the latest demotion began: with until,
	// its length, which bounds its probe (see Lasted).
	since atomic.Int64
}

// phase is what a value of State.until says at an instant.
type phase uint8

const (
	// undemoted: until is 0.
	undemoted phase = iota
	// demoted: until is u > 0, the Unix nanosecond the demotion ends,
	// not yet reached.
	demoted
	// expired: u has been reached, and the probe is free.
	expired
	// probed: until is -u, expired with its probe claimed.
	probed
)

var phaseNames = [...]string{undemoted: "undemoted", demoted: "demoted", expired: "expired", probed: "probed"}

// String is the phase's name.
func (p phase) String() string { return phaseNames[p] }

// phaseOf decodes u, a value of until, at now.
func phaseOf(u int64, now time.Time) phase {
	switch {
	case u == 0:
		return undemoted
	case u < 0:
		return probed
	case now.UnixNano() < u:
		return demoted
	}
	return expired
}

// Probe is a request's claim on the probe of an origin whose demotion has
// expired. The request keeps it and gives it back exactly once: with a
// verdict (Failed or Answered) or with Release. The zero Probe is no
// claim.
type Probe struct {
	claimed int64 // the value of until that marks this claim: -u
}

// Claimed reports whether p is a claim.
func (p Probe) Claimed() bool { return p.claimed != 0 }

// Order decides where the origin goes among a request's candidates at
// now, and claims nothing. It goes last while demoted, and while another
// request probes it. Once the demotion has expired and its probe is free,
// it keeps its configured place for a request that may probe (probing),
// which claims the probe when its attempt is paid for (see Claim). A
// request may probe when it may move on to another candidate (it may be
// resent and its body replayed): a POST without a key never probes. An
// undemoted origin costs one atomic load.
func (s *State) Order(now time.Time, mayProbe bool) (last, probing bool) {
	switch phaseOf(s.until.Load(), now) {
	case undemoted:
		return false, false
	case expired:
		if mayProbe {
			return false, true
		}
	}
	return true, false
}

// Claim claims, at now, the probe of an origin whose demotion has expired,
// for the attempt about to go to it, so that one request at a time probes
// it. ok is false when another request claimed it first, or the origin
// was demoted again since it was ordered; an origin restored since needs
// no probe, and ok is true with none.
func (s *State) Claim(now time.Time) (p Probe, ok bool) {
	u := s.until.Load()
	switch phaseOf(u, now) {
	case undemoted:
		return Probe{}, true
	case expired:
		if s.until.CompareAndSwap(u, -u) {
			return Probe{claimed: -u}, true
		}
	}
	return Probe{}, false // demoted, or another request's claim or answer came first
}

// Failed records a failure of the origin at now: a status the policy
// retries other than 429, a transport error or PerTryTimeout firing. It
// returns whether the failure demoted the origin and for how long
// (EventDemote's Delay). A failed probe p demotes it again, one more in a
// row. Otherwise failures count only while the origin is undemoted, and
// the After-th in a row demotes it, its rank in the row 1 + the previous
// one's less what it has since decayed. r is as for Backoff.Delay.
func (s *State) Failed(now time.Time, p Probe, rule Rule, r *rand.Rand) (bool, time.Duration) {
	if rule.After <= 0 {
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
	if phaseOf(s.until.Load(), now) != undemoted || s.fails.Add(1) < rule.After {
		return false, 0
	}
	n := 1 + s.decayed(t, rule.Base)
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

// Lasted is the length of the demotion that probe p probes, from its
// start to its end, a Retry-After that held it included; base when it
// cannot be told (another demotion began meanwhile).
func (s *State) Lasted(p Probe, base time.Duration) time.Duration {
	if d := time.Duration(-p.claimed - s.since.Load()); d > 0 {
		return d
	}
	return base
}

// Streak is the latest demotion's rank in a row: 1 for the first, 0 for
// an origin never demoted.
func (s *State) Streak() int64 { return s.streak.Load() }

// decayed is the latest demotion's rank in a row less one for every base
// the origin has spent undemoted since its restore, at the Unix nanosecond
// t.
func (s *State) decayed(t int64, base time.Duration) int64 {
	n := s.streak.Load()
	if n == 0 {
		return 0
	}
	spent := max(t-s.restoredAt.Load(), 0)
	return max(n-spent/int64(base), 0)
}

// Answered records an answer from the origin at now (any status but a
// failure's) and returns whether it restored the origin (EventRestore). Any
// answer resets the count of failures, and one from a demoted origin
// restores it: its probe's, or another request's (sent when every
// candidate was demoted, say). tooMany says the answer was a 429: the
// origin is alive but asks for less, so it restores nothing, and a probe
// answered with it gives back its claim with no verdict.
func (s *State) Answered(now time.Time, p Probe, tooMany bool) bool {
	s.ClearFails()
	if tooMany {
		s.Release(p)
		return false
	}
	for {
		u := s.until.Load()
		if phaseOf(u, now) == undemoted {
			return false
		}
		if s.until.CompareAndSwap(u, 0) {
			s.restoredAt.Store(now.UnixNano())
			return true
		}
	}
}

// ClearFails resets the count of failures, as an answer that needs no
// other verdict does. Only a reset writes: answers from a healthy origin,
// the common case, leave the line every request to it shares clean
// (parallel BenchmarkAnswered on 2 cores: 5 ns against 9 ns a store).
func (s *State) ClearFails() {
	if s.fails.Load() != 0 {
		s.fails.Store(0)
	}
}

// Release gives back p with no verdict: its request ended first
// (canceled, past its deadline, or won by a copy sent elsewhere), and the
// next request may probe. A claim already ended by another request's
// verdict is left alone.
func (s *State) Release(p Probe) {
	if p.claimed != 0 {
		s.until.CompareAndSwap(p.claimed, -p.claimed)
	}
}

// Hold keeps a demoted origin demoted until at least ra after now, as an
// answer from it asked with Retry-After, capped at maxRetryAfter, without
// counting a failure. It leaves alone an undemoted origin, and one under a
// probe, whose verdict decides: call Hold after the verdict on the same
// answer.
func (s *State) Hold(now time.Time, ra, maxRetryAfter time.Duration) {
	ra = min(ra, maxRetryAfter)
	if ra <= 0 {
		return
	}
	end := addNanos(now.UnixNano(), ra)
	for {
		u := s.until.Load()
		switch phaseOf(u, now) {
		case undemoted, probed:
			return
		}
		if u >= end || s.until.CompareAndSwap(u, end) {
			return
		}
	}
}

// Active reports whether the origin has a demotion running, expired or
// under a probe: one atomic load, so that a request whose origins have
// none pays nothing more. It needs no instant: only an undemoted origin's
// word is 0, whenever it is read.
func (s *State) Active() bool { return s.until.Load() != 0 }

// Left is how long the origin stays demoted after now (BudgetStats'
// DemotedFor): 0 when it is undemoted, or its demotion has expired.
func (s *State) Left(now time.Time) time.Duration {
	if u := s.until.Load(); phaseOf(u, now) == demoted {
		return time.Duration(u - now.UnixNano())
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

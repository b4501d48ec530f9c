package httpretry

import (
	"fmt"
	"io"
	"time"

	"github.com/httpretry/httpretry/internal/demotion"
)

// Hedge sends speculative copies of a slow request. It cuts the tail latency
// that one slow replica gives every caller. The zero value sends no copies.
//
// Only requests that may be resent, and whose body can be replayed, are hedged.
// A copy goes to the next fallback origin not yet tried, if any. With
// SameOrigin, it goes to the request's own origin. Wherever it goes, it is
// charged to the retry budget of the origin the request's round started at (the
// request it copies). It counts against MaxRetries. So one request never costs
// the upstream more than 1 + MaxRetries calls, or candidates + MaxRetries with
// fallbacks.
//
// With Quantile set, the delay is learned per origin. A copy goes when the
// attempt has waited that quantile of the origin's recent times to response
// headers. Dean and Barroso's "The Tail at Scale" hedges at the 95th
// percentile. So the delay follows the origin as it speeds up or slows down.
// Learned copies are also capped per origin at 2·(1 − Quantile) of its requests
// in the budget's window, at least 1.
type Hedge struct {
	// After is how long an attempt may go without response headers before
	// another copy is sent; 0 turns hedging off. With Quantile, After is the
	// delay while the origin is cold (fewer than 32 times recorded). There, 0
	// sends no copy while cold.
	After time.Duration
	// Max is the number of copies sent at most beside the attempt they hedge,
	// at most 16. 0 means 1 when After or Quantile is set.
	Max int
	// Quantile, in [0.5, 0.999], learns the delay. A copy goes when the attempt
	// has waited this quantile of its origin's recent times to response
	// headers. 0 keeps the fixed After.
	Quantile float64
	// MinAfter is the least learned delay; 0 means 1 ms. Only with
	// Quantile.
	MinAfter time.Duration
	// SameOrigin sends every copy to the request's own origin, never to a
	// fallback. So a cold standby serves failures only. false sends a copy to
	// the next fallback not yet tried, as a resend goes.
	SameOrigin bool
}

const (
	minHedgeQuantile = 0.5
	maxHedgeQuantile = 0.999
)

func (h Hedge) problems() []string {
	var bad []string
	if h.After < 0 {
		bad = append(bad, fmt.Sprintf("Hedge.After %v is negative", h.After))
	}
	if h.Max < 0 || h.Max > MaxRetriesLimit {
		bad = append(bad, fmt.Sprintf("Hedge.Max %d is outside 0..%d", h.Max, MaxRetriesLimit))
	}
	if h.Max > 0 && h.After == 0 && h.Quantile == 0 {
		bad = append(bad, fmt.Sprintf("Hedge.Max %d needs Hedge.After or Hedge.Quantile", h.Max))
	}
	// NaN fails both comparisons, so it is caught by the negation.
	if h.Quantile != 0 && !(h.Quantile >= minHedgeQuantile && h.Quantile <= maxHedgeQuantile) {
		bad = append(bad, fmt.Sprintf("Hedge.Quantile %v is outside [%v, %v]", h.Quantile, minHedgeQuantile, maxHedgeQuantile))
	}
	if h.MinAfter < 0 {
		bad = append(bad, fmt.Sprintf("Hedge.MinAfter %v is negative", h.MinAfter))
	}
	if h.MinAfter != 0 && h.Quantile == 0 {
		bad = append(bad, fmt.Sprintf("Hedge.MinAfter %v needs Hedge.Quantile", h.MinAfter))
	}
	if h.SameOrigin && h.After == 0 && h.Quantile == 0 {
		bad = append(bad, "Hedge.SameOrigin true needs Hedge.After or Hedge.Quantile")
	}
	return bad
}

// copies is the number of hedged copies allowed beside one attempt.
func (h Hedge) copies() int {
	if h.After <= 0 && h.Quantile == 0 {
		return 0
	}
	return max(h.Max, 1)
}

// hedgedRound is one attempt and its hedged copies in flight.
type hedgedRound struct {
	c        *call
	outcomes chan outcome
	inflight []*attempt
	pending  int
	copies   int
	hedging  bool          // more copies may be sent
	after    time.Duration // the round's delay before each copy
	origin   *target       // where the round's first attempt went: its delay, its cap
	kept     outcome       // the failure to judge if no attempt wins
	held     *outcome      // the outcome whose verdict is being applied
	last     *target       // where the latest attempt of the round went
}

// run sends attempt n to tg with body, then copies of it as round says,
// and returns the round's outcome.
func (h *hedgedRound) run(n int, tg *target, body io.ReadCloser) outcome {
	h.launch(n, tg, body)
	h.after, h.hedging = h.delay(tg)
	var fire <-chan time.Time // nil, never ready, when no copy goes
	timer := time.NewTimer(h.after)
	defer timer.Stop()
	if h.hedging {
		fire = timer.C
	}
	// A callback that panics (RetryIf, an observer) leaves no attempt of
	// the round in flight.
	defer func() {
		if v := recover(); v != nil {
			if h.held != nil {
				h.held.a.discard(h.held.resp)
			}
			h.cancelLosers(nil)
			panic(v)
		}
	}()
	for h.pending > 0 {
		select {
		case o := <-h.outcomes:
			if w, won := h.receive(o); won {
				return w
			}
		case <-fire:
			// An outcome that came with the timer wins over a copy.
			select {
			case o := <-h.outcomes:
				if w, won := h.receive(o); won {
					return w
				}
				continue
			default:
			}
			if h.hedging && h.hedge() {
				timer.Reset(h.after)
			}
		}
	}
	return h.kept
}

func (h *hedgedRound) launch(n int, tg *target, body io.ReadCloser) {
	a, r := h.c.newAttempt(n, tg, body, tg.probe.Claimed() && !h.probing(tg))
	h.c.sent = n
	h.last = tg
	h.inflight = append(h.inflight, a)
	h.pending++
	go func() {
		resp, err := h.c.do(a, r)
		h.outcomes <- outcome{a: a, resp: resp, err: err}
	}()
}

// probing reports whether an attempt of the round still in flight
// probes tg: a later copy to tg is no probe of its own.
func (h *hedgedRound) probing(tg *target) bool {
	for _, a := range h.inflight {
		if a.tg == tg && a.probes && !a.received {
			return true
		}
	}
	return false
}

// receive judges one outcome; it reports whether that outcome won, in
// which case the other attempts are over.
func (h *hedgedRound) receive(o outcome) (outcome, bool) {
	h.pending--
	o.a.received = true
	now := h.c.clock(o.resp)
	o = h.c.judge(o.a, o.resp, o.err, now)
	h.learn(o)
	if !o.failure {
		h.held = &o // cancelLosers may tell of a demotion
		h.cancelLosers(o.a)
		h.held = nil
		return o, true // the loop applies its verdict
	}
	h.held = &o
	h.c.apply(&o)
	h.held = nil
	// The upstream is failing, not slow: more copies would only add to
	// its load.
	h.hedging = false
	if h.kept.a == nil || stronger(o, h.kept) {
		o, h.kept = h.kept, o
	}
	if o.a != nil {
		// The weaker failure is let go within the deadline: a body that
		// stalls must not keep the request past it.
		discardWithin(o.resp, h.drainRoom())
		o.a.end()
	}
	return outcome{}, false
}

// stronger reports whether failure x says more than y: an answer beats an
// error, and of two answers the one asking for the longer Retry-After
// wins; otherwise the later one, x.
func stronger(x, y outcome) bool {
	if (x.resp == nil) != (y.resp == nil) {
		return x.resp != nil
	}
	return x.resp == nil || !y.hasRA || x.hasRA && x.ra >= y.ra
}

// hedge sends a copy if one is admitted, to the next candidate not yet
// tried, or round the candidates; it reports whether another copy may
// follow.
//
// A copy is charged to the request it copies (point 20): to the budget of
// the round's origin, wherever it goes, and a learned copy needs room
// under its cap in the same window; a candidate the request has not been
// to records it as a request, the load it carries. So hedging beside a
// fallback goes on at the rate the primary's budget allows, and a
// fallback never starves for credit it could not earn. A copy that is due
// and not sent is told with its Reason, of the origin that refused it.
func (h *hedgedRound) hedge() bool {
	c := h.c
	next := c.sent + 1
	now := time.Now()
	s, tg, claimed, reason := h.copyTarget(now)
	var body io.ReadCloser
	if reason == 0 {
		// The body comes before the charge: a copy that cannot be sent is
		// not charged.
		body, reason = c.copyBody(c.req)
	}
	if reason == 0 {
		if reason = h.charge(now); reason != 0 {
			closeBody(body)
		}
	}
	if reason != 0 {
		if claimed {
			tg.unclaimProbe()
		}
		if reason == ReasonBudget || reason == ReasonCopyCap {
			tg = h.origin // whose budget refused
		}
		h.hedging = false
		c.emit(Event{Kind: EventHedge, Attempt: next, Reason: reason}, tg)
		return false
	}
	if b := c.budgetOf(tg); !tg.tried && b != nil {
		// The request's first attempt there: a request, once, as for a
		// candidate's first attempt (a copy sent to an origin the request
		// has been to already is no extra request there).
		b.recordAt((*instant)(&now))
	}
	c.attempted(s)
	c.spend(s)
	h.launch(next, tg, body)
	h.copies++
	// Told once the copy is in flight, so that an observer that panics
	// leaves it to the round, which cancels it.
	c.emit(Event{Kind: EventHedge, Attempt: next, Delay: h.after * time.Duration(h.copies)}, tg)
	return h.copies < c.p.hedge.copies()
}

// copyTarget decides at now where the next copy goes (see nextCopy) and
// claims that origin's probe when it is one: a candidate whose probe
// another request claimed first is deferred, and the copy decided again.
// claimed says this copy took a probe, to give back if it does not go. On
// a refusal, tg is where the round's latest attempt went.
func (h *hedgedRound) copyTarget(now time.Time) (s plan, tg *target, claimed bool, reason Reason) {
	c := h.c
	for {
		if s, reason = c.nextCopy(now); reason != 0 {
			return s, h.last, false, reason
		}
		tg = &c.targets[s.to]
		probing := tg.probing
		if tg.claimProbe(now) {
			return s, tg, probing && tg.probe.Claimed(), 0
		}
	}
}

// charge reserves one copy on the budget of the round's origin, and under
// a learned delay counts it against that origin's cap on copies: the
// reason is ReasonCopyCap when the cap refused it, ReasonBudget when the
// budget did. A disabled budget charges nothing and has no cap.
func (h *hedgedRound) charge(now time.Time) Reason {
	b := h.c.budgetOf(h.origin)
	if b == nil {
		return 0
	}
	_, refused := b.reserveAt(now, h.c.p.hedge.Quantile)
	return refused
}

// delay is how long a round whose first attempt went to tg waits before
// each copy, and whether copies go at all: Hedge.After, or with Quantile
// the origin's learned delay (see hedgeDelay).
func (h *hedgedRound) delay(tg *target) (time.Duration, bool) {
	cfg := h.c.p.hedge
	if cfg.Quantile == 0 {
		return cfg.After, true
	}
	est, warm := tg.rec.learned().Estimate()
	return hedgeDelay(est, warm, cfg.After, cfg.MinAfter)
}

// learn records what a settled attempt says of its origin's time to
// response headers, under a learned delay (point 17): an answer at its
// time, an attempt that PerTryTimeout cut at the timeout. A failure that
// came back (a fast 503, a refused dial) says nothing of how long an
// answer takes, nor does an attempt the caller ended.
func (h *hedgedRound) learn(o outcome) {
	c := h.c
	q := c.p.hedge.Quantile
	if q == 0 || c.req.Context().Err() != nil {
		return
	}
	switch {
	case !o.failure && o.err == nil:
		o.a.tg.rec.learn(o.a.took, q)
	case o.failure && o.a.fired.Load() && !o.a.byDeadline:
		// A timeout RetryIf declines is an error like any other it
		// declines: not recorded (point 17).
		o.a.tg.rec.learn(o.a.timeout, q)
	}
}

// cancelLosers cancels every attempt but the winner and waits for the
// pending ones to come back, discarding what they bring, but for a probe
// of another origin than the winner's: it runs on to its own verdict
// (DESIGN point 23, see settleProbes), unless the caller ended first.
//
// The round's first attempt, overtaken by a copy, is a censored sample:
// its time was at least the round's delay. Without it the estimate would
// learn only from fast winners, and copy too often. It is recorded just
// inside the delay's bucket, not at its age: an age is always past the
// delay, and would raise a dead origin's delay one bucket for every
// estimate, until no copy went at all. Overtaken by a copy to another
// origin, it is a failure of its own origin's (see tellOvertaken), told
// last, once nothing of the round is left to release; a probe is not,
// since it gets its own verdict. One the caller ended was not overtaken,
// even if a copy's answer came after. It is safe to call again after a
// panic.
func (h *hedgedRound) cancelLosers(winner *attempt) {
	first, q := h.inflight[0], h.c.p.hedge.Quantile
	live := winner != nil && h.c.req.Context().Err() == nil
	overtaken := live && winner != first && !first.received
	if q > 0 && overtaken {
		first.tg.rec.learn(max(h.after-1, 0), q)
	}
	alone := 0
	for _, a := range h.inflight {
		switch {
		case a == winner || a.received || a.alone != nil:
		case live && a.probes && a.tg != winner.tg && a.detach():
			// The claim goes with the attempt: the request lets go of its
			// candidates when it returns.
			tg := *a.tg
			a.alone = &tg
			a.tg.probe = demotion.Probe{}
			alone++
		default:
			a.end()
		}
	}
	if h.kept.a != nil {
		// Within the deadline; with a winner, at once: draining a stalled
		// failure must not keep the answer from its caller.
		within := h.drainRoom()
		if winner != nil {
			within = 0
		}
		discardWithin(h.kept.resp, within)
		h.kept.a.end()
		h.kept = outcome{}
	}
	var back []outcome // probes that came back while the others were awaited
	for h.pending > alone-len(back) {
		o := <-h.outcomes
		h.pending--
		if o.a.alone != nil {
			back = append(back, o)
			continue
		}
		o.a.discard(o.resp)
	}
	if alone > 0 {
		// The probes outlive the request: its call must not be reused.
		h.c.lent = true
		rest := *h // the goroutine's own copy: the request's returns
		go rest.settleProbes(back)
		h.pending = 0
	}
	if overtaken && winner.tg != first.tg && first.alone == nil {
		h.c.tellOvertaken(first.tg, first.n, h.c.clock(nil))
	}
}

// settleProbes settles the probes that ran on after their round was won:
// the outcomes in back, then the pending ones, each bounded by its
// attempt's timer. It runs after the request has returned, so a callback
// that panics (RetryIf, an observer) has no caller to reach: its panic is
// dropped once the probe is released, rather than crash the program.
func (h *hedgedRound) settleProbes(back []outcome) {
	for _, o := range back {
		h.settleProbe(o)
	}
	for range h.pending {
		h.settleProbe(<-h.outcomes)
	}
}

// settleProbe judges the outcome of a probe that ran on alone and applies
// its verdict to its origin: an answer restores it, a failure (the bound
// cutting it included) demotes it again. Its response is drained and
// closed, and its claim given back if no verdict took it.
func (h *hedgedRound) settleProbe(o outcome) {
	c, tg := h.c, o.a.alone
	defer func() {
		_ = recover() // see settleProbes
		tg.rec.demotion.Release(tg.probe)
	}()
	// A RetryIf that panics leaves the response closed.
	o = c.judge(o.a, o.resp, o.err, c.clock(o.resp))
	o.a.discard(o.resp)
	v := o.verdict()
	v.alone = true
	c.applyTo(tg, v)
}

// drainRoom is how long a failure the round lets go may take to drain:
// drainTime, or nothing when that would cross the deadline.
func (h *hedgedRound) drainRoom() time.Duration {
	if h.c.crosses(drainTime) {
		return 0
	}
	return drainTime
}

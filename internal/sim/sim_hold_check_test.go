package sim_test

import (
	"fmt"
	"slices"
	"time"

	"github.com/httpretry/httpretry"
)

// Point 22's invariants ("An outage earns no credit"), read from what the
// sim sees: the base's record of attempts with their instants, the events,
// what RoundTrip returned, and BudgetStats sampled at the end of each
// instant (sim_sample_test.go), beside the sim's own count of each
// origin's streak (sim_streak_test.go). Probes and released resends are
// not marked as such; the sim tells them apart as far as the contract lets
// it (isProbeOrRelease), and where it cannot, it checks a weaker bound.
//
// Everywhere: a request the hold cannot have touched (its policy never
// holds, or no candidate's streak can have reached Hold while it ran)
// behaves as before point 22, and every older check holds of it exactly;
// one that may have been held or parked makes no more attempts than its
// bound but for probes and releases, all to the origin it parked at, and
// only if it had room to park. ReasonHold is told only where the hold may
// have acted; nothing parks under Hold -1 or a disabled budget; an origin
// never has more requests parked than may be parked there.
//
// In the outage scenario, checked once the hold's engine is present
// (holdChecks), and until then only counted (outageCheck.violate):
// the streak BudgetStats shows is the sim's; a resend to a down origin
// with nothing in flight gives up (rule 1); a held resend that heard a
// failure and no answer does not go (rules 2, 4), and one that heard
// nothing goes only on a floor credit, never under a strict budget (rule
// 5); after the onset the resends that go are bounded by what was in
// flight at the onset and the floor's credit (the count form of the
// same); no probe starts within P of an attempt started at a streak above
// 0; releases come no faster than one per gap₀ after each answer that
// ends a streak; and once an arrival finds requests parked at a down
// origin and no token can be left, nothing parks there but the requests
// whose probe or release was in flight, until an answer.
//
// Where the sim reads less than the engine knows, the checks are weaker
// than the rules, never stronger: decisions are read only where the
// streak and the order of outcomes are certain; a probe is told apart
// only when announced at its start (no Retry-After in the run) and the
// streak is certainly above 0; P and gap₀ are bounded below by Window ÷
// the most requests any window can have held (P also by HoldFor); the
// release pace counts probes and releases together, with a slack of 3;
// tokens are bounded by the returns of requests that could park; a closed
// parking is known only once more arrivals found requests parked than
// tokens may have been granted.

// lineKey names an origin's line in a registry.
type lineKey struct {
	reg int
	o   *simOrigin
}

// markTouched decides, once every attempt of the run is back, which
// requests the hold may have acted on.
func (run *simRun) markTouched() {
	lines := map[lineKey]*streakLine{}
	line := func(reg int, o *simOrigin) *streakLine {
		k := lineKey{reg, o}
		if lines[k] == nil {
			lines[k] = run.streakLine(reg, o)
		}
		return lines[k]
	}
	for _, sr := range run.reqs {
		sr.touched = run.mayBeHeld(sr, line)
		if sr.atReturn != nil {
			sr.atReturn.touched = sr.touched
		}
		if sr.touched {
			run.tally["requests the hold may have acted on"]++
		}
	}
	run.engagedRegs = map[int]bool{}
	for k, l := range lines {
		if l.hold >= 1 && l.maxHi(run.t0, l.far) >= l.hold {
			run.engagedRegs[k.reg] = true
		}
	}
}

// mayBeHeld reports whether the hold may have acted on sr: its policy
// holds, and the streak of one of its candidates may have reached Hold
// while it ran. Nested, the inner's hold is the outer's outcome: any
// request of a run whose policies hold.
func (run *simRun) mayBeHeld(sr *simReq, line func(int, *simOrigin) *streakLine) bool {
	if run.cfg.nested {
		return holds(sr.pol.Budget) || holds(run.cfg.inner.Budget)
	}
	if !holds(sr.pol.Budget) {
		return false
	}
	h := resolvedHold(sr.pol.Budget)
	end := sr.end
	if !sr.returned {
		end = run.t0.Add(1000 * time.Hour)
	}
	for _, c := range sr.cands {
		l := line(run.regOf[sr.tr], c)
		if l.coarseHi(sr.start, end) >= h && l.maxHi(sr.start, end) >= h {
			return true
		}
	}
	return false
}

// engaged reports whether the hold may have acted anywhere in registry
// ri: then its budget counts are bounds, not equalities (checkBudgets).
func (run *simRun) engaged(ri int) bool { return run.engagedRegs[ri] }

// isCandidate reports whether url is one of sr's candidates.
func (sr *simReq) isCandidate(url string) bool {
	for _, c := range sr.cands {
		if c.url == url {
			return true
		}
	}
	return false
}

// checkCalls: at most one call per candidate plus one per resend (point
// 13; nested, the outer's bound, however many first requests go at once
// and whatever is between the two transports, point 20: it implies calls
// ≤ requests × (1 + MaxRetries) per candidate). Only parking's probes and
// releases go past it (point 22), all to the origin the request parked
// at, from a request with room to park: one probe per HoldFor at most
// while it lived, one release per answer its origin gave meanwhile.
func (run *simRun) checkCalls(sr *simReq) {
	atts := slices.Clone(sr.attempts)
	limit := len(sr.cands) + sr.maxRetries
	if len(atts) <= limit {
		return
	}
	if !sr.touched {
		run.violate(sr, "calls-bound", "%d upstream calls, more than %d candidates + %d resends",
			len(atts), len(sr.cands), sr.maxRetries)
		return
	}
	run.tally["requests past the calls bound (probes, releases)"]++
	if sr.deadline.IsZero() && sr.ctxDL.IsZero() || sr.maxRetries < 1 || sr.unkeyed {
		run.violate(sr, "parked-calls", "%d upstream calls, more than %d candidates + %d resends, from a request "+
			"that cannot park (no deadline, no resend or unkeyed)", len(atts), len(sr.cands), sr.maxRetries)
		return
	}
	if run.cfg.nested {
		return // the base numbers the inner's attempts
	}
	slices.SortFunc(atts, func(x, y *simAttempt) int { return x.n - y.n })
	extra := atts[limit:]
	x := extra[0].origin
	for _, a := range extra {
		if a.origin != x {
			run.violate(sr, "parked-calls", "attempts past the bound of %d went to %s and %s: a request parks at one origin",
				limit, x.url, a.origin.url)
			return
		}
	}
	answers := 0
	for _, o := range run.streakLine(run.regOf[sr.tr], x).outs {
		if o.kind.mayAnswer() && !o.settle.Before(sr.start) && !o.settle.After(sr.end) {
			answers++
		}
	}
	holdFor := resolveBudget(sr.pol.Budget).holdFor
	if most := 2 + int(sr.end.Sub(sr.start)/holdFor) + answers; len(extra) > most {
		run.violate(sr, "parked-calls", "%d attempts past the bound of %d to %s in %v: at most one probe per "+
			"HoldFor %v and one release per answer (%d) there", len(extra), limit, x.url, sr.end.Sub(sr.start), holdFor,
			answers)
	}
}

// checkHeldEvents: checkEvents' count of announcements, for a request the
// hold may have acted on. A held resend is announced at its decision and
// may then give up (point 22), so an announcement may have no attempt; but
// every attempt after the first still has one naming its origin, and a
// resend given up leads to the next attempt or the request's end: at most
// one such announcement before each attempt and one at the end.
func (run *simRun) checkHeldEvents(sr *simReq, ann []simEvent) {
	sent := len(sr.attempts) - 1
	if len(ann) < sent || len(ann) > 2*sent+1 {
		run.violate(sr, "one-event-per-attempt", "%d attempts after the first, %d events announcing one "+
			"(the hold may have given resends up)", sent, len(ann))
		return
	}
	byOrigin := map[string]int{}
	for _, e := range ann {
		byOrigin[e.Origin]++
	}
	for _, a := range sr.attempts {
		if a.n >= 2 {
			byOrigin[a.origin.url]--
		}
	}
	for o, n := range byOrigin {
		if n < 0 {
			run.violate(sr, "event-origin", "%d more attempts to %s than events announcing one there", -n, o)
		}
	}
}

// budgetParams are a policy's budget as httpretry resolves it.
type budgetParams struct {
	hold    int // -1: never
	holdFor time.Duration
	window  time.Duration
	percent int
	floor   int // -1: strict
}

func resolveBudget(c httpretry.BudgetConfig) budgetParams {
	p := budgetParams{hold: resolvedHold(c), holdFor: c.HoldFor, window: c.Window, percent: c.Percent,
		floor: c.MinRetries}
	if c.Disabled {
		p.hold = -1
	}
	if p.holdFor <= 0 {
		p.holdFor = time.Second
	}
	if p.window <= 0 {
		p.window = 10 * time.Second
	}
	if p.percent == 0 {
		p.percent = 20
	}
	switch {
	case p.floor == 0:
		p.floor = 10
	case p.floor < 0:
		p.floor = -1
	}
	return p
}

// checkHold checks point 22 at the end of the run.
func (run *simRun) checkHold() {
	for _, sr := range run.reqs {
		for _, e := range sr.events {
			if e.Reason == httpretry.ReasonHold && !sr.touched {
				run.violate(sr, "hold-off", "%s event of attempt %d says hold, where the hold cannot have acted "+
					"(budget %+v)", e.Kind, e.Attempt, sr.pol.Budget)
			}
			if e.Reason == httpretry.ReasonHold {
				run.tally["events with reason hold"]++
			}
		}
	}
	run.tallySamples()
	if run.cfg.scenario == "mixed" {
		run.tally["mixed runs, Hold "+holdName(run.cfg.policies[0].Budget)]++
		if len(run.engagedRegs) > 0 {
			run.tally["mixed runs whose streak may reach Hold"]++
		}
	}
	if op := run.cfg.outage; op != nil {
		run.tallyOutage(op)
		oc := newOutageCheck(run)
		oc.streakSamples()
		if oc.bp.hold >= 1 && !op.ra {
			oc.heldResends()
			oc.onsetBound()
			oc.probeSpacing()
			oc.releasePace()
			oc.parkingClosed()
		}
	}
}

// tallySamples counts what the samples showed: parked requests, streaks.
func (run *simRun) tallySamples() {
	parked, streak := 0, 0
	for _, smp := range run.samples {
		run.tally["samples checked (parked bound)"]++
		parked = max(parked, smp.s.Parked)
		streak = max(streak, smp.s.Streak)
		if smp.s.Parked > 0 {
			run.tally["samples with requests parked"]++
		}
	}
	if parked > 0 {
		run.tally["seeds with requests parked"]++
	}
	if streak > 0 {
		run.tally["seeds with a streak shown"]++
	}
	if op := run.cfg.outage; op != nil && !op.open && parked > 0 {
		run.tally[fmt.Sprintf("outage closed loops of %d parking up to %d", op.workers, parked)]++
	}
}

func holdName(c httpretry.BudgetConfig) string {
	if c.Hold == 0 {
		return "default (2)"
	}
	return fmt.Sprint(c.Hold)
}

func holdForName(c httpretry.BudgetConfig) string {
	if c.HoldFor == 0 {
		return "default (1s)"
	}
	return c.HoldFor.String()
}

// tallyOutage counts an outage run's dimensions.
func (run *simRun) tallyOutage(op *outagePlan) {
	t := run.tally
	t["outage runs"]++
	t["outage kind "+op.kind.String()]++
	if op.open {
		t["outage loop open"]++
	} else {
		t[fmt.Sprintf("outage loop closed, %2d workers", op.workers)]++
	}
	b := run.cfg.policies[0].Budget
	t["outage Hold "+holdName(b)]++
	t["outage HoldFor "+holdForName(b)]++
	switch {
	case b.Disabled:
		t["outage budget disabled"]++
	case b.MinRetries < 0:
		t["outage budget strict"]++
	case b.Percent == 1:
		t["outage budget tiny"]++
	default:
		t["outage budget default floor"]++
	}
	t["outage deadline "+op.deadline]++
	if run.cfg.policies[0].PerTryTimeout > 0 {
		t["outage with PerTryTimeout"]++
	}
	if op.fallback {
		t["outage with a fallback"]++
	}
	if op.ra {
		t["outage with Retry-After"]++
	}
	if op.cancels {
		t["outage with callers that cancel"]++
	}
	if len(op.outages) > 1 {
		t["outage twice"]++
	}
	t["outage requests"] += len(run.reqs)
	for _, sr := range run.reqs {
		// A parked request never outlives its deadline: checked for every
		// request by returns-by-deadline.
		if c := sr.cutBy(); !c.IsZero() {
			t["outage requests with a deadline or a cancel"]++
			if sr.end.Equal(c) {
				t["outage requests that ended at it"]++
			}
		}
	}
	bp := resolveBudget(b)
	if bp.hold < 1 {
		return
	}
	l := run.streakLine(0, run.cfg.origins[0])
	if l.maxHi(run.t0, l.far) >= bp.hold {
		t["outage seeds whose streak may reach Hold"]++
	}
	if len(l.downStretches()) > 0 {
		t["outage seeds certainly down (streak ≥ 2·Hold)"]++
	}
}

// outageCheck is what the outage checks read: the primary's line, its
// samples, the budget and the derived bounds on P and gap₀.
type outageCheck struct {
	run     *simRun
	x       *simOrigin
	l       *streakLine
	bp      budgetParams
	samples []budgetSample         // the primary's, in order
	retries map[*simReq][]simEvent // each request's EventRetry naming the primary
	// pLow and gapLow are lower bounds of P and gap₀: gap₀ is Window ÷
	// the requests in the window, which are never more than rUp.
	pLow, gapLow time.Duration
	rUp          int
}

// violate records a broken invariant of the hold's engine; with the
// engine absent (holdChecks false) it only counts it, so that -v shows
// how often each check reads something before the engine lands.
func (oc *outageCheck) violate(sr *simReq, inv, format string, args ...any) {
	if holdChecks {
		oc.run.violate(sr, inv, format, args...)
		return
	}
	oc.run.tally["hold checks off: "+inv+" would fail"]++
}

func newOutageCheck(run *simRun) *outageCheck {
	x := run.cfg.origins[0]
	oc := &outageCheck{run: run, x: x, l: run.streakLine(0, x), bp: resolveBudget(run.cfg.policies[0].Budget),
		retries: map[*simReq][]simEvent{}}
	for _, smp := range run.samples {
		if smp.reg == 0 && smp.host == x.key {
			oc.samples = append(oc.samples, smp)
		}
	}
	for _, sr := range run.reqs {
		for _, e := range sr.events {
			if e.Kind == httpretry.EventRetry && e.Origin == x.url && !e.body {
				oc.retries[sr] = append(oc.retries[sr], e)
			}
		}
	}
	// Every request's first attempt goes to the primary at its start:
	// the window holds at most the requests started in its span and a
	// slot more.
	var starts []time.Time
	for _, sr := range run.reqs {
		starts = append(starts, sr.start)
	}
	slices.SortFunc(starts, func(a, b time.Time) int { return a.Compare(b) })
	span := oc.bp.window + oc.bp.window/5
	for i, j := 0, 0; i < len(starts); i++ {
		for starts[i].Sub(starts[j]) >= span {
			j++
		}
		oc.rUp = max(oc.rUp, i-j+1)
	}
	oc.rUp += 2
	oc.gapLow = oc.bp.window / time.Duration(oc.rUp)
	oc.pLow = max(oc.bp.holdFor, 10*oc.gapLow)
	return oc
}

// streakSamples: the streak BudgetStats shows is the sim's own count,
// within its bounds, at the end of every instant sampled. With the budget
// disabled the streak is counted only where a record exists anyway.
func (oc *outageCheck) streakSamples() {
	run := oc.run
	if run.cfg.policies[0].Budget.Disabled {
		return
	}
	for _, smp := range oc.samples {
		lo, hi := oc.l.lo(smp.at, true, nil), oc.l.hi(smp.at, false)
		run.tally["samples compared with the sim's streak"]++
		if smp.s.Streak < lo || smp.s.Streak > hi {
			oc.violate(nil, "streak-counted", "%s shows a streak of %d at %v; the attempts there make it %d to %d",
				oc.x.key, smp.s.Streak, smp.at.Sub(run.t0), lo, hi)
			return
		}
	}
}

// prevOf is the attempt of a's request numbered just before it, or nil.
func prevOf(sr *simReq, a *simAttempt) *simAttempt { return sr.byNumber(a.n - 1) }

// isProbeOrRelease reports whether a is certainly a probe or a released
// resend: an attempt to the primary announced at its very start by an
// EventRetry about an earlier attempt, whose request's attempt before it
// came back earlier. A resend is announced at the instant its previous
// attempt came back (its decision) and, if held, starts later; a first
// attempt, a fallback or a copy is not announced by EventRetry; the
// announcement of the resend after a (about a itself) comes at a's start
// when a fails at once. Without Retry-After (the checks that read this
// run only without it) a probe or release starts at its announcement.
func (oc *outageCheck) isProbeOrRelease(a *simAttempt) bool {
	sr := a.req
	if a.n < 2 || a.origin != oc.x {
		return false
	}
	p := prevOf(sr, a)
	if p == nil || !p.back || !p.settled.Before(a.start) {
		return false
	}
	for _, e := range oc.retries[sr] {
		if e.at.Equal(a.start) && e.Attempt < a.n {
			return true
		}
	}
	return false
}

// decision is one resend decided after a failure: its announcement, the
// attempt it follows, and the attempt that went for it, if any.
type decision struct {
	sr   *simReq
	e    simEvent
	own  *simAttempt
	next *simAttempt // nil: given up
}

// decisions are the resends to the primary announced at the instant the
// attempt before them came back; next is the attempt that went for one,
// if the sim can tell it went.
func (oc *outageCheck) decisions() []decision {
	var ds []decision
	for sr, es := range oc.retries {
		for i, e := range es {
			var own *simAttempt
			for _, a := range sr.attempts {
				if a.back && a.settled.Equal(e.at) && (own == nil || a.n > own.n) {
					own = a
				}
			}
			if own == nil {
				continue // a probe or a release
			}
			d := decision{sr: sr, e: e, own: own}
			if next := sr.byNumber(own.n + 1); next != nil && next.origin == oc.x && next.start.After(e.at) {
				// It went, unless another announcement at the primary
				// came before it: a probe or release of a request parked
				// meanwhile. A held resend never starts at its decision
				// (it waits its wait, or listens): an attempt then is a
				// probe of the request parked at once.
				went := true
				for _, f := range es[i+1:] {
					if f.at.After(e.at) && !f.at.After(next.start) && f.Attempt < next.n {
						went = false
					}
				}
				if went {
					d.next = next
				}
			}
			ds = append(ds, d)
		}
	}
	slices.SortFunc(ds, func(x, y decision) int { return x.e.at.Compare(y.e.at) })
	return ds
}

// streakAtDecision is a lower bound of the primary's streak when d was
// decided: the failures counted before its instant and its own, unless
// something at that instant may have been an answer.
func (oc *outageCheck) streakAtDecision(d decision) int {
	t := d.e.at
	for _, o := range oc.l.outs {
		if o.settle.Equal(t) && o.a != d.own && o.kind.mayAnswer() {
			return 0
		}
	}
	n := oc.l.lo(t, false, d.own)
	if d.own.origin == oc.x && oc.run.classify(d.sr, d.own) == ocFail {
		n++
	}
	return n
}

// heldResends: rules 1 to 5 for each resend whose decision the sim can
// read with certainty.
func (oc *outageCheck) heldResends() {
	run, bp, l := oc.run, oc.bp, oc.l
	blind := 0
	for _, d := range oc.decisions() {
		streak := oc.streakAtDecision(d)
		if streak < bp.hold {
			continue
		}
		run.tally["held decisions read with certainty"]++
		if streak >= 2*bp.hold && l.inFlight(d.e.at, d.own) == 0 {
			run.tally["held decisions at a down origin with nothing in flight"]++
			if d.next != nil {
				oc.violate(d.sr, "hold-down-idle", "attempt %d went to %s, down (streak ≥ %d) with nothing in "+
					"flight at its decision at %v: it gives up at once", d.next.n, oc.x.url, streak,
					d.e.at.Sub(run.t0))
			}
			continue
		}
		if d.next == nil {
			run.tally["held resends given up"]++
			continue
		}
		run.tally["held resends that went"]++
		heard, answer := 0, false
		for _, o := range l.outs {
			if o.settle.After(d.next.start) {
				break
			}
			if o.a == d.own || o.settle.Before(d.e.at) {
				continue
			}
			answer = answer || o.kind.mayAnswer()
			if o.kind == ocFail && o.settle.After(d.e.at) && o.settle.Before(d.next.start) {
				heard++
			}
		}
		switch {
		case answer:
			run.tally["held resends that may have heard an answer"]++
		case heard > 0:
			oc.violate(d.sr, "hold-heard-failure", "attempt %d went to %s at %v, held (streak ≥ %d) since its "+
				"decision at %v, after hearing %d failures and no answer", d.next.n, oc.x.url,
				d.next.start.Sub(run.t0), streak, d.e.at.Sub(run.t0), heard)
		default:
			blind++
			run.tally["held resends that went blind (a floor credit)"]++
			if bp.floor < 0 {
				oc.violate(d.sr, "hold-strict-blind", "attempt %d went to %s at %v, held since %v, heard nothing, "+
					"under a strict budget", d.next.n, oc.x.url, d.next.start.Sub(run.t0), d.e.at.Sub(run.t0))
			}
		}
	}
	if bp.floor >= 0 {
		if most := bp.floor + (bp.percent*len(run.reqs)+99)/100 + 1; blind > most {
			oc.violate(nil, "hold-blind-credit", "%d held resends went to %s having heard nothing; the floor "+
				"could fund at most %d", blind, oc.x.url, most)
		}
	}
}

// sampleAt is the primary's last sample at or before t (strictly before
// with strict), or nil.
func (oc *outageCheck) sampleAt(t time.Time, strict bool) *budgetSample {
	var got *budgetSample
	for i := range oc.samples {
		s := &oc.samples[i]
		if s.at.After(t) || strict && s.at.Equal(t) {
			break
		}
		got = s
	}
	return got
}

// stretchEnd is a down stretch's end for counting: its end, or the last
// attempt's start if it never ended.
func (oc *outageCheck) stretchEnd(s [2]time.Time) time.Time {
	if s[1] != oc.l.far {
		return s[1]
	}
	end := s[0]
	for _, a := range oc.l.atts {
		end = later(end, a.start)
	}
	return end
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// onsetBound: once the primary is certainly down, the resends that go
// there (probes and releases aside) are at most one per request in flight
// at the onset (a resend decided before it), those the floor's credit may
// fund (a held resend that heard nothing), and the probes the sim could
// not tell apart. The count form of heldResends, for what it cannot read.
func (oc *outageCheck) onsetBound() {
	run, bp := oc.run, oc.bp
	for _, s := range oc.l.downStretches() {
		from, to := s[0], oc.stretchEnd(s)
		smp := oc.sampleAt(from, false)
		if smp == nil || !smp.at.Equal(from) {
			continue
		}
		resends, arrivals := 0, 0
		for _, a := range oc.l.atts {
			if a.start.Before(from) || !a.start.Before(to) {
				continue
			}
			switch {
			case a.n == 1:
				arrivals++
			case a.start.After(from) && !oc.isProbeOrRelease(a):
				resends++
			}
		}
		credit := 0
		if bp.floor >= 0 {
			credit = bp.floor + (bp.percent*arrivals+99)/100 + 1
		}
		probes := 1 + int(to.Sub(from)/oc.pLow)
		run.tally["down stretches checked (onset bound)"]++
		if most := smp.inRT + credit + probes + 2; resends > most {
			oc.violate(nil, "onset-bound", "%d resends went to %s, down from %v to %v; at most %d: %d requests in "+
				"flight at the onset, %d floor credits, %d probes", resends, oc.x.url, from.Sub(run.t0),
				to.Sub(run.t0), most, smp.inRT, credit, probes)
		}
	}
}

// probeSpacing: a probe goes only when no attempt has started at the
// origin at a streak above 0 for P (rule 9). A probe or release that
// starts while the streak is certainly above 0 is a probe: a failure
// stopped any drain.
func (oc *outageCheck) probeSpacing() {
	run, l := oc.run, oc.l
	for _, a := range l.atts {
		if !oc.isProbeOrRelease(a) {
			continue
		}
		run.tally["probes or releases told apart"]++
		if l.lo(a.start, false, nil) < 1 {
			continue
		}
		run.tally["probes told apart"]++
		for _, b := range l.atts {
			if b == a || !b.start.After(a.start.Add(-oc.pLow)) || !b.start.Before(a.start) {
				continue
			}
			if l.lo(b.start, false, nil) >= 1 {
				oc.violate(a.req, "probe-spacing", "probe %d to %s at %v, %v after attempt %d of request %d started "+
					"there at a streak above 0; P is at least %v", a.n, oc.x.url, a.start.Sub(run.t0),
					a.start.Sub(b.start), b.n, b.req.idx, oc.pLow)
				return
			}
		}
	}
}

// releasePace: after an answer that ends a streak, the drain releases one
// parked request at once and then one per gap₀ (rule 10), beside probes
// one per P at most: counted from each answer that may have ended a
// streak, the probes and releases told apart stay within that pace.
func (oc *outageCheck) releasePace() {
	run, l := oc.run, oc.l
	var ends []time.Time
	for _, o := range l.outs {
		if o.kind.mayAnswer() && l.hi(o.settle, true) >= 1 && (len(ends) == 0 || o.settle.After(ends[len(ends)-1])) {
			ends = append(ends, o.settle)
		}
	}
	var prs []*simAttempt
	for _, a := range l.atts {
		if oc.isProbeOrRelease(a) {
			prs = append(prs, a)
		}
	}
	for i, a := range prs {
		from := run.t0
		for _, e := range ends {
			if !e.After(a.start) {
				from = e
			}
		}
		n := 0
		for _, b := range prs[:i+1] {
			if !b.start.Before(from) {
				n++
			}
		}
		d := a.start.Sub(from)
		run.tally["release-pace checks"]++
		if most := 3 + int(d/oc.gapLow) + int(d/oc.pLow); n > most {
			oc.violate(a.req, "release-pace", "%d probes or releases to %s in the %v after %v; at most %d at one "+
				"release per gap₀ (at least %v) and one probe per P (at least %v)", n, oc.x.url, d,
				from.Sub(run.t0), most, oc.gapLow, oc.pLow)
			return
		}
	}
}

// parkingClosed: an arrival at a down origin with parked requests and no
// token closes its parking (rule 7): no request parks there until an
// answer but those whose probe or release was in flight. Tokens come only
// from the ends of parked requests, so from the returns of requests that
// could park, since the last answer that certainly ended a streak; each
// arrival that certainly found requests parked takes one or closes the
// parking. Once more such arrivals came than tokens may have been
// granted, the parking is closed, and until the next outcome that may be
// an answer no more requests are parked than had an attempt in flight at
// one of those arrivals and still run.
func (oc *outageCheck) parkingClosed() {
	run, l := oc.run, oc.l
	for _, s := range l.downStretches() {
		from, to := s[0], s[1]
		cleared := run.t0
		for _, o := range l.outs {
			if !o.settle.Before(from) {
				break
			}
			if o.kind == ocAnswer && l.lo(o.settle, false, o.a) >= 1 {
				cleared = o.settle
			}
		}
		var arrivals []time.Time
		for _, a := range l.atts {
			if a.n == 1 && a.start.After(from) && a.start.Before(to) &&
				(len(arrivals) == 0 || a.start.After(arrivals[len(arrivals)-1])) {
				arrivals = append(arrivals, a.start)
			}
		}
		found := 0
		flight := map[*simReq]bool{}
		for _, at := range arrivals {
			run.tally["arrival instants at a down origin"]++
			smp := oc.sampleAt(at, true)
			if smp == nil || smp.s.Parked <= oc.leaving(at) {
				continue
			}
			found++
			run.tally["arrival instants that found requests parked"]++
			for _, a := range run.attempts {
				if a.req != nil && !a.start.After(at) && (!a.back || !a.settled.Before(at)) {
					flight[a.req] = true
				}
			}
			if found <= oc.grants(cleared, at) {
				continue
			}
			run.tally["parkings certainly closed"]++
			oc.closedSince(at, to, flight)
			break
		}
	}
}

// leaving counts what may take a request out of the primary's queue at
// instant t before an arrival reads it: a return, an attempt after a
// first (a probe or a release).
func (oc *outageCheck) leaving(t time.Time) int {
	n := 0
	for _, sr := range oc.run.reqs {
		if sr.returned && sr.end.Equal(t) {
			n++
		}
	}
	for _, a := range oc.l.atts {
		if a.n >= 2 && a.start.Equal(t) {
			n++
		}
	}
	return n
}

// grants bounds the tokens granted from since to t: the returns of
// requests that could park.
func (oc *outageCheck) grants(since, t time.Time) int {
	n := 0
	for _, sr := range oc.run.reqs {
		if sr.returned && !sr.end.Before(since) && !sr.end.After(t) && (!sr.deadline.IsZero() || !sr.ctxDL.IsZero()) {
			n++
		}
	}
	return n
}

// closedSince checks the samples from the instant the parking closed,
// at, to the next outcome that may be an answer, to.
func (oc *outageCheck) closedSince(at, to time.Time, flight map[*simReq]bool) {
	run := oc.run
	for _, smp := range oc.samples {
		if smp.at.Before(at) || !smp.at.Before(to) {
			continue
		}
		run.tally["samples checked after a parking closed"]++
		may := 0
		for sr := range flight {
			if !sr.returned || sr.end.After(smp.at) {
				may++
			}
		}
		if smp.s.Parked > may {
			oc.violate(nil, "parking-closed", "%s has %d requests parked at %v; its parking closed at %v (an "+
				"arrival found requests parked and no token), and only %d requests in flight then still run",
				oc.x.key, smp.s.Parked, smp.at.Sub(run.t0), at.Sub(run.t0), may)
			return
		}
	}
}

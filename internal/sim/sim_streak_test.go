package sim_test

import (
	"net/http"
	"slices"
	"time"

	"github.com/httpretry/httpretry"
)

// The sim's own count of an origin's streak (point 22): failed attempts in
// a row, 0 after any answer, in the order attempts complete, per origin
// record (one per origin in each Budgets). It reads the base's record of
// attempts; where it cannot tell what an attempt's outcome counted for, or
// in which order outcomes at one instant were counted, it keeps a lower
// and an upper bound, so that what it says is certain.

// ocKind is what an attempt's outcome did to its origin's streak, as far
// as the sim can tell.
type ocKind uint8

const (
	ocNone      ocKind = iota // certainly nothing: a 429
	ocFail                    // certainly a failure
	ocAnswer                  // certainly an answer
	ocMaybeFail               // a failure or nothing: an attempt that something may have ended from outside
	ocAny                     // an answer, a failure or nothing
)

func (k ocKind) mayFail() bool   { return k == ocFail || k == ocMaybeFail || k == ocAny }
func (k ocKind) mayAnswer() bool { return k == ocAnswer || k == ocAny }

// outcomeRec is one attempt's outcome on its origin's line.
type outcomeRec struct {
	a      *simAttempt
	settle time.Time // when the base returned
	// late is the latest instant its verdict may have been counted: the
	// settle itself, or, where a hedged round or an observer may hold it
	// back, the request's end.
	late time.Time
	kind ocKind
}

// streakLine is one origin's attempts in one registry.
type streakLine struct {
	run  *simRun
	reg  int // the registry
	o    *simOrigin
	hold int           // the resolved Hold of its policies; -1: they never hold
	outs []outcomeRec  // those settled, by settle
	atts []*simAttempt // all, by start: for what was in flight
	far  time.Time     // a late that never comes: the request still runs
	// prompt says every outcome was counted at its settle (no late): then
	// hi and lo read the prefix counts below, in O(log n).
	prompt     bool
	mayFails   []int       // mayFails[i]: outcomes that may be failures among outs[:i]
	fails      []int       // fails[i]: certain failures among outs[:i]
	answers    []time.Time // the settles of certain answers, in order
	mayAnswers []int       // the indexes in outs of outcomes that may be answers
}

// resolvedHold is c's Hold as httpretry reads it: 0 is 2, negative -1.
func resolvedHold(c httpretry.BudgetConfig) int {
	switch {
	case c.Hold == 0:
		return 2
	case c.Hold < 0:
		return -1
	}
	return c.Hold
}

// classify tells what a, an attempt of sr that came back, counted for.
func (run *simRun) classify(sr *simReq, a *simAttempt) ocKind {
	if sr == nil || run.cfg.nested || sr.panicked {
		// Nested, the outer judges the inner's outcome, not the base's.
		return ocAny
	}
	cut := sr.possiblyCut(a)
	through := sr.passesThrough() // not counted at all
	switch {
	case a.status != 0 && !a.broke: // an answer cut before it was whole is a transport error (point 24)
		switch {
		case a.status == http.StatusTooManyRequests:
			if cut {
				return ocMaybeFail
			}
			return ocNone
		case sr.retried(a.status):
			if cut || through {
				return ocMaybeFail
			}
			return ocFail
		case cut || through:
			return ocAny
		}
		return ocAnswer
	case through:
		return ocMaybeFail
	case !a.ctxDone && !cut:
		return ocFail // refused, reset: the base's own error
	case run.cutByPerTry(sr, a):
		return ocFail
	}
	return ocMaybeFail
}

// cutByPerTry reports whether a, which ended with its context, was
// certainly cut by PerTryTimeout: it ended exactly then, and nothing else
// could end it then (no hedging, the request's own bounds later).
func (run *simRun) cutByPerTry(sr *simReq, a *simAttempt) bool {
	pt := sr.pol.PerTryTimeout
	if pt <= 0 || sr.pol.Hedge != (httpretry.Hedge{}) || !a.settled.Equal(a.start.Add(pt)) {
		return false
	}
	c := sr.cutBy()
	return c.IsZero() || c.After(a.settled)
}

// delays reports whether the run may count an outcome of sr after the base
// returned it: a hedged round judges its losers when it ends, and an
// observer that sleeps or panics sits between an outcome and what follows.
func (run *simRun) delays(sr *simReq) bool {
	return sr.pol.Hedge != (httpretry.Hedge{}) || run.cfg.sleepOn != nil || run.cfg.panicOn != nil
}

// streakLine builds the line of origin o in registry reg from what the
// base has seen so far.
func (run *simRun) streakLine(reg int, o *simOrigin) *streakLine {
	l := &streakLine{run: run, o: o, reg: reg, far: run.t0.Add(1000 * time.Hour), hold: -1}
	for tr, r := range run.regOf {
		if r == reg && holds(run.cfg.policies[tr].Budget) {
			l.hold = max(l.hold, resolvedHold(run.cfg.policies[tr].Budget))
		}
	}
	run.mu.Lock()
	defer run.mu.Unlock()
	for _, a := range run.attempts {
		sr := a.req
		if sr == nil || a.origin != o || run.regOf[sr.tr] != reg {
			continue
		}
		l.atts = append(l.atts, a)
		if !a.back {
			continue
		}
		late := a.settled
		if run.delays(sr) {
			late = l.far
			if sr.returned {
				late = sr.end
			}
		}
		l.outs = append(l.outs, outcomeRec{a: a, settle: a.settled, late: late, kind: run.classify(sr, a)})
	}
	slices.SortStableFunc(l.atts, func(x, y *simAttempt) int { return x.start.Compare(y.start) })
	slices.SortStableFunc(l.outs, func(x, y outcomeRec) int { return x.settle.Compare(y.settle) })
	l.index()
	return l
}

// index makes the prefix counts of l.outs.
func (l *streakLine) index() {
	l.prompt = true
	l.mayFails, l.fails = make([]int, len(l.outs)+1), make([]int, len(l.outs)+1)
	for i, o := range l.outs {
		l.prompt = l.prompt && o.late.Equal(o.settle)
		l.mayFails[i+1], l.fails[i+1] = l.mayFails[i], l.fails[i]
		if o.kind.mayFail() {
			l.mayFails[i+1]++
		}
		if o.kind == ocFail {
			l.fails[i+1]++
		}
		if o.kind == ocAnswer {
			l.answers = append(l.answers, o.settle)
		}
		if o.kind.mayAnswer() {
			l.mayAnswers = append(l.mayAnswers, i)
		}
	}
}

// upTo is how many outcomes settled by t (before t with strict).
func (l *streakLine) upTo(t time.Time, strict bool) int {
	i, _ := slices.BinarySearchFunc(l.outs, t, func(o outcomeRec, t time.Time) int {
		if c := o.settle.Compare(t); c != 0 || strict {
			return c
		}
		return -1
	})
	return i
}

// hi is an upper bound of the streak at the end of instant t: the
// outcomes that may be failures and may have been counted after the
// latest answer certainly counted by t. With strict, only answers counted
// before t are read: the streak just before something at t.
func (l *streakLine) hi(t time.Time, strict bool) int {
	if l.prompt {
		n := l.mayFails[l.upTo(t, false)]
		if k := l.countAnswers(t, strict); k > 0 {
			n -= l.mayFails[l.upTo(l.answers[k-1], true)]
		}
		return n
	}
	var sA time.Time
	found := false
	for _, o := range l.outs {
		if o.settle.After(t) {
			break
		}
		if o.kind == ocAnswer && (o.late.Before(t) || !strict && o.late.Equal(t)) && (!found || o.settle.After(sA)) {
			sA, found = o.settle, true
		}
	}
	n := 0
	for _, o := range l.outs {
		if o.settle.After(t) {
			break
		}
		if o.kind.mayFail() && (!found || !o.late.Before(sA)) {
			n++
		}
	}
	return n
}

// lo is a lower bound of the streak: the failures certainly counted
// before t (by the end of t with incl) and certainly after every outcome
// settled by t that may be an answer, except is not read.
func (l *streakLine) lo(t time.Time, incl bool, except *simAttempt) int {
	if l.prompt {
		end := l.upTo(t, !incl) // the failures counted by then
		from := 0               // those after the latest outcome that may be an answer
		k, _ := slices.BinarySearchFunc(l.mayAnswers, t, func(i int, t time.Time) int {
			if l.outs[i].settle.After(t) {
				return 1
			}
			return -1
		})
		for k > 0 && l.outs[l.mayAnswers[k-1]].a == except {
			k--
		}
		if k > 0 {
			from = l.upTo(l.outs[l.mayAnswers[k-1]].settle, false)
		}
		return max(l.fails[end]-l.fails[min(from, end)], 0)
	}
	var L time.Time
	found := false
	for _, o := range l.outs {
		if o.settle.After(t) {
			break
		}
		if o.kind.mayAnswer() && o.a != except && (!found || o.late.After(L)) {
			L, found = o.late, true
		}
	}
	n := 0
	for _, o := range l.outs {
		if o.settle.After(t) {
			break
		}
		counted := o.late.Before(t) || incl && o.late.Equal(t)
		if o.kind == ocFail && counted && (!found || o.settle.After(L)) {
			n++
		}
	}
	return n
}

// countAnswers is how many certain answers settled by t (before t with
// strict).
func (l *streakLine) countAnswers(t time.Time, strict bool) int {
	k, _ := slices.BinarySearchFunc(l.answers, t, func(a, t time.Time) int {
		if c := a.Compare(t); c != 0 || strict {
			return c
		}
		return -1
	})
	return k
}

// maxHi is an upper bound of the streak over [from, to].
func (l *streakLine) maxHi(from, to time.Time) int {
	// The streak rises between the answers that reset it: its highest
	// values come just before each answer counted in the span, and at
	// its end.
	best := max(l.hi(from, true), l.hi(to, true))
	for _, o := range l.outs {
		if o.settle.After(to) {
			break
		}
		if o.kind == ocAnswer && o.late.After(from) && !o.late.After(to) {
			best = max(best, l.hi(o.late, true))
		}
	}
	return best
}

// coarseHi bounds maxHi cheaply: every outcome that may be a failure,
// settled by to and possibly counted after the latest answer certainly
// counted before from.
func (l *streakLine) coarseHi(from, to time.Time) int {
	var sA time.Time
	found := false
	for _, o := range l.outs {
		if o.settle.After(from) {
			break
		}
		if o.kind == ocAnswer && o.late.Before(from) && (!found || o.settle.After(sA)) {
			sA, found = o.settle, true
		}
	}
	n := 0
	for _, o := range l.outs {
		if o.settle.After(to) {
			break
		}
		if o.kind.mayFail() && (!found || !o.late.Before(sA)) {
			n++
		}
	}
	return n
}

// inFlight counts the attempts other than except that were in flight at
// some moment of instant t: started by its end, not returned before it.
func (l *streakLine) inFlight(t time.Time, except *simAttempt) int {
	n := 0
	for _, a := range l.atts {
		if a.start.After(t) {
			break
		}
		if a != except && (!a.back || !a.settled.Before(t)) {
			n++
		}
	}
	return n
}

// downStretches are the spans [from, to) in which the origin was
// certainly down (a streak of at least 2·Hold counted at the end of every
// instant): from the instant it certainly became down to the first
// outcome after it that may be an answer.
func (l *streakLine) downStretches() [][2]time.Time {
	if l.hold < 1 {
		return nil
	}
	var out [][2]time.Time
	var from time.Time
	in := false
	for i, o := range l.outs {
		if i+1 < len(l.outs) && l.outs[i+1].settle.Equal(o.settle) {
			continue // at the last outcome of each instant
		}
		switch {
		case in:
			if l.lo(o.settle, true, nil) < 2*l.hold {
				out = append(out, [2]time.Time{from, o.settle})
				in = false
			}
		case l.lo(o.settle, true, nil) >= 2*l.hold:
			from, in = o.settle, true
		}
	}
	if in {
		out = append(out, [2]time.Time{from, l.far})
	}
	return out
}

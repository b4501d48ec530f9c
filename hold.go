package httpretry

import (
	"context"
	"time"
)

// A held resend (DESIGN point 22, rules 1 to 5). A client cannot tell the
// first failure of an outage from a blip, so the first resend goes as
// before; after Hold failures in a row a resend waits for evidence: the
// outcome of another attempt to the origin that completes after it was
// decided. An answer heard means it goes when its wait ends; failures
// heard mean it gives up; silence where an attempt could have spoken
// means it decides blind, which costs a whole floor credit.

// held is a resend held at its decision: what it noted of its origin then.
type held struct {
	rec     *originRecord
	resets  int64 // the origin's resets at the decision
	streak  int64 // and its streak, the failure the resend follows included
	hold    int64
	holdFor time.Duration
	decided time.Time
	gap     time.Duration
}

// holdVerdict is how a held resend's wait ends.
type holdVerdict uint8

const (
	holdGo       holdVerdict = iota // an answer heard, or a blind decision the floor paid
	holdGiveUp                      // failures heard, or a blind decision the floor could not pay
	holdBlind                       // silence: decide at once (rule 5)
	holdDeadline                    // the wait reached the deadline
)

// holds reports whether a resend to rec's origin, decided at now, is held,
// and what it notes: the budget is enabled (rec is its record), Hold is at
// least 1, and the origin's streak is at least Hold.
func holds(rec *originRecord, now time.Time) (held, bool) {
	if rec == nil {
		return held{}, false
	}
	p := rec.budget.loadParams()
	streak := rec.out.streak.Load()
	if p.hold == 0 || streak < p.hold {
		return held{}, false
	}
	return held{rec: rec, resets: rec.out.resets.Load(), streak: streak, hold: p.hold,
		holdFor: p.holdFor, decided: now}, true
}

// giveUpAtOnce reports rule 1: the origin is down and nothing is in flight
// to bring evidence.
func (h *held) giveUpAtOnce() bool {
	return h.rec.out.streak.Load() >= 2*h.hold && h.rec.out.inflight.Load() == 0
}

// heard is what the origin said since the decision: an answer, or how many
// failures.
func (h *held) heard() (answer bool, failures int64) {
	if h.rec.out.resets.Load() != h.resets {
		return true, 0
	}
	return false, max(h.rec.out.streak.Load()-h.streak, 0)
}

// await waits the resend's wait d from its decision, hearing the origin,
// and then for evidence as rules 2 to 4 say, never past deadline (zero:
// none). It returns at once when ctx ends, with its error.
func (h *held) await(ctx context.Context, d time.Duration, deadline time.Time) (holdVerdict, error) {
	o := &h.rec.out
	h.gap = h.rec.budget.gap(h.decided)
	waitEnd := h.decided.Add(d)
	hardEnd := waitEnd.Add(h.holdFor)
	listenFrom, listening := h.decided, true
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		if err := ctx.Err(); err != nil {
			return 0, err // observers may have taken the time: ended before it began
		}
		ch := o.watch()
		now := time.Now()
		answer, failures := h.heard()
		if !answer && failures >= 2*h.hold {
			return holdGiveUp, nil // rule 2: the origin kept failing
		}
		until := waitEnd
		if inflight := o.inflight.Load(); inflight > 0 {
			listening = false
		} else if !listening {
			listening, listenFrom = true, now // in flight fell to 0 with no outcome
		}
		if !now.Before(waitEnd) {
			switch {
			case answer:
				return holdGo, nil
			case failures > 0:
				return holdGiveUp, nil
			case !now.Before(hardEnd):
				return holdBlind, nil
			case listening:
				until = maxTime(waitEnd, listenFrom.Add(4*h.gap))
				if hardEnd.Before(until) {
					until = hardEnd
				}
				if !now.Before(until) {
					return holdBlind, nil
				}
			default:
				until = hardEnd
			}
		}
		if !deadline.IsZero() && !until.Before(deadline) {
			if !now.Before(deadline) {
				return holdDeadline, nil
			}
			until = deadline
		}
		timer.Reset(until.Sub(now))
		select {
		case <-ch:
		case <-timer.C:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
}

// maxTime is the later of a and b.
func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

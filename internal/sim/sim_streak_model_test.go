package sim_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// testLine is a streak line of outcomes given as (milliseconds, kind),
// each counted at its settle, with its prefix counts.
func testLine(outs ...any) *streakLine {
	t0 := time.Unix(0, 0)
	l := &streakLine{run: &simRun{t0: t0}, hold: 1, far: t0.Add(time.Hour), prompt: true}
	for i := 0; i < len(outs); i += 2 {
		at := t0.Add(time.Duration(outs[i].(int)) * time.Millisecond)
		a := &simAttempt{start: at, settled: at, back: true}
		l.outs = append(l.outs, outcomeRec{a: a, settle: at, late: at, kind: outs[i+1].(ocKind)})
		l.atts = append(l.atts, a)
	}
	l.index()
	return l
}

func ms(n int) time.Time { return time.Unix(0, 0).Add(time.Duration(n) * time.Millisecond) }

// TestStreakBounds: the sim's bounds on a streak read failures after the
// latest answer, and what it cannot order at one instant widens them.
func TestStreakBounds(t *testing.T) {
	l := testLine(10, ocFail, 20, ocFail, 30, ocAnswer, 40, ocFail, 50, ocMaybeFail, 60, ocFail, 60, ocAnswer)
	for _, c := range []struct {
		at     int
		lo, hi int
	}{
		{5, 0, 0}, {10, 1, 1}, {20, 2, 2}, {30, 0, 0}, {40, 1, 1}, {50, 1, 2},
		// At 60 a failure and an answer, in an order the sim cannot tell.
		{60, 0, 1},
	} {
		assert.Equal(t, c.lo, l.lo(ms(c.at), true, nil), "lo at %d", c.at)
		assert.Equal(t, c.hi, l.hi(ms(c.at), false), "hi at %d", c.at)
	}
	// Just before 30, two failures; at 30 itself, before the answer is
	// read, a decision may see them.
	assert.Equal(t, 2, l.hi(ms(30), true))
	assert.Equal(t, 0, l.lo(ms(30), false, nil), "an answer at the instant: nothing certain")
	assert.Equal(t, 2, l.lo(ms(30), false, l.outs[2].a), "the answer itself set aside")
	assert.Equal(t, 2, l.maxHi(ms(0), ms(35)))
	assert.Equal(t, 3, l.maxHi(ms(35), ms(100)))
}

// TestStreakDownStretches: the stretches in which a streak of 2·Hold is
// certain end at the first outcome that may be an answer.
func TestStreakDownStretches(t *testing.T) {
	l := testLine(10, ocFail, 20, ocFail, 30, ocMaybeFail, 40, ocAny, 50, ocFail, 60, ocFail, 70, ocFail)
	l.hold = 1
	assert.Equal(t, [][2]time.Time{{ms(20), ms(40)}, {ms(60), l.far}}, l.downStretches())
}

// TestStreakLineFast: the prefix counts give what the plain scans give.
func TestStreakLineFast(t *testing.T) {
	kinds := []ocKind{ocNone, ocFail, ocFail, ocFail, ocAnswer, ocMaybeFail, ocAny}
	for seed := range uint64(200) {
		r := rand.New(rand.NewPCG(seed, 1))
		var outs []any
		at := 0
		for range r.IntN(40) {
			at += r.IntN(3) // often several at one instant
			outs = append(outs, at, kinds[r.IntN(len(kinds))])
		}
		fast := testLine(outs...)
		slow := *fast
		slow.prompt = false
		for q := -1; q <= at+1; q++ {
			var except *simAttempt
			if len(fast.outs) > 0 && r.IntN(3) == 0 {
				except = fast.outs[r.IntN(len(fast.outs))].a
			}
			for _, b := range []bool{false, true} {
				if !assert.Equal(t, slow.hi(ms(q), b), fast.hi(ms(q), b), "seed %d hi(%d, %v)", seed, q, b) ||
					!assert.Equal(t, slow.lo(ms(q), b, except), fast.lo(ms(q), b, except), "seed %d lo(%d, %v)", seed, q, b) {
					return
				}
			}
		}
	}
}

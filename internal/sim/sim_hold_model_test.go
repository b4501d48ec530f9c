package sim_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/httpretry/httpretry"
	"github.com/httpretry/httpretry/internal/fakeorigin"
	"github.com/stretchr/testify/assert"
)

// The point-22 checks on runs built by hand, each as an engine that keeps
// the contract would make it and as one that breaks it: the checks pass
// the first and name the second, whatever engine the sim runs against.

// synth builds an outage run of the primary by hand, in milliseconds.
type synth struct {
	run *simRun
	x   *simOrigin
}

// newSynth is a run under Hold hold, strict (no floor) unless floor.
func newSynth(t *testing.T, hold int, floor bool) *synth {
	old := holdChecks
	holdChecks = true
	t.Cleanup(func() { holdChecks = old })
	cfg := &runConfig{scenario: "outage", origins: healthyOrigins(), outage: &outagePlan{open: true}}
	cfg.policies = []httpretry.Policy{{MaxRetries: 5, Budget: httpretry.BudgetConfig{Hold: hold,
		HoldFor: 100 * time.Millisecond, Window: time.Second, MinRetries: -1}}}
	if floor {
		cfg.policies[0].Budget.MinRetries = 0
	}
	run := &simRun{cfg: cfg, t0: ms(0), regOf: []int{0}, tally: map[string]int{}, shown: map[sampleKey][2]int{}}
	return &synth{run: run, x: cfg.origins[0]}
}

// req is a request started at start, with a context deadline at dl (0:
// none).
func (s *synth) req(start, dl int) *simReq {
	sr := &simReq{idx: len(s.run.reqs), pol: s.run.cfg.policies[0], own: s.x, cands: []*simOrigin{s.x},
		maxRetries: 5, start: ms(start), returned: true, end: ms(100000)}
	if dl > 0 {
		sr.ctxDL = ms(dl)
	}
	s.run.reqs = append(s.run.reqs, sr)
	return sr
}

// att is attempt n of sr from start to settle: "refuse", "503" or "ok".
func (s *synth) att(sr *simReq, n, start, settle int, what string) *simAttempt {
	a := &simAttempt{req: sr, n: n, origin: s.x, start: ms(start), settled: ms(settle), back: true}
	switch what {
	case "refuse":
		a.err = fakeorigin.RefusedError()
	case "503":
		a.status = http.StatusServiceUnavailable
	case "ok":
		a.status = http.StatusOK
	}
	sr.attempts = append(sr.attempts, a)
	s.run.attempts = append(s.run.attempts, a)
	return a
}

// retry is an EventRetry of sr at at, about attempt n, naming the primary.
func (s *synth) retry(sr *simReq, at, n int) {
	sr.events = append(sr.events, simEvent{at: ms(at),
		Event: httpretry.Event{Kind: httpretry.EventRetry, Attempt: n, Origin: s.x.url}})
}

// sample is the primary's BudgetStats at the end of instant at.
func (s *synth) sample(at, streak, parked int) {
	s.run.samples = append(s.run.samples, budgetSample{at: ms(at), sampleKey: sampleKey{0, s.x.key},
		s: httpretry.BudgetStats{Streak: streak, Parked: parked}})
}

func (s *synth) invariants() []string {
	var got []string
	for _, v := range s.run.violations {
		got = append(got, v.inv)
	}
	return got
}

// TestHoldCheckDownIdle: a resend to a down origin with nothing in flight
// gives up at once (rule 1); an attempt at that very instant is the probe
// of the request parked then.
func TestHoldCheckDownIdle(t *testing.T) {
	for _, c := range []struct {
		third int
		want  []string
	}{{30, []string{"hold-down-idle"}}, {10, nil}} {
		s := newSynth(t, 1, true) // the second attempt goes blind, on a floor credit
		r := s.req(0, 0)
		s.att(r, 1, 0, 0, "refuse")
		s.retry(r, 0, 1)
		s.att(r, 2, 10, 10, "refuse")
		s.retry(r, 10, 2)
		if c.third == 10 {
			s.retry(r, 10, 2) // the probe's own
		}
		s.att(r, 3, c.third, c.third, "refuse")
		newOutageCheck(s.run).heldResends()
		assert.Equal(t, c.want, s.invariants(), "third attempt at %d", c.third)
	}
}

// TestHoldCheckHeard: a held resend that heard a failure and no answer
// does not go (rules 2, 4); one that heard an answer goes.
func TestHoldCheckHeard(t *testing.T) {
	for _, c := range []struct {
		other string
		want  []string
	}{{"503", []string{"hold-heard-failure"}}, {"ok", nil}} {
		s := newSynth(t, 1, false)
		r := s.req(0, 0)
		s.att(r, 1, 0, 0, "503")
		s.retry(r, 0, 1)
		o := s.req(15, 0)
		s.att(o, 1, 15, 20, c.other)
		s.att(r, 2, 50, 60, "ok")
		newOutageCheck(s.run).heldResends()
		assert.Equal(t, c.want, s.invariants(), "another attempt's %s heard", c.other)
	}
}

// TestHoldCheckStrictBlind: a held resend that heard nothing goes only on
// a floor credit, never under a strict budget (rule 5).
func TestHoldCheckStrictBlind(t *testing.T) {
	s := newSynth(t, 1, false)
	r := s.req(0, 0)
	s.att(r, 1, 0, 0, "503")
	s.retry(r, 0, 1)
	s.att(r, 2, 1100, 1110, "ok")
	newOutageCheck(s.run).heldResends()
	assert.Equal(t, []string{"hold-strict-blind"}, s.invariants())
}

// TestHoldCheckProbeSpacing: no probe within P of an attempt started at
// a streak above 0 (rule 9).
func TestHoldCheckProbeSpacing(t *testing.T) {
	for _, c := range []struct {
		probe int
		want  []string
	}{{500, []string{"probe-spacing"}}, {4000, nil}} {
		s := newSynth(t, 1, false)
		r := s.req(0, 60000)
		s.att(r, 1, 0, 0, "refuse")
		s.retry(r, 0, 1)
		s.att(r, 2, 10, 10, "refuse")
		s.retry(r, c.probe, 2)
		s.att(r, 3, c.probe, c.probe, "refuse")
		oc := newOutageCheck(s.run)
		assert.Equal(t, 10*(time.Second/3), oc.pLow, "P at least 10 × Window ÷ (1 request + 2)")
		oc.probeSpacing()
		assert.Equal(t, c.want, s.invariants(), "probe at %d", c.probe)
	}
}

// TestHoldCheckReleasePace: after an answer that ends a streak, releases
// come one per gap₀ (rule 10).
func TestHoldCheckReleasePace(t *testing.T) {
	for _, c := range []struct {
		every int
		want  []string
	}{{1, []string{"release-pace"}}, {150, nil}} {
		s := newSynth(t, 1, false)
		p := s.req(0, 60000)
		s.att(p, 1, 0, 0, "refuse")
		s.att(p, 2, 10, 10, "refuse")
		s.retry(p, 5000, 2)
		s.att(p, 3, 5000, 5000, "ok") // the probe that ends the streak
		for i := range 5 {
			r := s.req(1+i, 60000)
			s.att(r, 1, 1+i, 1+i, "refuse")
			at := 5000 + i*c.every
			s.retry(r, at, 1)
			s.att(r, 2, at, at+10, "ok")
		}
		oc := newOutageCheck(s.run)
		oc.releasePace()
		assert.Equal(t, c.want, s.invariants(), "a release every %d ms (gap₀ at least %v)", c.every, oc.gapLow)
	}
}

// TestHoldCheckParkingClosed: an arrival at a down origin that finds
// requests parked and no token closes the parking (rule 7).
func TestHoldCheckParkingClosed(t *testing.T) {
	for _, c := range []struct {
		after int
		want  []string
	}{{3, []string{"parking-closed"}}, {1, nil}, {0, nil}} {
		s := newSynth(t, 1, false)
		for i := range 2 {
			r := s.req(i, 60000)
			r.returned = false
			s.att(r, 1, i, i, "refuse")
		}
		s.sample(1, 2, 2)
		a := s.req(100, 60000)
		a.returned = false
		s.att(a, 1, 100, 100, "refuse")
		s.sample(150, 3, c.after)
		newOutageCheck(s.run).parkingClosed()
		assert.Equal(t, c.want, s.invariants(), "%d parked after the arrival", c.after)
	}
}

// TestHoldCheckParkedBound: an origin never has more requests parked than
// may be parked there, and none where its policies never hold.
func TestHoldCheckParkedBound(t *testing.T) {
	for _, c := range []struct {
		hold, parked, idle int
		want               []string
	}{{1, 2, 2, nil}, {1, 3, 2, []string{"parked-bound"}}, {-1, 1, 2, []string{"hold-off"}}} {
		s := newSynth(t, c.hold, false)
		s.run.checkSample(budgetSample{at: ms(10), sampleKey: sampleKey{0, s.x.key},
			s: httpretry.BudgetStats{Parked: c.parked}, inRT: 5, idle: c.idle})
		assert.Equal(t, c.want, s.invariants(), "%+v", c)
	}
}

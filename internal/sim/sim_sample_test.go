package sim_test

import (
	"flag"
	"io"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/httpretry/httpretry"
	"github.com/httpretry/httpretry/internal/fakeorigin"
)

// The quiescent sampler: a goroutine of the run's bubble that, whenever
// the base sees an attempt start or end and whenever a request enters or
// leaves RoundTrip (and every sampleEvery besides), waits until every
// other goroutine of the bubble is durably blocked and then reads every
// origin's BudgetStats. Each sample is the state at the end of a virtual
// instant, when nothing else can happen at it: what point 22 adds to the
// records (the streak, the parked requests) is compared there with what
// the run had in flight (sim_hold_check_test.go).

// sampleEvery bounds the virtual time between two samples: parking may
// change on timers of httpretry's own, which the sim does not see.
const sampleEvery = 50 * time.Millisecond

var simHold = flag.String("sim.hold", "auto", "simulator: check point 22's hold and parking: "+
	"on, off, or auto (on once BudgetStats.Streak counts)")

// holdChecks says whether the run's point-22 checks that need the hold's
// engine are on: those that would fail on an httpretry that only resolves
// Hold (streaks compared, held resends, probes, drains, parking closed).
// Those that hold of any httpretry (parked requests bounded, nothing held
// or parked under Hold -1) are always on. TestSimulate sets it once.
var holdChecks bool

// sampleKey names an origin in one of the run's registries.
type sampleKey struct {
	reg  int
	host string
}

// budgetSample is one origin's BudgetStats in one registry at the end of
// a virtual instant, beside what the run had in flight then.
type budgetSample struct {
	at time.Time
	sampleKey
	s httpretry.BudgetStats
	// inRT is the requests inside RoundTrip on the registry's transports
	// with the origin among their candidates; idle, those of them that
	// may be parked there: with room (a deadline not passed), a resend
	// allowed, not an unkeyed POST or PATCH, and no attempt in flight.
	inRT, idle int
}

type sampler struct {
	kick chan struct{}
	stop chan struct{}
	done chan struct{}
}

// startSampler starts the run's sampler in the current bubble.
func (run *simRun) startSampler() {
	run.smp = &sampler{kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go run.sampleLoop()
}

// kickSampler asks for a sample at the end of the current instant.
func (run *simRun) kickSampler() {
	if s := run.smp; s != nil {
		select {
		case s.kick <- struct{}{}:
		default:
		}
	}
}

// stopSampler ends the sampler, before the run's own synctest.Wait: two
// goroutines of a bubble may not wait at once.
func (run *simRun) stopSampler() {
	close(run.smp.stop)
	<-run.smp.done
	run.smp = nil
}

func (run *simRun) sampleLoop() {
	s := run.smp
	defer close(s.done)
	tick := time.NewTicker(sampleEvery)
	defer tick.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-s.kick:
		case <-tick.C:
		}
		synctest.Wait()
		run.sample()
	}
}

// sample records every origin's BudgetStats now, with what was in flight,
// and checks at once what needs nothing else (checkSample).
func (run *simRun) sample() {
	now := time.Now()
	inRT, idle := map[sampleKey]int{}, map[sampleKey]int{}
	run.mu.Lock()
	for sr := range run.live {
		ri := run.regOf[sr.tr]
		flight := false
		for _, a := range sr.attempts {
			flight = flight || !a.back
		}
		room := sr.roomAt(now) && sr.maxRetries >= 1 && !sr.unkeyed
		for _, c := range sr.cands {
			k := sampleKey{ri, c.key}
			inRT[k]++
			if room && !flight {
				idle[k]++
			}
		}
	}
	run.mu.Unlock()
	var got []budgetSample
	for ri, reg := range run.registries {
		reg.Range(func(host string, s httpretry.BudgetStats) bool {
			k := sampleKey{ri, host}
			got = append(got, budgetSample{at: now, sampleKey: k, s: s, inRT: inRT[k], idle: idle[k]})
			return true
		})
	}
	run.mu.Lock()
	run.samples = append(run.samples, got...)
	run.mu.Unlock()
	for _, smp := range got {
		run.checkSample(smp)
	}
}

// roomAt reports whether sr has room at t (point 22): a deadline, the
// earlier of the policy's and its context's, not yet passed.
func (sr *simReq) roomAt(t time.Time) bool {
	dl := sr.deadline
	if !sr.ctxDL.IsZero() && (dl.IsZero() || sr.ctxDL.Before(dl)) {
		dl = sr.ctxDL
	}
	return !dl.IsZero() && !dl.Before(t)
}

// checkSample checks one sample against what any httpretry must show: no
// more requests parked at an origin than may be parked there (a closed
// loop of N workers parks at most N), and none at all where the hold
// cannot act (Hold -1, a disabled budget). The streak and parked count
// are traced as they change.
func (run *simRun) checkSample(smp budgetSample) {
	s := smp.s
	run.mu.Lock()
	last, seen := run.shown[smp.sampleKey]
	if now := [2]int{s.Streak, s.Parked}; now != last || !seen && now != [2]int{} {
		run.shown[smp.sampleKey] = now
		run.mu.Unlock()
		run.logf(nil, "budgets %d %s: streak %d, parked %d (requests %d, retries %d, credit %d; %d in RoundTrip, %d idle)",
			smp.reg, smp.host, s.Streak, s.Parked, s.Requests, s.Retries, s.Credit, smp.inRT, smp.idle)
	} else {
		run.mu.Unlock()
	}
	if s.Parked == 0 {
		return
	}
	if !run.holdActive(smp.reg) {
		run.violate(nil, "hold-off", "%s has %d parked requests in budgets %d, whose policies never hold (%+v)",
			smp.host, s.Parked, smp.reg, run.cfg.policies[0].Budget)
	}
	if s.Parked > smp.idle {
		run.violate(nil, "parked-bound", "%s has %d parked requests at %v; %d requests in RoundTrip may go there, "+
			"%d of them with room, a resend allowed and no attempt in flight", smp.host, s.Parked,
			smp.at.Sub(run.t0), smp.inRT, smp.idle)
	}
	if op := run.cfg.outage; op != nil && !op.open && s.Parked > op.workers {
		run.violate(nil, "closed-loop-parks-n", "%s has %d parked requests from a closed loop of %d workers",
			smp.host, s.Parked, op.workers)
	}
}

// holdActive reports whether the policies of registry ri's transports
// may hold a resend: a budget enabled, Hold not negative.
func (run *simRun) holdActive(ri int) bool {
	for tr, r := range run.regOf {
		if r == ri && holds(run.cfg.policies[tr].Budget) {
			return true
		}
	}
	return false
}

// holds reports whether c holds resends at all (point 22).
func holds(c httpretry.BudgetConfig) bool { return !c.Disabled && c.Hold >= 0 }

// detectHoldEngine reports whether the httpretry under test counts its
// origins' streaks: a request whose two attempts get a 503 leaves its
// origin's BudgetStats.Streak at 2, Hold -1 and all.
func detectHoldEngine(t *testing.T) bool {
	counted := false
	synctest.Test(t, func(t *testing.T) {
		o := fakeorigin.New(fakeorigin.Always(fakeorigin.Answer{Status: http.StatusServiceUnavailable}))
		b := httpretry.NewBudgets()
		rt := httpretry.New(o, httpretry.WithBudgets(b), httpretry.WithPolicy(httpretry.Policy{MaxRetries: 1,
			Backoff: httpretry.NoBackoff(), Budget: httpretry.BudgetConfig{Hold: -1}}))
		req, err := http.NewRequest(http.MethodGet, "http://detect.sim/", nil)
		if err != nil {
			t.Fatal(err)
		}
		if resp, err := rt.RoundTrip(req); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		b.Range(func(_ string, s httpretry.BudgetStats) bool {
			counted = counted || s.Streak > 0
			return true
		})
	})
	return counted
}

// setHoldChecks sets holdChecks from -sim.hold.
func setHoldChecks(t *testing.T) {
	switch *simHold {
	case "on":
		holdChecks = true
	case "off":
		holdChecks = false
	case "auto":
		holdChecks = detectHoldEngine(t)
	default:
		t.Fatalf("-sim.hold=%q: on, off or auto", *simHold)
	}
	t.Logf("simulator: point 22's hold checks %s (-sim.hold=%s)", map[bool]string{true: "on", false: "off"}[holdChecks],
		*simHold)
}

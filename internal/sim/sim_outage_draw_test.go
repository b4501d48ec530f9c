package sim_test

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"

	"github.com/httpretry/httpretry"
)

// The outage scenario (DESIGN point 22, "An outage earns no credit"): one
// transport sends GETs to a primary that is healthy, then out in one of
// the ways point 22 measures, then healthy again, from clients that arrive
// whatever the answers (an open loop) or that wait on each answer (a
// closed loop of 1 to 64 workers), with or without deadlines, under a
// Hold of -1, the default, 1 or 3. What it must show is checked in
// sim_hold_check_test.go.

// outageKind is how the primary fails while it is out.
type outageKind uint8

const (
	oRefuse    outageKind = iota // every dial refused
	o503                         // every attempt a 503, now and then with Retry-After
	oReset                       // transport errors: resets before and after the request was read
	oBlackHole                   // no answer until PerTryTimeout or the caller's end
	oDialHang                    // the dial hangs as long
	oMixed                       // refusals, 503s and black holes at once
	oBlip                        // isolated failures, 5 % of attempts, all run long
	oBrownout                    // 30 % of attempts fail while it is out
	oFlap                        // down and up in turns while it is out
	numOutageKinds
)

var outageKindNames = [numOutageKinds]string{"refuse", "503", "reset", "black-hole", "dial-hang", "mixed",
	"blip", "brownout", "flap"}

func (k outageKind) String() string { return outageKindNames[k] }

// hangs reports whether an attempt may wait for its end: then every
// request needs PerTryTimeout or a deadline to end at all.
func (k outageKind) hangs() bool { return k == oBlackHole || k == oDialHang || k == oMixed }

// outagePlan is what an outage run drew, beside its runConfig.
type outagePlan struct {
	kind     outageKind
	open     bool          // an open loop: arrivals whatever the answers
	workers  int           // a closed loop's workers
	rate     int           // requests per second the clients send while the primary answers
	until    time.Duration // the clients send no request after it
	outages  [][2]time.Duration
	deadline string // "none", "ctx", "policy" or "both"
	ctxAfter time.Duration
	cancels  bool // now and then a caller cancels
	fallback bool // the policy names a healthy fallback
	ra       bool // the 503s carry Retry-After: 1
}

func (p *outagePlan) String() string {
	loop := "open loop"
	if !p.open {
		loop = fmt.Sprintf("closed loop of %d workers", p.workers)
	}
	return fmt.Sprintf("%s outage %v, %s at %d/s until %v, deadline %s (context %v), cancels %v, fallback %v, "+
		"Retry-After %v", p.kind, p.outages, loop, p.rate, p.until, p.deadline, p.ctxAfter, p.cancels, p.fallback, p.ra)
}

// outageWorkers are a closed loop's sizes, the small ones most often.
var outageWorkers = []int{1, 1, 2, 4, 8, 8, 16, 32, 64}

// drawOutage draws an outage run from a stream of its own.
func drawOutage(seed uint64) *runConfig {
	r := rand.New(rand.NewPCG(seed, 0x0a7a))
	cfg := &runConfig{scenario: "outage", origins: healthyOrigins()}
	op := &outagePlan{kind: outageKind(r.IntN(int(numOutageKinds))), open: r.IntN(3) == 0,
		rate: pick(r, 10, 20, 30), fallback: r.IntN(4) == 0}
	cfg.outage = op
	if !op.open {
		op.workers = pick(r, outageWorkers...)
	}
	warm := pick[time.Duration](r, 500, 1000, 1500) * time.Millisecond
	down := pick[time.Duration](r, 300, 1000, 2500, 4000) * time.Millisecond
	op.outages = [][2]time.Duration{{warm, warm + down}}
	if r.IntN(3) == 0 {
		// Down again after a while up: the second onset after an answer
		// that ended a streak, with tokens and a drain behind it.
		from := warm + down + pick[time.Duration](r, 200, 700, 1500)*time.Millisecond
		op.outages = append(op.outages, [2]time.Duration{from, from + pick[time.Duration](r, 300, 1500)*time.Millisecond})
	}
	last := op.outages[len(op.outages)-1][1]
	op.until = last + pick[time.Duration](r, 500, 1000)*time.Millisecond
	op.ra = op.kind == o503 && r.IntN(4) == 0
	primary := cfg.origins[0]
	primary.phases = outagePhases(r, op)
	if op.ra {
		primary.raKinds = []string{"1"}
	}

	pol := httpretry.Policy{
		MaxRetries: pick(r, 1, 2, 3, 3, 5),
		Backoff: pick(r, httpretry.Backoff{}, httpretry.Exponential(10*time.Millisecond, 200*time.Millisecond),
			httpretry.Fixed(50*time.Millisecond), httpretry.ExponentialJitter(20*time.Millisecond, 400*time.Millisecond),
			httpretry.NoBackoff()),
		Budget: drawOutageBudget(r),
		// Demotion would send first attempts elsewhere: the primary's
		// arrivals are what point 22 counts.
		Demote: httpretry.Demote{After: -1},
	}
	op.deadline = pick(r, "none", "ctx", "policy", "both")
	if op.deadline == "ctx" || op.deadline == "both" {
		op.ctxAfter = pick[time.Duration](r, 1, 5, 30)*time.Second + 23*time.Microsecond
	}
	if op.deadline == "policy" || op.deadline == "both" {
		pol.Deadline = pick[time.Duration](r, 1, 5, 30)*time.Second + 7*time.Microsecond
	}
	if r.IntN(3) == 0 || op.kind.hangs() && (op.deadline == "none" || r.IntN(2) == 0) {
		pol.PerTryTimeout = pick[time.Duration](r, 100, 300, 1000)*time.Millisecond + 13*time.Microsecond
	}
	if op.fallback {
		pol.Fallbacks = []string{cfg.origins[1].url}
	}
	op.cancels = r.IntN(4) == 0
	cfg.policies = []httpretry.Policy{pol}
	cfg.clients = outageClients(op)
	return cfg
}

// drawOutageBudget draws the budget of an outage run: Hold among -1, the
// default, 1 and 3, HoldFor the default or shorter, a window short enough
// that the run spans several; strict, tiny or disabled now and then.
func drawOutageBudget(r *rand.Rand) httpretry.BudgetConfig {
	c := httpretry.BudgetConfig{Hold: pick(r, -1, 0, 1, 3),
		HoldFor: pick[time.Duration](r, 0, 100*time.Millisecond+3*time.Microsecond,
			300*time.Millisecond+3*time.Microsecond, time.Second),
		Window: pick(r, 0, time.Second, 2*time.Second, 5*time.Second)}
	switch r.IntN(10) {
	case 0, 1:
		c.MinRetries = -1
	case 2:
		c.Percent, c.MinRetries = 1, 1
	case 3:
		c.Disabled = true
	}
	return c
}

// outagePhases lays out the primary's behaviour over the run: answers,
// then each outage of op's kind, answers again.
func outagePhases(r *rand.Rand, op *outagePlan) []phase {
	ok := weights(map[behaviour]int{bOK: 1})
	if op.kind == oBlip {
		// Isolated failures all along, no outage as such.
		op.outages = nil
		return []phase{{weights: weights(map[behaviour]int{bOK: 19, pick(r, b503, bRefuse, bResetAfter): 1})}}
	}
	var down [numBehaviours]int
	switch op.kind {
	case oRefuse:
		down = weights(map[behaviour]int{bRefuse: 1})
	case o503:
		down = weights(map[behaviour]int{b503: 1})
	case oReset:
		down = weights(map[behaviour]int{bResetBefore: 1, bResetAfter: 1})
	case oBlackHole:
		down = weights(map[behaviour]int{bBlackHole: 1})
	case oDialHang:
		down = weights(map[behaviour]int{bDialHang: 1})
	case oMixed:
		down = weights(map[behaviour]int{bRefuse: 1, b503: 1, bBlackHole: 1})
	case oBrownout:
		down = weights(map[behaviour]int{bOK: 7, pick(r, b503, bRefuse): 3})
	case oFlap:
		down = weights(map[behaviour]int{pick(r, b503, bRefuse): 1})
	}
	var ps []phase
	for _, o := range op.outages {
		ps = append(ps, phase{until: o[0], weights: ok})
		if op.kind != oFlap {
			ps = append(ps, phase{until: o[1], weights: down})
			continue
		}
		downFor := pick[time.Duration](r, 100, 300, 1000) * time.Millisecond
		upFor := pick[time.Duration](r, 50, 200, 500) * time.Millisecond
		for t := o[0]; t < o[1]; t += downFor + upFor {
			ps = append(ps, phase{until: min(t+downFor, o[1]), weights: down})
			if t+downFor < o[1] {
				ps = append(ps, phase{until: min(t+downFor+upFor, o[1]), weights: ok})
			}
		}
	}
	return append(ps, phase{weights: ok})
}

// outageClients are op's clients: one that dispatches an open loop's
// arrivals, or a closed loop's workers, each sending its next request
// once the last one returned and a pause that keeps the loop near op.rate
// while the primary answers (10 ms).
func outageClients(op *outagePlan) []clientPlan {
	if op.open {
		return []clientPlan{{loop: &loopPlan{open: true, until: op.until, every: time.Second / time.Duration(op.rate)},
			reqs: []reqPlan{outageRequest(op)}}}
	}
	think := max(time.Duration(op.workers)*time.Second/time.Duration(op.rate)-10*time.Millisecond, 0)
	var cs []clientPlan
	for w := range op.workers {
		lp := &loopPlan{until: op.until, every: think, offset: think * time.Duration(w) / time.Duration(op.workers)}
		cs = append(cs, clientPlan{loop: lp, reqs: []reqPlan{outageRequest(op)}})
	}
	return cs
}

// outageRequest is the template of op's requests: a GET of the primary,
// its body read.
func outageRequest(op *outagePlan) reqPlan {
	return reqPlan{method: "GET", origin: 0, path: "/p", timeout: op.ctxAfter, readResp: true, closeAfter: -1,
		readMax: 512, closeOnResume: -1}
}

// loopPlan makes a client a loop that sends its template request again
// and again until until: an open loop one every every (jittered), each
// request on a goroutine of its own, or a closed loop that sends the next
// once the last returned and every has passed, from offset on.
type loopPlan struct {
	open          bool
	until         time.Duration
	every, offset time.Duration
}

// loopRequest is the k-th request of client ci's loop: its template, the
// k-th arrival's draws (a cancel now and then) from a stream of its own,
// and a draw key that does not hang on the order in which requests at
// one instant were numbered.
func (run *simRun) loopRequest(ci, k int, q reqPlan) reqPlan {
	q.drawKey = 1 + ci<<20 + k
	if run.cfg.outage.cancels {
		r := rand.New(rand.NewPCG(run.seed, uint64(q.drawKey)))
		if r.IntN(8) == 0 {
			q.cancelAfter = time.Duration(1+r.IntN(3000))*time.Millisecond + 51*time.Microsecond
		}
	}
	return q
}

// playLoop runs client ci's loop through rt; wg counts an open loop's
// request goroutines.
func (run *simRun) playLoop(rt http.RoundTripper, ci int, cp clientPlan, wg *sync.WaitGroup) {
	lp := cp.loop
	if lp.open {
		r := rand.New(rand.NewPCG(run.seed, uint64(ci)<<8|0x0a))
		for k := 0; ; k++ {
			// A jittered gap: arrivals that do not all fall on a grid.
			time.Sleep(lp.every/2 + time.Duration(r.Int64N(int64(lp.every))) + 17*time.Microsecond)
			if time.Since(run.t0) >= lp.until {
				return
			}
			q := run.loopRequest(ci, k, cp.reqs[0])
			wg.Go(func() { run.send(rt, ci, cp.transport, q) })
		}
	}
	time.Sleep(lp.offset)
	for k := 0; time.Since(run.t0) < lp.until; k++ {
		run.send(rt, ci, cp.transport, run.loopRequest(ci, k, cp.reqs[0]))
		if lp.every > 0 {
			time.Sleep(lp.every)
		}
	}
}

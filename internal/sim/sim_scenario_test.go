package sim_test

import (
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/httpretry/httpretry"
)

// Liveness scenarios: runs long enough for a feature to show that it goes
// on working beside another, each a fixed shape with the seed's details.
// checkScenario holds what each must show.

const (
	stallEvery     = 25 // hedge-fallback: every 25th request stalls at the primary
	hedgeWindows   = 5  // hedge-fallback: the budget windows the run spans at least
	blackHoleFrom  = 60 // blackhole-demote: the first request the primary black-holes
	blackHoleTail  = 80 // blackhole-demote: the last requests, which the primary must no longer hold up
	blackHoleAfter = 2  // blackhole-demote: demoted within blackHoleAfter×Demote.After requests
	demoteOutage   = 2 * time.Second
	coldFrom       = 50                                          // probe-cold: the first request the primary answers
	coldDelay      = 300*time.Millisecond + 137*time.Microsecond // probe-cold: its first answer after the outage
)

func healthyOrigins() []*simOrigin {
	var os []*simOrigin
	for i, u := range originURLs {
		os = append(os, &simOrigin{idx: i, url: u.url, key: u.key, scheme: u.scheme,
			phases: []phase{{weights: weights(map[behaviour]int{bOK: 1})}}, okDelay: 10*time.Millisecond + 137*time.Microsecond})
	}
	return os
}

func getPlans(n int, timeout time.Duration, gap time.Duration) []reqPlan {
	var qs []reqPlan
	for range n {
		qs = append(qs, reqPlan{method: "GET", origin: 0, path: "/p", timeout: timeout, readResp: true, gapBefore: gap})
	}
	return qs
}

// drawHedgeFallback: a hedging policy beside one fallback, every
// stallEvery-th request stalling 300 ms at the primary, over more than
// hedgeWindows budget windows. Each stall's copy must go, in every window
// (the copies used to stop after the first, point 20): the primary's share
// (20 % of its requests) and the learned cap (10 % at Quantile 0.95) are
// far above the 4 % of requests that stall.
func drawHedgeFallback(seed uint64) *runConfig {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	cfg := &runConfig{scenario: "hedge-fallback", origins: healthyOrigins()}
	w := pick(r, time.Second, 2*time.Second)
	primary := cfg.origins[0]
	primary.slowDelay = 300*time.Millisecond + 137*time.Microsecond
	primary.script = func(sr *simReq, n int) behaviour {
		if n == 1 && sr.idx%stallEvery == 0 {
			return bSlow
		}
		return bOK
	}
	h := httpretry.Hedge{After: 50 * time.Millisecond, Max: 1}
	if r.IntN(2) == 0 {
		h.Quantile = 0.95
	}
	cfg.policies = []httpretry.Policy{{MaxRetries: 2, Hedge: h, Fallbacks: []string{cfg.origins[1].url},
		Budget: httpretry.BudgetConfig{Window: w, Hold: -1}}}
	// 500 requests of 10 ms at least, each after a gap of w/100: 5 s + 5w.
	cfg.clients = []clientPlan{{reqs: getPlans(500, 5*time.Second, w/100)}}
	return cfg
}

// drawBlackHoleDemote: a primary that answers in 10 ms, long enough for
// its hedge delay to be learned, then black-holes, under learned hedging
// without PerTryTimeout, one healthy fallback: the primary must be
// demoted within a few requests (a zero Demote is the default's, point
// 20), so that the last ones do not go to it first, and its learned delay
// must not rise on the copies that overtake it.
func drawBlackHoleDemote(seed uint64) *runConfig {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	cfg := &runConfig{scenario: "blackhole-demote", origins: healthyOrigins(), sampleLearned: true}
	cfg.origins[0].script = func(sr *simReq, _ int) behaviour {
		if sr.idx < blackHoleFrom {
			return bOK
		}
		return bBlackHole
	}
	cfg.policies = []httpretry.Policy{{MaxRetries: 2,
		Hedge:     httpretry.Hedge{Quantile: pick(r, 0.9, 0.95), After: 20 * time.Millisecond, Max: 1},
		Fallbacks: []string{cfg.origins[1].url}, Demote: pick(r, httpretry.Demote{}, httpretry.Demote{After: 3})}}
	cfg.clients = []clientPlan{{reqs: getPlans(200, time.Second, 0)}}
	return cfg
}

// drawDemoteReturn: the primary refuses connections for demoteOutage,
// then answers; demoted meanwhile, it must be restored and first again.
func drawDemoteReturn(seed uint64) *runConfig {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	cfg := &runConfig{scenario: "demote-return", origins: healthyOrigins()}
	cfg.origins[0].phases = []phase{{until: demoteOutage, weights: weights(map[behaviour]int{bRefuse: 1})},
		{weights: weights(map[behaviour]int{bOK: 1})}}
	cfg.policies = []httpretry.Policy{{MaxRetries: 1, Fallbacks: []string{cfg.origins[1].url},
		Demote: httpretry.Demote{After: 1 + r.IntN(4), For: time.Second, Max: 5 * time.Second}}}
	cfg.clients = []clientPlan{{reqs: getPlans(300, time.Second, 40*time.Millisecond)}}
	return cfg
}

// drawProbeCold: the primary refuses connections until request coldFrom,
// then answers, its first answer slow (a cold connection: coldDelay, far
// past the hedge delay) and the others at once, beside a warm standby.
// The probe that meets the cold connection is overtaken by a copy on the
// standby; it must run on to its answer and restore the primary, never
// demote it again (point 23).
func drawProbeCold(seed uint64) *runConfig {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	cfg := &runConfig{scenario: "probe-cold", origins: healthyOrigins()}
	primary := cfg.origins[0]
	primary.slowDelay = coldDelay
	var warm atomic.Bool
	primary.script = func(sr *simReq, _ int) behaviour {
		switch {
		case sr.idx < coldFrom:
			return bRefuse
		case !warm.Swap(true):
			return bSlow
		}
		return bOK
	}
	cfg.policies = []httpretry.Policy{{MaxRetries: 2, Hedge: httpretry.Hedge{After: 20 * time.Millisecond},
		Fallbacks: []string{cfg.origins[1].url},
		Demote:    httpretry.Demote{After: 1 + r.IntN(3), For: time.Second, Max: 5 * time.Second}}}
	if r.IntN(2) == 0 {
		cfg.policies[0].PerTryTimeout = time.Second // the probe's bound; without it, the demotion's length
	}
	cfg.clients = []clientPlan{{reqs: getPlans(300, time.Second, 40*time.Millisecond)}}
	return cfg
}

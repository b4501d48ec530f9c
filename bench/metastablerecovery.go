package bench

import "time"

// MetastableWindow, MetastableInTime and MetastableGoodput define when the
// server of the metastability benchmark is up over a window of time: at
// least MetastableInTime of the attempts it admitted in the window were
// done within the attempt cut of their arrival (its queueing delay is back
// under the cut), and at least MetastableGoodput of the requests sent in
// the window succeeded (its goodput is back to the offered load). Windows
// start at every MetastableStep.
//
// Neither share is 100 %: with Poisson arrivals, a FIFO server at 0.90 or
// 0.95 of its capacity runs some attempts past 200 ms without any trigger,
// now and then every attempt of a whole second. Goodput counts requests
// by when they were sent, not when they succeeded: a burst that straddles
// a window's end moves no success out of its window.
const (
	MetastableStep    = 10 * time.Millisecond
	MetastableWindow  = time.Second
	MetastableInTime  = 0.9
	MetastableGoodput = 0.9
)

// metastableTimeline is a run's verdict per MetastableStep: whether the
// server was up over the window that starts there.
type metastableTimeline struct {
	cfg MetastableConfig
	up  []bool
}

func newMetastableTimeline(cfg MetastableConfig, reqs []metastableRequest, attempts []metastableAttempt) metastableTimeline {
	// Counts per step as prefix sums: element k counts the steps before k.
	n := int(cfg.length() / MetastableStep)
	sent, ok, admitted, late := make([]int, n+1), make([]int, n+1), make([]int, n+1), make([]int, n+1)
	step := func(d time.Duration) (int, bool) {
		k := int(d / MetastableStep)
		return k + 1, d >= 0 && k < n
	}
	for _, r := range reqs {
		if k, in := step(r.sent); in {
			sent[k]++
			if r.ok {
				ok[k]++
			}
		}
	}
	for _, a := range attempts {
		if k, in := step(a.at); in {
			admitted[k]++
			if a.sojourn() >= cfg.Cut {
				late[k]++
			}
		}
	}
	for _, s := range [][]int{sent, ok, admitted, late} {
		for k := 1; k <= n; k++ {
			s[k] += s[k-1]
		}
	}
	w := int(MetastableWindow / MetastableStep)
	tl := metastableTimeline{cfg: cfg, up: make([]bool, max(n-w+1, 0))}
	for k := range tl.up {
		e := k + w
		a := admitted[e] - admitted[k]
		inTime := a - (late[e] - late[k])
		tl.up[k] = float64(inTime) >= MetastableInTime*float64(a) &&
			float64(ok[e]-ok[k]) >= MetastableGoodput*float64(sent[e]-sent[k])
	}
	return tl
}

// upFrom reports whether the server was up over every window within the
// span of d from step k.
func (tl metastableTimeline) upFrom(k int, d time.Duration) bool {
	last := k + int((d-MetastableWindow)/MetastableStep)
	if k < 0 || last >= len(tl.up) {
		return false
	}
	for ; k <= last; k++ {
		if !tl.up[k] {
			return false
		}
	}
	return true
}

// upBefore reports whether the server was up over every window of the
// warm-up.
func (tl metastableTimeline) upBefore() bool {
	return tl.cfg.WarmUp < MetastableWindow || tl.upFrom(0, tl.cfg.WarmUp)
}

// recovery returns the earliest instant, from the trigger's start, from
// which the server was up for Sustain, and false if there is none or if
// it was not up for the last Sustain before the horizon: a server that
// came back and fell again for good has not recovered.
func (tl metastableTimeline) recovery() (time.Duration, bool) {
	first := int(tl.cfg.WarmUp / MetastableStep)
	end := int(tl.cfg.length() / MetastableStep)
	s := int(tl.cfg.Sustain / MetastableStep)
	if !tl.upFrom(end-s, tl.cfg.Sustain) {
		return 0, false
	}
	for k := first; k+s <= end; k++ {
		if tl.upFrom(k, tl.cfg.Sustain) {
			return time.Duration(k-first) * MetastableStep, true
		}
	}
	return 0, false
}

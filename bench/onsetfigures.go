package bench

import (
	"fmt"
	"time"
)

// OnsetPlan sizes the runs of MeasureOnset and MeasureOnsetHealth.
type OnsetPlan struct {
	// BusyOutage and FleetOutage are how many budget windows the outage lasts,
	// after one window of health, for OnsetBusyClient and for the fleets: at
	// least 1 and 4, the spans of the onset's figures.
	BusyOutage, FleetOutage int
	// Blips is about how many requests each run with blips makes.
	Blips int
	// Brownout is how many budget windows (10 s for the closed loops) the
	// brownout lasts, after one window of health; a client's brownout is
	// run again with the next seed until BrownoutFailed of its first
	// attempts have failed, so that a quiet client's share is read to
	// the same precision as a busy one's.
	Brownout, BrownoutFailed int
	// Seed is the seed of the first run of each kind.
	Seed uint64
}

// FullOnsetPlan is the plan of cmd/onsetreport: a 120 s outage for the
// busy client and 60 windows for the fleets (600 s for the real-time one),
// 20 000 requests per blip run (about 1000 failed first attempts), a 30 s
// brownout until 2000 first attempts failed.
func FullOnsetPlan() OnsetPlan {
	return OnsetPlan{BusyOutage: 12, FleetOutage: 60, Blips: 20_000, Brownout: 3, BrownoutFailed: 2000, Seed: 1}
}

// ShortOnsetPlan keeps every run short enough for a test under -short: the
// onset's spans and no more, 2000 requests per blip run, one window of
// brownout until 100 first attempts failed.
func ShortOnsetPlan() OnsetPlan {
	return OnsetPlan{BusyOutage: 1, FleetOutage: 4, Blips: 2000, Brownout: 1, BrownoutFailed: 100, Seed: 1}
}

// OnsetFigures are the figures of point 22's first bullet for one
// contender: upstream attempts ÷ requests, counted by send time, in the
// first spans of a total outage (503) that follows one window of health,
// and per request over the whole outage.
type OnsetFigures struct {
	Library string
	// Busy1s and Busy2s: OnsetBusyClient, the first 1 s and 2 s.
	Busy1s, Busy2s float64
	// Quiet2 and Quiet4: OnsetQuietFleet, its first 2 and 4 windows.
	Quiet2, Quiet4 float64
	// RealTime4: OnsetRealTimeFleet, its first 4 windows.
	RealTime4 float64
	// LongBusy, LongQuiet and LongRealTime: the attempts of the requests
	// that started in the outage ÷ those requests, per client kind.
	LongBusy, LongQuiet, LongRealTime float64
}

// MeasureOnset runs OnsetBusyClient, OnsetQuietFleet and OnsetRealTimeFleet
// through lib into an outage as plan sizes it, each run in a bubble of its
// own, and returns their figures.
func MeasureOnset(lib FleetLibrary, plan OnsetPlan, in OnsetBubble) (OnsetFigures, error) {
	if plan.BusyOutage < 1 || plan.FleetOutage < 4 {
		return OnsetFigures{}, fmt.Errorf("bench: an onset needs an outage of 1 busy window and 4 fleet windows, not %d and %d",
			plan.BusyOutage, plan.FleetOutage)
	}
	f := OnsetFigures{Library: lib.Name}
	busy, err := in.run(func() (OnsetRun, error) { return runOnsetOutage(lib, OnsetBusyClient, plan.BusyOutage) })
	if err != nil {
		return f, err
	}
	t0 := OnsetBusyClient.Window
	f.Busy1s = busy.Amplification(t0, t0+time.Second)
	f.Busy2s = busy.Amplification(t0, t0+2*time.Second)
	f.LongBusy = busy.PerRequest(t0, t0+time.Duration(plan.BusyOutage)*OnsetBusyClient.Window)

	quiet, err := in.run(func() (OnsetRun, error) { return runOnsetOutage(lib, OnsetQuietFleet, plan.FleetOutage) })
	if err != nil {
		return f, err
	}
	w := OnsetQuietFleet.Window
	f.Quiet2 = quiet.Amplification(w, 3*w)
	f.Quiet4 = quiet.Amplification(w, 5*w)
	f.LongQuiet = quiet.PerRequest(w, w+time.Duration(plan.FleetOutage)*w)

	realTime, err := in.run(func() (OnsetRun, error) { return runOnsetOutage(lib, OnsetRealTimeFleet, plan.FleetOutage) })
	if err != nil {
		return f, err
	}
	w = OnsetRealTimeFleet.Window
	f.RealTime4 = realTime.Amplification(w, 5*w)
	f.LongRealTime = realTime.PerRequest(w, w+time.Duration(plan.FleetOutage)*w)
	return f, nil
}

// runOnsetOutage runs cfg for one window of health, then windows windows of
// total outage to measure, and one more: the requests of the last window
// measured then meet the budget of a client still busy, not that of one
// whose traffic ended, which would lend them its whole share again.
func runOnsetOutage(lib FleetLibrary, cfg FleetConfig, windows int) (OnsetRun, error) {
	cfg.Windows = windows + 2
	return RunOnsetFleet(lib, cfg, OnsetTrouble{After: cfg.Window, Rate: 1})
}

// The rates of point 22's second bullet.
const (
	OnsetBlipRate     = 0.05
	OnsetBrownoutRate = 0.3
)

// OnsetHealthLoops are the closed loops of point 22's second bullet: their
// numbers of workers.
var OnsetHealthLoops = []int{1, 8, 64}

// OnsetHealthClients names the clients of OnsetHealthFigures, in their order.
func OnsetHealthClients() []string {
	names := []string{"busy client", "real-time fleet", onsetQuietClient}
	for _, w := range OnsetHealthLoops {
		names = append(names, onsetLoopName(w))
	}
	return names
}

func onsetLoopName(workers int) string {
	if workers == 1 {
		return "1 worker"
	}
	return fmt.Sprintf("%d workers", workers)
}

// OnsetHealthFigures are the figures of point 22's second bullet for one
// contender: per client of OnsetHealthClients, the requests whose first
// attempt failed and how many of them ended with a 2xx, under isolated blips
// (OnsetBlipRate of all attempts, throughout) and under a brownout
// (OnsetBrownoutRate of the attempts for plan.Brownout windows, after one
// window of health).
type OnsetHealthFigures struct {
	Library         string
	Blips, Brownout []OnsetRecovery
}

// MeasureOnsetHealth runs every client of OnsetHealthClients through lib under
// blips and under a brownout, as plan sizes them, each run in a bubble of
// its own, and returns their figures.
func MeasureOnsetHealth(lib FleetLibrary, plan OnsetPlan, in OnsetBubble) (OnsetHealthFigures, error) {
	h := OnsetHealthFigures{Library: lib.Name}
	names := OnsetHealthClients()
	for i, cfg := range []FleetConfig{OnsetBusyClient, OnsetRealTimeFleet, OnsetQuietFleet} {
		perWindow := cfg.Clients * cfg.PerWindow
		blips := cfg
		blips.Windows = max((plan.Blips+perWindow-1)/perWindow, 1)
		r, err := in.run(func() (OnsetRun, error) {
			return RunOnsetFleet(lib, blips, OnsetTrouble{Rate: OnsetBlipRate, Seed: plan.Seed})
		})
		if err != nil {
			return h, err
		}
		h.Blips = append(h.Blips, r.Recovery(names[i]))

		cfg.Windows = 1 + plan.Brownout
		rec, err := onsetBrownoutRecovery(names[i], cfg.Window, plan, in, func(tr OnsetTrouble) (OnsetRun, error) {
			return RunOnsetFleet(lib, cfg, tr)
		})
		if err != nil {
			return h, err
		}
		h.Brownout = append(h.Brownout, rec)
	}
	for _, workers := range OnsetHealthLoops {
		cfg := OnsetClosedLoop(workers)
		cfg.Span = time.Duration(plan.Blips) * cfg.Latency / time.Duration(workers)
		r, err := in.run(func() (OnsetRun, error) {
			return RunOnsetLoop(lib, cfg, OnsetTrouble{Rate: OnsetBlipRate, Seed: plan.Seed})
		})
		if err != nil {
			return h, err
		}
		h.Blips = append(h.Blips, r.Recovery(onsetLoopName(workers)))

		cfg.Span = time.Duration(1+plan.Brownout) * RealWindow
		rec, err := onsetBrownoutRecovery(onsetLoopName(workers), RealWindow, plan, in, func(tr OnsetTrouble) (OnsetRun, error) {
			return RunOnsetLoop(lib, cfg, tr)
		})
		if err != nil {
			return h, err
		}
		h.Brownout = append(h.Brownout, rec)
	}
	return h, nil
}

// onsetMaxBrownoutRuns bounds the runs of one client's brownout, should its
// first attempts fail far less often than OnsetBrownoutRate says.
const onsetMaxBrownoutRuns = 100

// onsetBrownoutRecovery runs plan's brownout for a client whose budget window
// is window, with seeds from plan.Seed on, until plan.BrownoutFailed first
// attempts have failed, and returns the sum of the runs' recoveries.
func onsetBrownoutRecovery(client string, window time.Duration, plan OnsetPlan, in OnsetBubble, run func(OnsetTrouble) (OnsetRun, error)) (OnsetRecovery, error) {
	sum := OnsetRecovery{Client: client}
	tr := OnsetTrouble{After: window, For: time.Duration(plan.Brownout) * window, Rate: OnsetBrownoutRate, Seed: plan.Seed}
	for i := 0; i < onsetMaxBrownoutRuns && (i == 0 || sum.Failed < plan.BrownoutFailed); i++ {
		r, err := in.run(func() (OnsetRun, error) { return run(tr) })
		if err != nil {
			return sum, err
		}
		rec := r.Recovery(client)
		sum.Failed += rec.Failed
		sum.Recovered += rec.Recovered
		tr.Seed++
	}
	return sum, nil
}

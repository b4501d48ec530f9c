package bench

import (
	"fmt"
	"strings"
)

// OnsetTarget is what DESIGN point 22 requires of httpretry's default in
// each figure of OnsetFigures: at most these.
var OnsetTarget = OnsetFigures{Library: "target", Busy1s: 1.02, Busy2s: 1.02, Quiet2: 1.25, Quiet4: 1.13, RealTime4: 1.40,
	LongBusy: 1.01, LongQuiet: 1.01, LongRealTime: 1.01}

// OnsetBefore is what DESIGN point 22 gives for httpretry before it, from
// the simulations behind the point; it gives one long-outage figure, 1.20,
// for every client kind.
var OnsetBefore = OnsetFigures{Library: "before (DESIGN)", Busy1s: 2.96, Busy2s: 2.00, Quiet2: 3.32, Quiet4: 2.38, RealTime4: 2.38,
	LongBusy: 1.20, LongQuiet: 1.20, LongRealTime: 1.20}

// The shares of point 22's second bullet: blips recovered at least
// OnsetBlipTarget (OnsetQuietBlipTarget for OnsetQuietFleet), a brownout
// within OnsetBrownoutMargin of Hold -1.
const (
	OnsetBlipTarget      = 0.999
	OnsetQuietBlipTarget = 0.995
	OnsetBrownoutMargin  = 0.02
)

// onsetShareSlack keeps a share exactly at its bound from missing it by the
// rounding of the bound's arithmetic.
const onsetShareSlack = 1e-9

// onsetQuietClient is OnsetQuietFleet's name among OnsetHealthClients.
const onsetQuietClient = "quiet fleet"

// OnsetMisses lists the figures of f above OnsetTarget, each as "name
// got > target"; with long false, it leaves the long outage's out (a short
// plan's outage is the onset and no more).
func OnsetMisses(f OnsetFigures, long bool) []string {
	var miss []string
	check := func(name string, got, target float64) {
		if got > target {
			miss = append(miss, fmt.Sprintf("%s %.3f× > %.2f×", name, got, target))
		}
	}
	t := OnsetTarget
	check("busy client, first 1 s:", f.Busy1s, t.Busy1s)
	check("busy client, first 2 s:", f.Busy2s, t.Busy2s)
	check("quiet fleet, first 2 windows:", f.Quiet2, t.Quiet2)
	check("quiet fleet, first 4 windows:", f.Quiet4, t.Quiet4)
	check("real-time fleet, first 4 windows:", f.RealTime4, t.RealTime4)
	if long {
		check("long outage, busy client:", f.LongBusy, t.LongBusy)
		check("long outage, quiet fleet:", f.LongQuiet, t.LongQuiet)
		check("long outage, real-time fleet:", f.LongRealTime, t.LongRealTime)
	}
	return miss
}

// OnsetHealthMisses lists the figures of h short of point 22's second bullet:
// its brownout is compared with before's (Hold -1, measured by
// MeasureOnsetHealth with the same plan), and only a share below it by more
// than OnsetBrownoutMargin misses, since a brownout recovered better keeps
// health all the same.
func OnsetHealthMisses(h, before OnsetHealthFigures) []string {
	var miss []string
	for _, rec := range h.Blips {
		target := OnsetBlipTarget
		if rec.Client == onsetQuietClient {
			target = OnsetQuietBlipTarget
		}
		if rec.Share() < target-onsetShareSlack {
			miss = append(miss, fmt.Sprintf("blips, %s: %.2f %% (%d of %d) < %.1f %%",
				rec.Client, 100*rec.Share(), rec.Recovered, rec.Failed, 100*target))
		}
	}
	for i, rec := range h.Brownout {
		if was := before.Brownout[i].Share(); rec.Share() < was-OnsetBrownoutMargin-onsetShareSlack {
			miss = append(miss, fmt.Sprintf("brownout, %s: %.2f %% < %.2f %% (Hold -1) − %.0f points",
				rec.Client, 100*rec.Share(), 100*was, 100*OnsetBrownoutMargin))
		}
	}
	return miss
}

// String writes f on one line, for a test's messages.
func (f OnsetFigures) String() string {
	return fmt.Sprintf("busy %.3f×/%.3f×, quiet %.3f×/%.3f×, real-time %.3f×, long %.3f×/%.3f×/%.3f×",
		f.Busy1s, f.Busy2s, f.Quiet2, f.Quiet4, f.RealTime4, f.LongBusy, f.LongQuiet, f.LongRealTime)
}

// String writes h on one line, for a test's messages.
func (h OnsetHealthFigures) String() string {
	var b strings.Builder
	for i, recs := range [][]OnsetRecovery{h.Blips, h.Brownout} {
		b.WriteString([]string{"blips", "; brownout"}[i])
		for _, rec := range recs {
			fmt.Fprintf(&b, " %s %d/%d", rec.Client, rec.Recovered, rec.Failed)
		}
	}
	return b.String()
}

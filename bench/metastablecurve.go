package bench

import (
	"slices"
	"time"
)

// MetastableLoad is one client's result at one load: a run per seed.
type MetastableLoad struct {
	Load float64
	Runs []MetastableRun
}

// MetastableCurve runs c at every load for every seed, cfg giving the
// rest, and returns one MetastableLoad per load, in order. Each run's
// Arrivals are dropped, to keep a long sweep small.
func MetastableCurve(run MetastableRunner, c MetastableClient, cfg MetastableConfig, loads []float64, seeds []uint64) ([]MetastableLoad, error) {
	out := make([]MetastableLoad, 0, len(loads))
	for _, l := range loads {
		point := MetastableLoad{Load: l}
		for _, s := range seeds {
			cfg.Load, cfg.Seed = l, s
			r, err := run(c, cfg)
			if err != nil {
				return nil, err
			}
			r.Arrivals = nil
			point.Runs = append(point.Runs, r)
		}
		out = append(out, point)
	}
	return out, nil
}

// Median returns the median time to recovery over the runs, a run that
// did not recover counting as longer than any that did, and false when
// that median is such a run: the client recovers at this load when more
// than half of its runs do. With an even count it is the later of the two
// middle runs.
func (l MetastableLoad) Median() (time.Duration, bool) {
	if len(l.Runs) == 0 {
		return 0, false
	}
	const never = time.Duration(1<<63 - 1)
	ds := make([]time.Duration, len(l.Runs))
	for i, r := range l.Runs {
		ds[i] = never
		if r.Recovered {
			ds[i] = r.Recovery
		}
	}
	slices.Sort(ds)
	m := ds[len(ds)/2]
	return m, m != never
}

// Recovered returns how many of the runs recovered.
func (l MetastableLoad) Recovered() int {
	n := 0
	for _, r := range l.Runs {
		if r.Recovered {
			n++
		}
	}
	return n
}

// Amplification returns the attempts per request over all the runs.
func (l MetastableLoad) Amplification() float64 {
	var a, n int
	for _, r := range l.Runs {
		a += r.Attempts
		n += r.Requests
	}
	return ratio(a, n)
}

// MetastableEdge returns the client's edge: the highest load of the curve
// up to which it recovers at every load (see MetastableLoad.Median), and
// false when it does not recover at the first.
func MetastableEdge(curve []MetastableLoad) (float64, bool) {
	edge, ok := 0.0, false
	for _, l := range curve {
		if _, up := l.Median(); !up {
			break
		}
		edge, ok = l.Load, true
	}
	return edge, ok
}

package bench

import (
	"math/rand/v2"
	"slices"
	"time"
)

// WindowShare returns the largest share of ts that falls within any
// half-open window [t, t+w), and 0 for no instants. The busiest window can
// always be taken to start at one of the instants, so a sweep over the
// sorted instants finds it exactly. ts is not modified.
func WindowShare(ts []time.Duration, w time.Duration) float64 {
	if len(ts) == 0 {
		return 0
	}
	s := slices.Clone(ts)
	slices.Sort(s)
	best, hi := 0, 0
	for lo := range s {
		for hi < len(s) && s[hi] < s[lo]+w {
			hi++
		}
		best = max(best, hi-lo)
	}
	return float64(best) / float64(len(s))
}

// Percentile returns the p-th percentile of ds by the nearest-rank method
// (the smallest value with at least p % of ds at or below it), and 0 for no
// values. p is clamped to [0, 100]; ds is not modified.
func Percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	p = min(max(p, 0), 100)
	// Nearest rank: ceil(p/100·n), 1-based; rank 0 (p = 0) means the least.
	rank := int(p / 100 * float64(len(s)))
	if float64(rank) < p/100*float64(len(s)) {
		rank++
	}
	return s[max(rank, 1)-1]
}

// Completion is one client request that ended: when, relative to the start
// of the run, and whether the caller got a 2xx.
type Completion struct {
	At time.Duration
	OK bool
}

// RecoveryTime returns the start of the first interval of width step from
// which on every interval in which requests completed saw at least share
// of them succeed, and false when the last interval with completions is
// still below share.
//
// Intervals in which nothing completed are skipped rather than counted as
// healthy: a caller stuck in a long backoff has not been served, so the
// time does not start before the first completion after the last bad
// interval.
func RecoveryTime(cs []Completion, step time.Duration, share float64) (time.Duration, bool) {
	if len(cs) == 0 || step <= 0 {
		return 0, false
	}
	type tally struct{ n, ok int }
	buckets := map[int64]*tally{}
	for _, c := range cs {
		k := int64(c.At / step)
		t := buckets[k]
		if t == nil {
			t = &tally{}
			buckets[k] = t
		}
		t.n++
		if c.OK {
			t.ok++
		}
	}
	keys := make([]int64, 0, len(buckets))
	for k := range buckets {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	// Walk back from the last interval while each one is healthy.
	first := -1
	for i := len(keys) - 1; i >= 0; i-- {
		t := buckets[keys[i]]
		if float64(t.ok) < share*float64(t.n) {
			break
		}
		first = i
	}
	if first < 0 {
		return 0, false
	}
	return time.Duration(keys[first]) * step, true
}

// UniformReference returns the median, over trials, of WindowShare for n
// instants drawn uniformly from [0, span): the share that perfect full
// jitter would give, the limit the herd scenario compares against. The
// seed makes the figure reproducible.
func UniformReference(n, trials int, span, w time.Duration, seed uint64) float64 {
	if n <= 0 || trials <= 0 {
		return 0
	}
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	ts := make([]time.Duration, n)
	shares := make([]float64, trials)
	for i := range shares {
		for j := range ts {
			ts[j] = time.Duration(r.Int64N(int64(span)))
		}
		shares[i] = WindowShare(ts, w)
	}
	slices.Sort(shares)
	return shares[len(shares)/2]
}

// MedianRatio returns the median over i of a[i]/b[i]: the ratio of two
// series measured in the same rounds, paired by round so that a machine
// whose speed drifts between rounds affects both sides of each ratio
// alike. An even count gives the mean of the two middle ratios. It
// returns 0 for empty series, series of different lengths or a zero b[i].
func MedianRatio(a, b []float64) float64 {
	if len(a) == 0 || len(a) != len(b) {
		return 0
	}
	rs := make([]float64, len(a))
	for i := range a {
		if b[i] == 0 {
			return 0
		}
		rs[i] = a[i] / b[i]
	}
	slices.Sort(rs)
	n := len(rs)
	if n%2 == 1 {
		return rs[n/2]
	}
	return (rs[n/2-1] + rs[n/2]) / 2
}

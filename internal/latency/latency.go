// Package latency estimates a quantile of one origin's recent latencies,
// from which httpretry learns how long a hedged request waits before a
// copy. Recording a sample and reading the estimate take no lock and
// allocate nothing.
package latency

import (
	"iter"
	"math"
	"math/bits"
	"sync/atomic"
	"time"
)

// The histogram of latencies is log-linear: one bucket below 1.024 µs,
// then sub buckets per power of two up to Top, then one bucket for
// everything beyond. A bucket in the log-linear part spans
// [(8+s)·2^(e-3), (8+s+1)·2^(e-3)) for a duration in [2^e, 2^(e+1)), so it
// is at most 1/8 (12.5 %) of its lower bound wide.
const (
	subBits  = 3
	sub      = 1 << subBits // sub-buckets per power of two
	lowExp   = 10           // 2^10 ns = 1.024 µs: the first bucket's upper bound
	topExp   = 37           // 2^37 ns ≈ 2m17s: the histogram's top
	buckets  = 1 + (topExp-lowExp)*sub + 1
	overflow = buckets - 1

	// half is the number of samples that fills one half.
	half = 256
)

// Top is the histogram's top bound, 2^37 ns (about 2m17s). An estimate at
// Top means the quantile fell in the histogram's last bucket,
// [2^37−2^34, 2^37) ns (from about 2m9s), or beyond the top: either way
// the origin is slower than hedging can help.
const Top = time.Duration(1) << topExp

// Every is how often, in samples, an Estimator recomputes its estimate;
// one with fewer samples than this is cold.
const Every = 32

// Estimator estimates a quantile of one origin's recent latencies, with
// no lock and no allocation per sample. The zero value is ready and cold;
// it takes under 1 KB. It is safe for concurrent use.
//
// Samples go to the current one of two halves of 256 samples; the
// sample that fills one half clears the other and makes it current, so the
// estimate always covers the latest 256 to 512 samples. Every
// Every-th sample of a half, the goroutine that records it
// computes the quantile over both halves and stores it, so that a reader
// pays one atomic load.
//
// The two halves share one array of counters, a half in each 16 bits of a
// bucket's word: a sample costs two atomic adds, and the quantile reads one
// word per bucket. A half holds 256 samples and a few stragglers; to
// overflow its 16 bits, 65,000 attempts to one origin would have to settle
// while the goroutine switching halves is preempted. Recomputing would
// otherwise cost more than the sample itself (1.2 µs over two arrays, 37 ns
// per sample when amortized).
//
// Concurrent recorders race with a half switch, and the race is left
// unguarded because guarding it would cost every sample a lock or a retry
// loop. A recorder that read which half is current just before a switch
// adds its sample to the half just filled, which then holds a few more
// than 256 (as it does while the goroutine that filled it is preempted in
// the middle of the switch); one that read it a whole half earlier may add
// its sample to the half being cleared, where it may be erased, or counted
// in that half's fill count and not in its buckets, or the reverse. So
// around a switch, up to one sample per recorder then in flight is
// misplaced or lost, the next switch may come that many samples early or
// late, and the rank may be off by as many: never more, since each switch
// clears a half's buckets and its fill count together.
type Estimator struct {
	buckets [buckets]atomic.Uint32 // half h's count in bits 16h to 16h+15
	n       [2]atomic.Uint32       // samples recorded in each half since it was cleared
	cur     atomic.Uint32          // index of the current half
	est     atomic.Int64           // the estimate in ns; 0 while cold
}

// Record adds one sample of d and, every Every-th sample of a
// half, recomputes the estimate of quantile q (in (0, 1)) over the latest
// 256 to 512 samples. It never allocates.
func (l *Estimator) Record(d time.Duration, q float64) {
	c := l.cur.Load() & 1
	l.buckets[bucket(d)].Add(1 << (16 * c))
	k := l.n[c].Add(1)
	if k == half {
		// This sample fills half c: the other half, the older, goes, and
		// becomes the half that new samples fill.
		o := c ^ 1
		l.n[o].Store(0)
		keep := ^uint32(0xffff << (16 * o))
		for i := range l.buckets {
			if l.buckets[i].Load()&^keep != 0 {
				l.buckets[i].And(keep)
			}
		}
		l.cur.Store(o)
	}
	if k%Every == 0 {
		l.est.Store(int64(l.quantile(q)))
	}
}

// quantile returns the upper bound of the bucket where the cumulative
// count over both halves reaches ⌈q·n⌉, n being the samples the halves
// hold, and 0 for an empty histogram. Should racing recorders have left
// the buckets holding fewer samples than the fill counts say, the rank is
// taken as the last sample held.
func (l *Estimator) quantile(q float64) time.Duration {
	n := uint64(l.n[0].Load()) + uint64(l.n[1].Load())
	rank := uint64(max(ceilFloat(q*float64(n)), 1))
	var cum uint64
	last := -1
	for i := range l.buckets {
		v := l.buckets[i].Load()
		if v == 0 {
			continue
		}
		cum += uint64(v&0xffff) + uint64(v>>16)
		if cum >= rank {
			return upper(i)
		}
		last = i
	}
	if last < 0 {
		return 0
	}
	return upper(last)
}

// Estimate returns the latest estimate of the quantile and whether the
// estimator is warm; while cold (fewer than 32 samples) it returns 0 and
// false. An estimate beyond the histogram's top is Top. It is one
// atomic load.
func (l *Estimator) Estimate() (d time.Duration, warm bool) {
	v := l.est.Load()
	return time.Duration(v), v != 0
}

// Samples yields, for each bucket that holds samples, its upper bound and
// how many samples it holds, over both halves: what the estimate is
// computed from.
func (l *Estimator) Samples() iter.Seq2[time.Duration, int] {
	return func(yield func(time.Duration, int) bool) {
		for i := range l.buckets {
			if v := l.buckets[i].Load(); v != 0 && !yield(upper(i), int(v&0xffff+v>>16)) {
				return
			}
		}
	}
}

// bucket returns the index of the bucket that holds d.
func bucket(d time.Duration) int {
	if d < 1<<lowExp {
		return 0 // negative durations included: they cannot happen, and must not index out of range
	}
	e := bits.Len64(uint64(d)) - 1
	if e >= topExp {
		return overflow
	}
	s := int(uint64(d)>>(e-subBits)) & (sub - 1)
	return 1 + (e-lowExp)*sub + s
}

// upper returns the upper bound of bucket i; for the bucket beyond
// the top, Top.
func upper(i int) time.Duration {
	switch {
	case i == 0:
		return 1 << lowExp
	case i >= overflow:
		return Top
	}
	e := lowExp + (i-1)/sub
	s := (i - 1) % sub
	return time.Duration(sub+s+1) << (e - subBits)
}

// CopyCap returns how many copies sent under a learned quantile q a window
// of requests may hold: ⌈2·(1 − q)·requests⌉, at least 1, so 10 % at
// q 0.95. Twice the share the quantile itself would copy leaves room for
// an estimate that lags a drift, yet a distribution drifting faster than
// the estimator cannot spend the whole retry budget on copies.
func CopyCap(q float64, requests int) int {
	return max(ceilFloat(2*(1-q)*float64(requests)), 1)
}

// ceilFloat returns ⌈x⌉ for x ≥ 0, forgiving the rounding error of a
// product of decimal fractions: 2·(1 − 0.95)·100 is 10.000000000000009 in
// float64 and must give 10, not 11.
func ceilFloat(x float64) int {
	return int(math.Ceil(x - x*1e-9))
}

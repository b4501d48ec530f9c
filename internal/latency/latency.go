// Package latency estimates a quantile of one origin's recent latencies.
// httpretry learns from it how long a hedged request waits before a copy.
// Recording a sample and reading the estimate take no lock. Neither
// allocates.
package latency

import (
	"iter"
	"math"
	"math/bits"
	"sync/atomic"
	"time"
)

// The histogram of latencies is log-linear. One bucket holds all below
// 1.024 µs. Then each power of two up to Top has sub buckets, and one
// bucket holds all beyond. For a duration in [2^e, 2^(e+1)), a bucket
// spans [(8+s)·2^(e-3), (8+s+1)·2^(e-3)). So it is at most 1/8 (12.5 %)
// of its lower bound wide.
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
// Top means the quantile fell beyond the top, or in the last bucket:
// [2^37−2^34, 2^37) ns, from about 2m9s. Either way the origin is slower
// than hedging can help.
const Top = time.Duration(1) << topExp

// Every is how often, in samples, an Estimator recomputes its estimate;
// one with fewer samples than this is cold.
const Every = 32

// Estimator estimates a quantile of one origin's latest 256 to 512
// latencies. The zero value is ready and cold; it takes under 1 KB. It is
// safe for concurrent use. Concurrent recorders may lose or misplace one
// sample each around the instant the window moves.
//
// Samples go to the current one of two halves of 256 samples. The sample
// that fills one half clears the other and makes it current. On every
// Every-th sample of a half, its recorder computes the quantile over both
// halves and stores it. So a reader pays one atomic load.
//
// The two halves share one array of counters, a half in each 16 bits of a
// bucket's word. A sample costs two atomic adds, and the quantile reads
// one word per bucket. Two arrays would cost more to recompute than the
// sample itself: 1.2 µs, or 37 ns per sample when amortized. A half holds
// 256 samples and a few stragglers. To overflow its 16 bits, 65,000
// attempts to one origin would have to settle while a half switch is
// preempted.
//
// Recorders race with a half switch, unguarded: a guard would cost every
// sample a lock or a retry loop. A recorder that read the current half
// just before a switch adds to the half just filled. That half then holds
// a few more than 256, as it does while its switch is preempted. One that
// read it a whole half earlier may add to the half being cleared. There
// its sample may be erased, or counted in the fill count and not in the
// buckets, or the reverse. So around a switch, each recorder then in
// flight may misplace or lose one sample. The next switch may come that
// many samples early or late, and the rank be off by as many. Never more:
// each switch clears a half's buckets and its fill count together.
type Estimator struct {
	buckets [buckets]atomic.Uint32 // half h's count in bits 16h to 16h+15
	n       [2]atomic.Uint32       // samples recorded in each half since it was cleared
	cur     atomic.Uint32          // index of the current half
	est     atomic.Int64           // the estimate in ns; 0 while cold
}

// Record adds one sample of d. On every Every-th sample of a half, it
// recomputes the estimate of quantile q, in (0, 1). It never allocates.
func (e *Estimator) Record(d time.Duration, q float64) {
	c := e.cur.Load() & 1
	e.buckets[bucket(d)].Add(1 << (16 * c))
	k := e.n[c].Add(1)
	if k == half {
		// This sample fills half c: the other half, the older, goes, and
		// becomes the half that new samples fill.
		o := c ^ 1
		e.n[o].Store(0)
		keep := ^uint32(0xffff << (16 * o))
		for i := range e.buckets {
			if e.buckets[i].Load()&^keep != 0 {
				e.buckets[i].And(keep)
			}
		}
		e.cur.Store(o)
	}
	if k%Every == 0 {
		e.est.Store(int64(e.quantile(q)))
	}
}

// quantile returns the upper bound of the bucket where the cumulative
// count over both halves reaches ⌈q·n⌉, n being their fill counts. It
// returns 0 for an empty histogram. Racing recorders may leave the buckets
// holding fewer samples than the fill counts say: then the rank is the
// last sample held.
func (e *Estimator) quantile(q float64) time.Duration {
	n := uint64(e.n[0].Load()) + uint64(e.n[1].Load())
	rank := uint64(max(ceilFloat(q*float64(n)), 1))
	var cum uint64
	last := -1
	for i := range e.buckets {
		v := e.buckets[i].Load()
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

// Estimate returns the latest estimate of the quantile, and whether the
// estimator is warm. While cold, with fewer than Every samples, it returns
// 0 and false. An estimate beyond the histogram's top is Top. It is one
// atomic load.
func (e *Estimator) Estimate() (d time.Duration, warm bool) {
	v := e.est.Load()
	return time.Duration(v), v != 0
}

// Samples yields each bucket that holds samples: its upper bound, and how
// many it holds over both halves. The estimate is computed from them.
func (e *Estimator) Samples() iter.Seq2[time.Duration, int] {
	return func(yield func(time.Duration, int) bool) {
		for i := range e.buckets {
			if v := e.buckets[i].Load(); v != 0 && !yield(upper(i), int(v&0xffff+v>>16)) {
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
// of requests may hold: ⌈2·(1 − q)·requests⌉, at least 1. That is 10 % at
// q 0.95, twice the share the quantile itself would copy. The margin
// leaves room for an estimate that lags a drift. Yet a distribution
// drifting faster than the estimator cannot spend the whole budget on
// copies.
func CopyCap(q float64, requests int) int {
	return max(ceilFloat(2*(1-q)*float64(requests)), 1)
}

// ceilFloat returns ⌈x⌉ for x ≥ 0, forgiving the rounding error of a
// product of decimal fractions: 2·(1 − 0.95)·100 is 10.000000000000009 in
// float64 and must give 10, not 11.
func ceilFloat(x float64) int {
	return int(math.Ceil(x - x*1e-9))
}

package httpretry

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/httpretry/httpretry/internal/latency"
)

// BudgetConfig sizes a host's retry budget. The budget lets a share of recent
// requests be resent, retries and hedged copies alike. A floor lets a quiet
// host retry its occasional failure.
//
// Its zero value is the default budget. It grants 20 % of the requests of the
// last 10 s. Beyond that share, it grants up to 10 resends in any 10 s while
// the host has floor credit. The host earns that credit back at a fifth of a
// resend per request.
type BudgetConfig struct {
	// Percent is the number of resends allowed per 100 requests in the window,
	// at most 1000; 0 means 20. It is also what each request earns of floor
	// credit: Percent/100 of a resend.
	Percent int
	// MinRetries is the floor. Beyond the share, a resend is granted while the
	// window holds fewer than MinRetries resends and the host has a whole floor
	// credit left. The resend spends that credit. The credit starts full at
	// MinRetries and never holds more. 0 means 10. A negative value means no
	// floor and no credit: the strict form, where a quiet window grants
	// nothing.
	MinRetries int
	// Window is how far back requests and resends are counted; 0 means 10 s.
	Window time.Duration
	// Disabled turns the budget off: resends are bounded only by the policy.
	Disabled bool
	// Hold is how many failed attempts in a row at an origin make a resend to
	// it wait for evidence: the outcome of another attempt, or silence where
	// none can come. After 2·Hold failures in a row the origin is down: a
	// resend with nothing in flight gives up at once, and a request with a
	// deadline parks until the origin answers (see docs/batch.md). 0 means 2;
	// a negative value never holds, the behaviour before Hold existed.
	Hold int
	// HoldFor is the longest a held resend waits for evidence past its
	// backoff; 0 means 1 s. A negative value is invalid.
	HoldFor time.Duration
}

const (
	defaultBudgetPercent    = 20
	defaultBudgetMinRetries = 10
	defaultBudgetWindow     = 10 * time.Second
	defaultBudgetHold       = 2
	defaultBudgetHoldFor    = time.Second

	// budgetBuckets is how many slots a window is cut into: the window
	// rolls forward a tenth at a time, in constant memory.
	budgetBuckets = 10

	// maxBudgetHosts bounds a Budgets registry; past it the least recently
	// used host is forgotten.
	maxBudgetHosts = 10_000

	// budgetSweepEvery is how often an insertion also forgets idle hosts.
	budgetSweepEvery = 10 * time.Second

	// maxBudgetPercent is the largest Percent: ten resends per request,
	// already more than any MaxRetries makes useful, and far from
	// overflow.
	maxBudgetPercent = 1000

	// maxBudgetMinRetries is the largest floor a budget applies.
	maxBudgetMinRetries = 1 << 30
)

// budgetParams is a BudgetConfig with its defaults resolved, kept beside
// the config it came from so that a reload is detected with one comparison.
type budgetParams struct {
	cfg        BudgetConfig
	percent    int64
	minRetries int64
	window     int64 // nanoseconds
	slot       int64 // nanoseconds, window / budgetBuckets
	// hold is BudgetConfig.Hold, 0 when nothing is held; holdFor is
	// BudgetConfig.HoldFor (see outage.go).
	hold    int64
	holdFor time.Duration
}

var defaultBudgetParams = newBudgetParams(BudgetConfig{})

// withDefaults returns c with its zero fields resolved to their defaults,
// so that two configs that mean the same budget compare equal.
func (c BudgetConfig) withDefaults() BudgetConfig {
	if c.Percent == 0 {
		c.Percent = defaultBudgetPercent
	}
	switch {
	case c.MinRetries == 0:
		c.MinRetries = defaultBudgetMinRetries
	case c.MinRetries < 0:
		c.MinRetries = -1
	}
	if c.Window <= 0 {
		c.Window = defaultBudgetWindow
	}
	switch {
	case c.Hold == 0:
		c.Hold = defaultBudgetHold
	case c.Hold < 0:
		c.Hold = -1
	}
	if c.HoldFor <= 0 {
		c.HoldFor = defaultBudgetHoldFor
	}
	return c
}

// problems lists what is wrong with c, each as "Budget.Field text", for
// Policy.Validate.
func (c BudgetConfig) problems() []string {
	var bad []string
	if c.Percent < 0 || c.Percent > maxBudgetPercent {
		bad = append(bad, fmt.Sprintf("Budget.Percent %d is outside 0..%d", c.Percent, maxBudgetPercent))
	}
	if c.Window < 0 {
		bad = append(bad, fmt.Sprintf("Budget.Window %v is negative", c.Window))
	}
	if c.HoldFor < 0 {
		bad = append(bad, fmt.Sprintf("Budget.HoldFor %v is negative", c.HoldFor))
	}
	return bad
}

func newBudgetParams(cfg BudgetConfig) *budgetParams {
	cfg = cfg.withDefaults()
	window := int64(cfg.Window)
	return &budgetParams{
		cfg: cfg,
		// Budgets.For takes configs that Validate never saw: the clamps
		// keep every count of hundredths far from overflowing.
		percent:    min(max(int64(cfg.Percent), 0), maxBudgetPercent),
		minRetries: min(max(int64(cfg.MinRetries), 0), maxBudgetMinRetries),
		window:     window,
		slot:       max(window/budgetBuckets, 1),
		hold:       max(int64(cfg.Hold), 0),
		holdFor:    cfg.HoldFor,
	}
}

// Budget is one host's retry budget. It holds a rolling window of request,
// resend and learned-copy counts, and the host's floor credit (see
// BudgetConfig.MinRetries). It is safe for concurrent use. Obtain one from
// Budgets.For, which keeps both across reloads. The zero Budget is a default
// budget of its own, in no registry.
type Budget struct {
	params atomic.Pointer[budgetParams]
	// cur is the bucket Record adds to while the host is busy, advanced
	// at each slot boundary by ticker, so that Record need not read the
	// clock: measured with BenchmarkBudgetsHotPath/Record, 6 ns a Record
	// against 115 to 155 ns for one that reads it (a busy 2-core VM; 45 ns
	// elsewhere), where BenchmarkGET's whole request costs about 400 ns.
	// nil while the host is idle.
	cur atomic.Pointer[bucket]
	// rec is the record that holds this budget in a Budgets, nil for a
	// Budget of its own: Record stamps the origin's use on it.
	rec *originRecord
	// newest is the start of the newest slot a bucket was opened for, so
	// that Budgets finds its idle hosts with one load per host, not ten.
	newest atomic.Int64
	// mu serialises rolling a bucket over, reserving, reloading, the
	// ticker and the floor credit below.
	mu      sync.Mutex
	ticker  *time.Timer
	buckets [budgetBuckets]bucket
	// ring places the slots on the buckets: the slot starting at s is held
	// by bucketOf(s). A reload that changes the slots turns it so that the
	// bucket Record adds to stays the current one (see rebucket).
	ring int64
	// retired counts the requests of buckets that were emptied for a newer
	// slot, so that retired plus what the buckets hold is every request
	// ever recorded: the credit is earned from that count, under mu, and
	// Record stays one atomic add.
	retired int64
	// paid is the count of requests already turned into credit.
	paid int64
	// debt is how far the floor credit is below full, in hundredths of a
	// resend: the zero Budget starts full.
	debt int64
}

type bucket struct {
	start    atomic.Int64 // Unix nanoseconds at which this bucket's slot began
	requests atomic.Int64
	retries  atomic.Int64
	copies   atomic.Int64 // learned hedged copies (see reserveAt)
}

// BudgetStats counts what a Budget saw in its current window, and what the
// origin's record holds beside it. Its JSON has its field names in lower camel
// case and its durations as duration strings. Budgets.String shows it so.
type BudgetStats struct {
	Requests  int `json:"requests"`  // requests recorded
	Retries   int `json:"retries"`   // resends granted
	Allowance int `json:"allowance"` // Percent·Requests/100: the resends the window's requests earn
	Credit    int `json:"credit"`    // whole floor credits left: resends the floor may still grant beyond Allowance
	// Copies is the hedged copies under a learned delay (Hedge.Quantile)
	// counted in the window, of Retries. They count against the cap on such
	// copies: ⌈2·(1 − Quantile)·Requests⌉, at least 1. A copy refused by the
	// cap is told as ReasonCopyCap.
	Copies int `json:"copies"`
	// HedgeAfter is the origin's learned hedge delay: Hedge.Quantile of its
	// recent times to response headers, not raised to MinAfter. It is 0 while
	// cold, and the histogram's top (about 2m17s) when past it. In JSON it is a
	// duration string, "12.288ms".
	HedgeAfter time.Duration `json:"hedgeAfter"`
	// DemotedFor is how long the origin stays demoted (Policy.Demote); 0 when
	// it is not demoted. In JSON it is a duration string.
	DemotedFor time.Duration `json:"demotedFor"`
	// Streak is the origin's failed attempts in a row, 0 after any answer.
	// From BudgetConfig.Hold of them a resend waits for evidence; from
	// 2·Hold the origin is down.
	Streak int `json:"streak"`
	// Parked is the requests parked at the origin now, waiting for it to
	// answer (see BudgetConfig.Hold). A request whose probe or released
	// resend is in flight is not counted then.
	Parked int `json:"parked"`
}

func (b *Budget) loadParams() *budgetParams {
	if p := b.params.Load(); p != nil {
		return p
	}
	return defaultBudgetParams
}

// Record counts one request. Call it once per request, not per attempt.
// RetryTransport calls it for every request it sends, so its users never
// need to. Call it yourself only for requests that reach the host another
// way but should earn this budget's share, such as those of a client that
// shares the budget without an httpretry transport.
func (b *Budget) Record() { b.recordAt(new(instant)) }

// recordAt is Record at now, which it reads only for a host that was idle.
func (b *Budget) recordAt(now *instant) {
	if b.rec != nil {
		b.rec.stamp()
	}
	if bk := b.cur.Load(); bk != nil {
		bk.requests.Add(1)
		return
	}
	b.startTicking(now.read())
}

// startTicking counts a request of a host that was idle, and keeps cur on
// the current slot's bucket from now on.
func (b *Budget) startTicking(now time.Time) {
	ns := now.UnixNano()
	b.mu.Lock()
	defer b.mu.Unlock()
	bk := b.current(ns)
	bk.requests.Add(1)
	if b.cur.Load() != nil {
		return
	}
	b.cur.Store(bk)
	b.armTicker(ns)
}

// armTicker schedules tick for the next slot boundary. The caller holds mu.
func (b *Budget) armTicker(now int64) {
	slot := b.loadParams().slot
	d := time.Duration(slot - now%slot)
	if b.ticker == nil {
		b.ticker = time.AfterFunc(d, b.tick)
		return
	}
	b.ticker.Reset(d)
}

// tick moves cur to the new slot's bucket, or stops ticking if the slot
// that ended saw no request: an idle host costs no timer.
func (b *Budget) tick() {
	ns := time.Now().UnixNano()
	if b.rec != nil {
		advance(b.rec.clock, ns)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	old := b.cur.Load()
	if old == nil {
		return
	}
	bk := b.current(ns)
	if bk == old {
		// The timer fired early; wait for the boundary.
		b.armTicker(ns)
		return
	}
	if old.requests.Load() == 0 {
		b.cur.Store(nil)
		return
	}
	b.cur.Store(bk)
	b.armTicker(ns)
}

// current returns the bucket of the slot holding now, emptied first if it
// still holds an older slot. The caller holds b.mu.
func (b *Budget) current(now int64) *bucket {
	slot := b.loadParams().slot
	start := now - now%slot
	bk := b.bucketOf(start, slot)
	if bk.start.Load() != start {
		b.retired += bk.requests.Swap(0)
		bk.retries.Store(0)
		bk.copies.Store(0)
		bk.start.Store(start)
	}
	// Outside the branch: a reload may have left the bucket on its slot
	// already, empty (see rebucket).
	if start > b.newest.Load() {
		b.newest.Store(start)
	}
	return bk
}

// bucketOf returns the bucket that holds the slot of length slot starting
// at start. The caller holds b.mu.
func (b *Budget) bucketOf(start, slot int64) *bucket {
	return &b.buckets[(start/slot+b.ring)%budgetBuckets]
}

// TryReserve grants one resend if the budget allows it, and charges it in the
// same step. So concurrent callers cannot overdraw the budget. RetryTransport
// calls it before every resend, hedged copy and resume request. Call it
// yourself only for a resend your own code makes outside httpretry, so that
// the host's budget bounds it too.
//
// A resend is granted while retries+1 ≤ Percent·requests/100 in the window (the
// share). Failing that, it is granted while retries+1 ≤ MinRetries and the host
// has a whole floor credit, which the grant spends. So a window never grants
// more than max(share, MinRetries). Over time, a host's resends beyond its
// share are at most MinRetries plus Percent of its requests.
func (b *Budget) TryReserve() bool { return b.tryReserveAt(time.Now()) }

func (b *Budget) tryReserveAt(now time.Time) bool {
	_, refused := b.reserveAt(now, 0)
	return refused == 0
}

// reserveAt is tryReserveAt that also returns what it charged, so that an
// attempt that is never sent can be refunded: the one reservation of a
// resend, a hedged copy and a resume request. With q > 0 the attempt is a
// copy under a learned delay, which also needs room under the window's cap
// on such copies (see latency.CopyCap): a distribution that drifts faster
// than the estimator must not spend the whole retry budget on copies.
// refused is why nothing was charged, ReasonCopyCap or ReasonBudget; 0
// when the attempt was granted.
func (b *Budget) reserveAt(now time.Time, q float64) (res reservation, refused Reason) {
	ns := now.UnixNano()
	b.mu.Lock()
	defer b.mu.Unlock()
	p := b.loadParams()
	cur := b.current(ns)
	requests, retries, copies := b.window(ns, p)
	if q > 0 && copies+1 > int64(latency.CopyCap(q, int(requests))) {
		return reservation{}, ReasonCopyCap
	}
	grant, spend := grantResend(p, requests, retries, p.floorCap()-b.debt)
	if !grant {
		return reservation{}, ReasonBudget
	}
	if spend {
		b.debt += creditUnit
	}
	cur.retries.Add(1)
	if q > 0 {
		cur.copies.Add(1)
	}
	return reservation{b: b, bucket: cur, start: cur.start.Load(), spent: spend, copy: q > 0}, 0
}

// reservation is one attempt a Budget granted.
type reservation struct {
	b      *Budget // nil: nothing was charged
	bucket *bucket
	start  int64 // the slot the bucket held when it was charged
	spent  bool  // a floor credit was spent
	copy   bool  // a learned copy was counted under its cap
}

// refund gives back a resend that was granted and then not sent, because
// the request's context ended during its wait: it was never a load on the
// upstream. A bucket that has rolled over since keeps its count, which has
// left the window anyway.
func (r reservation) refund() {
	if r.b == nil {
		return
	}
	r.b.mu.Lock()
	defer r.b.mu.Unlock()
	if r.bucket.start.Load() == r.start && r.bucket.retries.Load() > 0 {
		r.bucket.retries.Add(-1)
		if r.copy && r.bucket.copies.Load() > 0 {
			r.bucket.copies.Add(-1)
		}
	}
	if r.spent {
		r.b.debt = max(r.b.debt-creditUnit, 0)
	}
}

// window counts the requests and resends of the window ending at now
// under p, and settles the floor credit every request recorded so far has
// earned: each reading of the budget does both. The caller holds b.mu.
func (b *Budget) window(now int64, p *budgetParams) (requests, retries, copies int64) {
	requests, retries, copies, recorded := b.sum(now, p)
	b.settle(p, recorded)
	return requests, retries, copies
}

// sum adds up the buckets whose slot lies in the window ending at now. The
// bucket of the next slot counts too: another goroutine whose clock read
// came a little later may have opened it, and what it charged there must
// not be overlooked, or two callers on either side of a slot edge could
// both be granted the last resend. recorded is every request the budget
// ever counted. The caller holds b.mu.
func (b *Budget) sum(now int64, p *budgetParams) (requests, retries, copies, recorded int64) {
	recorded = b.retired
	for i := range b.buckets {
		bk := &b.buckets[i]
		n := bk.requests.Load()
		recorded += n
		if s := bk.start.Load(); s > now-p.window && s <= now+p.slot {
			requests += n
			retries += bk.retries.Load()
			copies += bk.copies.Load()
		}
	}
	return requests, retries, copies, recorded
}

// Stats reports the requests and resends counted in the current window, the
// allowance they earn, and the floor credit left. For a budget of a Budgets, it
// also reports the origin's learned hedge delay and demotion.
func (b *Budget) Stats() BudgetStats {
	now := time.Now()
	if b.rec != nil {
		return b.rec.stats(now)
	}
	return b.statsAt(now)
}

func (b *Budget) statsAt(now time.Time) BudgetStats {
	b.mu.Lock()
	defer b.mu.Unlock()
	p := b.loadParams()
	requests, retries, copies := b.window(now.UnixNano(), p)
	return BudgetStats{
		Requests:  int(requests),
		Retries:   int(retries),
		Allowance: int(p.percent * requests / 100),
		Credit:    int((p.floorCap() - b.debt) / creditUnit),
		Copies:    int(copies),
	}
}

// idleAt reports whether the newest slot that counted anything started a
// whole window or more before now.
func (b *Budget) idleAt(now int64) bool {
	return b.newest.Load() <= now-b.loadParams().window
}

// stopTicking leaves the host idle: Record will find no current bucket and
// start ticking again if the budget is still in use.
func (b *Budget) stopTicking() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.cur.Store(nil)
	if b.ticker != nil {
		b.ticker.Stop()
	}
}

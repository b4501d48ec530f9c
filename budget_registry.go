package httpretry

import (
	"cmp"
	"slices"
	"sync"
	"sync/atomic"
)

// Budgets holds the retry budgets of many hosts. Keep one apart from any
// RetryTransport (see WithBudgets). Then rebuilding a transport, for example on
// a configuration reload, keeps what the budgets have counted.
//
// It forgets a host idle for a whole window once its floor credit is full
// again. An idle host that is demoted, or has a learned hedge delay, is not
// forgotten so. It holds at most 10 000 hosts, however their names are spelled.
// When full, it forgets the tenth whose last request is oldest. So a busy host
// is never forgotten while hosts used once come and go.
//
// The zero value is ready to use, and a Budgets is safe for concurrent use.
type Budgets struct {
	// hosts maps a host in canonical form (see canonicalHost) to its
	// *originRecord, and nothing else: whoever writes the URLs chooses the
	// spellings, so a spelling must never cost an entry. Reads take no
	// lock: For runs on every request.
	hosts sync.Map
	// last is the record For found last: most clients talk to one host
	// most of the time, and a hit here skips the map: measured with
	// BenchmarkBudgetsHotPath/For, 12 ns against 50 ns through the map.
	last atomic.Pointer[originRecord]
	// clock is a coarse reading of the time, in Unix nanoseconds, that
	// Record stamps on a budget as the instant of its last request: it
	// moves to now at every insertion, the only moment the registry cuts,
	// and at each slot boundary of a busy budget. So the cut tells apart
	// hosts used on either side of any insertion, and Record reads no
	// clock.
	clock atomic.Int64
	// mu serialises insertions and sweeps.
	mu        sync.Mutex
	size      int // keys in hosts
	lastSweep int64
}

// NewBudgets returns an empty registry.
func NewBudgets() *Budgets { return &Budgets{} }

// For returns host's budget, creating it on first use. A cfg that differs from
// the one the budget has (a reload) is applied, and the counts are kept.
//
// host is URL.Host, with no scheme to say which port is the default. It is
// compared without regard to case, with a port in plain decimal. A port of 443
// is taken as https's default, and 80 as http's. So For("h:443") is the budget
// RetryTransport charges for https://h/, and For("h:80") the one for http://h/.
// An origin may sit on the other scheme's default port, such as https://h:80.
// Range shows its budget as "h:80", but For does not find it.
func (bs *Budgets) For(host string, cfg BudgetConfig) *Budget {
	return bs.forKeyAt(hostKey(host), cfg, new(instant))
}

// hostKey is host, a URL.Host with no scheme, as For keys it.
func hostKey(host string) string {
	scheme := "http"
	if _, port, _ := splitHost(host); decimalPort(port) == "443" {
		scheme = "https"
	}
	return canonicalHost(scheme, host)
}

// forKeyAt is For at now for a host already in canonical form, an
// origin's host, as RetryTransport charges it.
func (bs *Budgets) forKeyAt(key string, cfg BudgetConfig, now *instant) *Budget {
	r := bs.recordAt(key, now)
	r.budget.configureAt(cfg, now)
	return &r.budget
}

// recordAt is the registry's record of key, a canonical host, with no
// budget config applied: what an origin whose budget is disabled still
// needs, its demotion and its learned hedge delay. It reads now only to
// add a host.
func (bs *Budgets) recordAt(key string, now *instant) *originRecord {
	if r := bs.last.Load(); r != nil && r.key == key && !r.evicted.Load() {
		return r
	}
	var r *originRecord
	if v, ok := bs.hosts.Load(key); ok {
		r = v.(*originRecord)
	} else {
		r = bs.insert(key, now.read().UnixNano())
	}
	bs.last.Store(r)
	return r
}

// insert returns the record of key, a canonical host, adding it at the
// instant now if it is not there yet.
func (bs *Budgets) insert(key string, now int64) *originRecord {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	if r, ok := bs.hosts.Load(key); ok {
		return r.(*originRecord)
	}
	if now-bs.lastSweep >= int64(budgetSweepEvery) || bs.size >= maxBudgetHosts {
		bs.sweep(now)
	}
	advance(&bs.clock, now)
	r := newOriginRecord(key, &bs.clock, now)
	bs.hosts.Store(key, r)
	bs.size++
	return r
}

// advance moves clock forward to now, never back.
func advance(clock *atomic.Int64, now int64) {
	for {
		c := clock.Load()
		if now <= c || clock.CompareAndSwap(c, now) {
			return
		}
	}
}

// sweep forgets idle hosts whose floor credit is full and, if the registry
// is still full, the tenth of it recorded least recently, so that a
// registry kept full by many active hosts pays for a scan once per
// thousand insertions, not on every one. The caller holds bs.mu.
func (bs *Budgets) sweep(now int64) {
	bs.lastSweep = now
	type entry struct {
		r    *originRecord
		used int64
	}
	var active []entry
	bs.hosts.Range(func(_, v any) bool {
		if r := v.(*originRecord); r.idleAt(now) {
			bs.forget(r)
		} else {
			active = append(active, entry{r, r.used.Load()})
		}
		return true
	})
	if bs.size < maxBudgetHosts {
		return
	}
	slices.SortFunc(active, func(x, y entry) int { return cmp.Compare(x.used, y.used) })
	for _, e := range active[:max(len(active)/10, 1)] {
		bs.forget(e.r)
	}
}

// forget removes a host. Its budget stops ticking, so that a forgotten
// host is garbage as soon as no request holds it: a registry filled again
// and again keeps no more than its bound alive.
func (bs *Budgets) forget(r *originRecord) {
	r.evicted.Store(true)
	r.budget.stopTicking()
	bs.hosts.Delete(r.key)
	bs.size--
}

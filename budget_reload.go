package httpretry

// configureAt applies cfg at now if it means another budget than the
// current one, reading now only then; the counts are kept. When
// transports sharing a Budgets give one host different configs, the last
// one to send a request wins.
func (b *Budget) configureAt(cfg BudgetConfig, now *instant) {
	p := b.params.Load()
	if p != nil && p.cfg == cfg {
		return // RetryTransport passes resolved configs: the common case
	}
	if cfg = cfg.withDefaults(); p == nil || p.cfg != cfg {
		b.reloadAt(cfg, now.read().UnixNano())
	}
}

// reloadAt applies cfg, whose defaults are resolved, at the instant now.
// A reload keeps what was counted and the floor credit: the requests so
// far are paid in at the old Percent, the credit is capped at the new
// MinRetries, and a new Window, which cuts time into other slots, has the
// counts moved to its slots. A Budget's first config is its own: the
// credit starts full at its MinRetries.
func (b *Budget) reloadAt(cfg BudgetConfig, now int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	old := b.loadParams()
	first := b.params.Load() == nil
	if !first && old.cfg == cfg {
		return // another caller applied it first
	}
	p := newBudgetParams(cfg)
	if !first {
		b.window(now, old)
		b.recap(old, p)
	}
	if p.slot == old.slot {
		b.params.Store(p)
		return
	}
	b.rebucket(now, old, p)
	b.params.Store(p)
	if b.cur.Load() != nil {
		// Record's bucket and the ticker follow the new slots.
		b.cur.Store(b.current(now))
		b.armTicker(now)
	}
}

// rebucket moves the counts of the window that old cut into slots to the
// slots of p, keeping those that still fall inside p's window. A slot of
// old is kept whole, in the slot of p that holds the middle of what it
// still covers of p's window (up to now). Its first instant would age its
// counts by up to a slot at every reload that changes the slots: with two
// windows over one origin, each request a reload, most requests fell out
// of the window within a second. Its last instant would renew them at
// every such reload, so that they never left it. From the middle, the
// error stays within a few of the coarsest slots, however many reloads
// there are. The caller holds b.mu.
//
// Record adds to the bucket it read from cur without the lock, so its
// request may land after the counts were taken: the ring is turned so that
// this bucket holds now's slot of p, and every other bucket is left on one
// of the slots of p's window, so that such a request is counted, and
// counted as now's. Left on no slot, or on an old one, it went uncounted:
// with two windows over one origin, each request a reload, 1 to 4 % of
// the requests fell out of the window.
func (b *Budget) rebucket(now int64, old, p *budgetParams) {
	type counts struct{ at, requests, retries, copies int64 }
	var moved [budgetBuckets]counts
	// first is the start of the oldest slot that sum counts at now under p.
	first := now - p.window - (now-p.window)%p.slot + p.slot
	cur := b.cur.Load()
	for i := range b.buckets {
		bk := &b.buckets[i]
		s := bk.start.Load()
		moved[i] = counts{-1, bk.requests.Swap(0), bk.retries.Swap(0), bk.copies.Swap(0)}
		bk.start.Store(0)
		if s > now-old.window && s <= now+old.slot && s+old.slot > first {
			// The middle of what the slot still covers of p's window.
			lo, hi := max(s, first), min(s+old.slot, now)
			moved[i].at = min(lo+(hi-lo)/2, now)
		}
		if bk == cur {
			b.ring = (int64(i) - (now/p.slot)%budgetBuckets + budgetBuckets) % budgetBuckets
		}
	}
	for k := range int64(budgetBuckets) {
		if s := now - now%p.slot - k*p.slot; s >= 0 {
			b.bucketOf(s, p.slot).start.Store(s)
		}
	}
	for _, m := range moved {
		if m.at < 0 {
			b.retired += m.requests
			continue
		}
		start := m.at - m.at%p.slot
		bk := b.bucketOf(start, p.slot)
		if bk.start.Load() < start {
			bk.start.Store(start)
		}
		bk.requests.Add(m.requests)
		bk.retries.Add(m.retries)
		bk.copies.Add(m.copies)
	}
}

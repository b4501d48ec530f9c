package httpretry

// creditUnit is one floor credit, one resend, in the hundredths the credit
// is kept in: a request earns Percent hundredths, exactly.
const creditUnit = 100

// floorCap is the full floor credit in hundredths: MinRetries resends, or
// none in the strict form.
func (p *budgetParams) floorCap() int64 { return p.minRetries * creditUnit }

// grantResend decides one resend of a host whose window holds requests and
// retries and whose floor credit is credit hundredths: the share of the
// window's requests first; else the floor, while the window's resends stay
// within MinRetries and a whole credit is left, which the grant spends.
func grantResend(p *budgetParams, requests, retries, credit int64) (grant, spend bool) {
	switch {
	case retries+1 <= p.percent*requests/100:
		return true, false
	case retries+1 <= p.minRetries && credit >= creditUnit:
		return true, true
	}
	return false, false
}

// settle pays the requests recorded since the last call into the floor
// credit, at p's Percent each, up to full. Paying late changes nothing:
// nothing spends between two calls. The caller holds b.mu.
func (b *Budget) settle(p *budgetParams, recorded int64) {
	if recorded > b.paid {
		b.debt = max(b.debt-(recorded-b.paid)*p.percent, 0)
		b.paid = recorded
	}
}

// recap carries the floor credit from old's MinRetries to p's: a lower
// MinRetries caps the credit at the new full; a higher one does not top it
// up. The caller holds b.mu and has settled the credit under old.
func (b *Budget) recap(old, p *budgetParams) {
	credit := old.floorCap() - b.debt
	b.debt = p.floorCap() - min(credit, p.floorCap())
}

// creditFullAt reports whether the host's floor credit is full, its
// requests up to now paid in. Budgets forgets only such a host when it is
// idle: forgetting one that is not would hand it a full credit again.
func (b *Budget) creditFullAt(now int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	p := b.loadParams()
	b.window(now, p)
	return b.debt == 0
}

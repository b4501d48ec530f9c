package httpretry

import (
	"fmt"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// creditAt is b's floor credit in hundredths at now, its requests paid in.
func creditAt(b *Budget, now time.Time) int64 {
	b.statsAt(now) // settles
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.loadParams().floorCap() - b.debt
}

func TestGrantResend(t *testing.T) {
	p := newBudgetParams(BudgetConfig{Percent: 20, MinRetries: 10})
	strict := newBudgetParams(BudgetConfig{Percent: 20, MinRetries: -1})
	tests := []struct {
		name                      string
		p                         *budgetParams
		requests, retries, credit int64
		grant, spend              bool
	}{
		{"share", p, 100, 19, 0, true, false},
		{"share first, the credit is kept", p, 100, 0, 1000, true, false},
		{"share spent, floor with a credit", p, 100, 20, 100, false, false},
		{"share spent below the floor, a credit", p, 10, 2, 100, true, true},
		{"below the floor, 0.99 credit", p, 10, 2, 99, false, false},
		{"floor reached", p, 10, 9, 1000, true, true},
		{"floor full", p, 10, 10, 1000, false, false},
		{"quiet, full credit", p, 0, 0, 1000, true, true},
		{"quiet, no credit", p, 0, 0, 0, false, false},
		{"strict, quiet", strict, 0, 0, 0, false, false},
		{"strict, share", strict, 5, 0, 0, true, false},
		{"strict, share spent", strict, 5, 1, 0, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			grant, spend := grantResend(tt.p, tt.requests, tt.retries, tt.credit)
			assert.Equal(t, tt.grant, grant, "grant")
			assert.Equal(t, tt.spend, spend, "spend")
		})
	}
}

// TestBudgetFloorWorkedExample is the worked example of the design's "The
// floor is earned", at fixed instants.
func TestBudgetFloorWorkedExample(t *testing.T) {
	b := newTestBudget(BudgetConfig{Percent: 20, MinRetries: 10})

	// A fresh host with one recorded request: its full credit grants 10.
	b.countAt(bt0)
	assert.Equal(t, 10, reserveAll(t, b, bt0))
	assert.Equal(t, BudgetStats{Requests: 1, Retries: 10, Allowance: 0, Credit: 0}, b.statsAt(bt0))
	assert.Equal(t, int64(0), creditAt(b, bt0), "0.2 earned, capped at full, then 10 spent")

	// A later window, 4 requests: no share, 0.8 credit, nothing.
	later := budgetAt(time.Minute)
	recordTimes(b, 4, later)
	assert.False(t, b.tryReserveAt(later))
	assert.Equal(t, int64(80), creditAt(b, later))
	assert.Equal(t, BudgetStats{Requests: 4, Retries: 0, Allowance: 0, Credit: 0}, b.statsAt(later))

	// 5 requests: the share grants one; the credit, 1.0, is not spent.
	b.countAt(later)
	assert.True(t, b.tryReserveAt(later))
	assert.Equal(t, int64(100), creditAt(b, later))
	assert.Equal(t, BudgetStats{Requests: 5, Retries: 1, Allowance: 1, Credit: 1}, b.statsAt(later))

	// 9 requests: the share (1) is spent; the credit, 1.8, grants one more
	// and keeps 0.8, which grants nothing.
	recordTimes(b, 4, later)
	assert.True(t, b.tryReserveAt(later))
	assert.Equal(t, int64(80), creditAt(b, later))
	assert.False(t, b.tryReserveAt(later))
	assert.Equal(t, BudgetStats{Requests: 9, Retries: 2, Allowance: 1, Credit: 0}, b.statsAt(later))
}

// TestBudgetFloorCreditInHundredths: a request earns Percent hundredths of
// a credit exactly, with no rounding along the way.
func TestBudgetFloorCreditInHundredths(t *testing.T) {
	b := newTestBudget(BudgetConfig{Percent: 33, MinRetries: 2})
	require.Equal(t, 2, reserveAll(t, b, bt0))
	// One request per window: never a share (33/100 of one is 0).
	at := func(k int) time.Time { return budgetAt(time.Duration(k) * time.Minute) }
	for k := 1; k <= 3; k++ {
		b.countAt(at(k))
		assert.False(t, b.tryReserveAt(at(k)), "request %d: %d hundredths", k, 33*k)
	}
	assert.Equal(t, int64(99), creditAt(b, at(3)))
	b.countAt(at(4))
	assert.True(t, b.tryReserveAt(at(4)), "1.32")
	assert.Equal(t, int64(32), creditAt(b, at(4)))
}

// TestBudgetFloorCreditCappedAndNeverNegative: the credit never holds more
// than MinRetries, whatever the traffic, and a refusal spends nothing.
func TestBudgetFloorCreditCappedAndNeverNegative(t *testing.T) {
	b := newTestBudget(BudgetConfig{Percent: 1000, MinRetries: 3})
	recordTimes(b, 1000, bt0)
	assert.Equal(t, int64(300), creditAt(b, bt0), "10 credits a request, capped at 3")
	assert.Equal(t, BudgetStats{Requests: 1000, Allowance: 10000, Credit: 3}, b.statsAt(bt0))

	quiet := budgetAt(time.Hour)
	assert.Equal(t, 3, reserveAll(t, b, quiet))
	for range 100 {
		assert.False(t, b.tryReserveAt(quiet))
	}
	assert.Equal(t, int64(0), creditAt(b, quiet))
}

// TestBudgetFloorStrict: a negative MinRetries has no floor and no credit.
func TestBudgetFloorStrict(t *testing.T) {
	b := newTestBudget(BudgetConfig{MinRetries: -1})
	assert.Equal(t, BudgetStats{}, b.statsAt(bt0))
	recordTimes(b, 100, bt0)
	assert.Equal(t, 20, reserveAll(t, b, bt0), "the share alone")
	assert.Equal(t, BudgetStats{Requests: 100, Retries: 20, Allowance: 20, Credit: 0}, b.statsAt(bt0))
	assert.Equal(t, 0, reserveAll(t, b, budgetAt(time.Hour)), "a quiet window grants nothing")
}

// TestBudgetsReloadKeepsTheCredit: the credit survives a reload through
// Budgets, a new Window included; a lower MinRetries caps it, a higher one
// does not top it up, and the strict form leaves none to come back to.
func TestBudgetsReloadKeepsTheCredit(t *testing.T) {
	bs := NewBudgets()
	cfg := BudgetConfig{Percent: 20, MinRetries: 10, Window: time.Hour}
	b := bs.For("api.example.com", cfg)
	b.Record()
	n := 0
	for b.TryReserve() {
		n++
	}
	require.Equal(t, 10, n)
	require.Equal(t, 0, b.Stats().Credit)

	reload := func(c BudgetConfig) BudgetStats {
		t.Helper()
		require.Same(t, b, bs.For("API.example.com:443", c), "a reload keeps the budget")
		return b.Stats()
	}
	cfg.Window = 2 * time.Hour
	assert.Equal(t, BudgetStats{Requests: 1, Retries: 10, Credit: 0}, reload(cfg), "a new window keeps the spent credit")
	for range 5 {
		b.Record()
	}
	assert.Equal(t, BudgetStats{Requests: 6, Retries: 10, Allowance: 1, Credit: 1}, b.Stats())

	cfg.MinRetries = 20
	assert.Equal(t, 1, reload(cfg).Credit, "raising MinRetries does not top the credit up")
	for range 50 {
		b.Record()
	}
	assert.Equal(t, 11, b.Stats().Credit, "1 + 50 · 0.2, under the new cap of 20")
	cfg.MinRetries = 5
	assert.Equal(t, 5, reload(cfg).Credit, "lowering MinRetries caps it")
	cfg.MinRetries = 20
	assert.Equal(t, 5, reload(cfg).Credit)

	for range 5 {
		b.Record()
	}
	cfg.Percent = 50
	assert.Equal(t, 6, reload(cfg).Credit, "5 + 5 · 0.2: requests before a reload earn at the old Percent")
	for range 2 {
		b.Record()
	}
	assert.Equal(t, 7, b.Stats().Credit, "6 + 2 · 0.5")

	cfg.MinRetries = -1
	assert.Equal(t, 0, reload(cfg).Credit, "strict: no credit")
	cfg.MinRetries = 10
	assert.Equal(t, 0, reload(cfg).Credit, "and none handed back")
}

// TestBudgetsKeepIdleHostsWithCreditToEarn: an idle host whose credit is
// not full is not forgotten, since it would come back with a full credit;
// only the bound on hosts can forget it.
func TestBudgetsKeepIdleHostsWithCreditToEarn(t *testing.T) {
	bs := &Budgets{}
	t0 := bt0.UnixNano()
	spent := bs.insertBudget("spent.example", t0)
	spent.countAt(bt0)
	require.True(t, spent.tryReserveAt(bt0), "a floor grant: 0.8 below full")
	full := bs.insertBudget("full.example", t0)
	full.countAt(bt0)
	require.True(t, full.tryReserveAt(bt0))
	recordTimes(full, 5, bt0) // earns the spent credit back

	bs.insertBudget("later.example", t0+int64(time.Hour))
	assert.ElementsMatch(t, []string{"spent.example", "later.example"}, mapKeys(budgetRegistry(t, bs)))
	bs.insertBudget("much-later.example", t0+int64(24*time.Hour))
	assert.ElementsMatch(t, []string{"spent.example", "much-later.example"}, mapKeys(budgetRegistry(t, bs)))
	assert.Same(t, spent, budgetRegistry(t, bs)["spent.example"])

	// A full registry of busier hosts cuts it with the least active tenth.
	now := t0 + int64(25*time.Hour)
	for i := 0; bs.size < maxBudgetHosts; i++ {
		bs.insertBudget(fmt.Sprintf("h%d.example", i), now).countAt(time.Unix(0, now))
	}
	bs.insertBudget("one-more.example", now)
	assert.NotContains(t, budgetRegistry(t, bs), "spent.example")
}

// TestQuietHostInALongOutage: a quiet client (two requests a window)
// facing an upstream that answers only 503, over many windows, sends its
// requests, its first MinRetries resends, and then one resend per credit
// its requests earn: calls ≤ requests + MinRetries + Percent % of
// requests, where a floor granted afresh in every window would send
// about twice as many.
func TestQuietHostInALongOutage(t *testing.T) {
	const (
		requests   = 50
		minRetries = 3
		percent    = 20
		window     = 60 * time.Millisecond
	)
	up := newUpstream(t, always(http.StatusServiceUnavailable))
	p := fastPolicy(3)
	// The floor's accounting alone: Hold -1, as before point 22, which
	// TestAQuietHostHeldInALongOutage measures with the hold.
	p.Budget = BudgetConfig{Percent: percent, MinRetries: minRetries, Window: window, Hold: -1}
	budgets := NewBudgets()
	var rec recorder
	c := &http.Client{Transport: New(nil, WithPolicy(p), WithBudgets(budgets), WithObserver(rec.observe))}
	for range requests {
		resp, err := c.Get(up.URL)
		require.NoError(t, err)
		require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
		resp.Body.Close()
		// Half a window between requests whatever the machine's pace: never
		// 5 requests in a window, so never a share (20 % of 4 is 0), and
		// every grant after the first request's comes from earned credit.
		time.Sleep(window / 2)
	}

	// The first request spends the full credit (3); each later request
	// earns 0.2, so requests 6, 11, 16, … each get one resend.
	want := requests + minRetries + (requests-1)*percent/100
	assert.EqualValues(t, want, up.calls.Load())
	assert.LessOrEqual(t, up.calls.Load(), int64(requests+minRetries+requests*percent/100))
	t.Logf("%d requests, %d calls: %.2f×", requests, up.calls.Load(), float64(up.calls.Load())/requests)
	resends := 0
	for _, e := range rec.all() {
		if e.Kind == EventRetry {
			resends++
		}
	}
	assert.Equal(t, want-requests, resends)
	host := strings.TrimPrefix(up.URL, "http://")
	assert.Equal(t, 0, budgets.For(host, p.Budget).Stats().Credit)
}

// TestBudgetFloorUnvalidatedConfigs: Budgets.For takes configs Validate
// never saw; out-of-range values neither overflow nor make the credit
// negative.
func TestBudgetFloorUnvalidatedConfigs(t *testing.T) {
	tests := []struct {
		name  string
		cfg   BudgetConfig
		share int
	}{
		{"negative percent: no share, no earnings", BudgetConfig{Percent: -5, MinRetries: 2}, 0},
		{"huge percent: 1000", BudgetConfig{Percent: math.MaxInt, MinRetries: 2}, 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newTestBudget(tt.cfg)
			b.countAt(bt0)
			granted := reserveAll(t, b, bt0)
			s := b.statsAt(bt0)
			assert.Equal(t, tt.share, s.Allowance)
			assert.GreaterOrEqual(t, s.Credit, 0)
			assert.GreaterOrEqual(t, granted, tt.share)
			for k := 1; k <= 3; k++ {
				quiet := budgetAt(time.Duration(k) * time.Hour)
				b.countAt(quiet)
				reserveAll(t, b, quiet)
				assert.GreaterOrEqual(t, b.statsAt(quiet).Credit, 0)
			}
		})
	}

	huge := newTestBudget(BudgetConfig{MinRetries: math.MaxInt})
	recordTimes(huge, 1000, bt0)
	assert.True(t, huge.tryReserveAt(bt0))
	assert.Equal(t, BudgetStats{Requests: 1000, Retries: 1, Allowance: 200, Credit: maxBudgetMinRetries}, huge.statsAt(bt0),
		"a floor of MaxInt is clamped, and a share grant spends no credit")
}

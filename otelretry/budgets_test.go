package otelretry

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/httpretry/httpretry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
)

func TestObserveBudgetsOverLoopback(t *testing.T) {
	srv, other := upstream(t), upstream(t)
	meter, reader := newReader(t)
	budgets := httpretry.NewBudgets()
	reg, err := ObserveBudgets(meter, budgets)
	require.NoError(t, err)

	// Half of the requests may be resent, and no floor: a strict budget
	// whose figures follow from the requests alone, without the hold
	// (Hold -1), which would give the second resend up.
	p := httpretry.DefaultPolicy()
	p.Backoff = httpretry.NoBackoff()
	p.Budget = httpretry.BudgetConfig{Percent: 50, MinRetries: -1, Hold: -1}
	rt := httpretry.New(nil, httpretry.WithPolicy(p), httpretry.WithBudgets(budgets))
	defer rt.CloseIdleConnections()
	for range 4 {
		assert.Equal(t, 200, send(t, rt, http.MethodGet, srv.URL+"/ok"))
	}
	// The fifth request fails for good: 5 requests allow 2 resends, then
	// the budget refuses the third.
	assert.Equal(t, 503, send(t, rt, http.MethodGet, srv.URL+"/down"))
	assert.Equal(t, 200, send(t, rt, http.MethodGet, other.URL+"/ok"))

	host := func(s string) string {
		u, err := url.Parse(s)
		require.NoError(t, err)
		return "server.address=127.0.0.1,server.port=" + u.Port()
	}
	want := func(srvN, otherN int64) map[string]int64 {
		return map[string]int64{host(srv.URL): srvN, host(other.URL): otherN}
	}
	assert.Equal(t, map[string]map[string]int64{
		"httpretry.budget.requests":  want(5, 1),
		"httpretry.budget.retries":   want(2, 0),
		"httpretry.budget.allowance": want(2, 0),
		"httpretry.budget.credit":    want(0, 0),
	}, counts(t, reader))

	require.NoError(t, reg.Unregister())
	assert.Empty(t, counts(t, reader))
}

// TestObserveBudgetsFloorCredit: with the default floor, the credit gauge
// shows what a quiet host has left.
func TestObserveBudgetsFloorCredit(t *testing.T) {
	meter, reader := newReader(t)
	budgets := httpretry.NewBudgets()
	_, err := ObserveBudgets(meter, budgets)
	require.NoError(t, err)

	b := budgets.For("api.example.com:443", httpretry.BudgetConfig{Percent: 20, MinRetries: 10})
	b.Record()
	for range 3 {
		require.True(t, b.TryReserve())
	}
	const attrs = "server.address=api.example.com"
	assert.Equal(t, map[string]map[string]int64{
		"httpretry.budget.requests":  {attrs: 1},
		"httpretry.budget.retries":   {attrs: 3},
		"httpretry.budget.allowance": {attrs: 0},
		"httpretry.budget.credit":    {attrs: 7}, // 10 to start with, 3 spent
	}, counts(t, reader))
}

// failingGauges refuses to make gauges or to register a callback.
type failingGauges struct {
	noop.Meter
	gauge bool
}

func (m failingGauges) Int64ObservableGauge(name string, _ ...metric.Int64ObservableGaugeOption) (metric.Int64ObservableGauge, error) {
	if m.gauge {
		return nil, errors.New("no gauges today")
	}
	return noop.Int64ObservableGauge{}, nil
}

func (failingGauges) RegisterCallback(metric.Callback, ...metric.Observable) (metric.Registration, error) {
	return nil, errors.New("no callbacks today")
}

func TestObserveBudgetsErrors(t *testing.T) {
	_, err := ObserveBudgets(noop.Meter{}, nil)
	assert.EqualError(t, err, "otelretry: ObserveBudgets: nil Budgets")
	_, err = ObserveBudgets(failingGauges{gauge: true}, httpretry.NewBudgets())
	assert.EqualError(t, err, "otelretry: httpretry.budget.requests: no gauges today")
	_, err = ObserveBudgets(failingGauges{}, httpretry.NewBudgets())
	assert.EqualError(t, err, "otelretry: ObserveBudgets: no callbacks today")
}

// TestDemotionsAndLearnedDelaysOverLoopback: an origin demoted after
// failing in a row is counted once by Observer and shown by its gauge
// while it stays demoted; an origin whose hedged requests taught httpretry
// a delay shows it. Neither gauge has a point for a host that has none.
func TestDemotionsAndLearnedDelaysOverLoopback(t *testing.T) {
	primary := upstream(t) // /down answers 503
	backup := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok")
	}))
	t.Cleanup(backup.Close)
	meter, reader := newReader(t)
	observe, err := Observer(meter)
	require.NoError(t, err)
	budgets := httpretry.NewBudgets()
	_, err = ObserveBudgets(meter, budgets)
	require.NoError(t, err)

	p := httpretry.DefaultPolicy()
	p.Backoff = httpretry.NoBackoff()
	p.Fallbacks = []string{backup.URL}
	p.Demote = httpretry.Demote{After: 2, For: time.Hour}
	p.Hedge = httpretry.Hedge{Quantile: 0.9, Max: 1}
	// No copy may go: one to the demoted primary, sent when a slow
	// scheduler holds up an answer past the learned delay, would restore
	// it (any answer does), and the demoted gauge would be gone.
	p.Budget = httpretry.BudgetConfig{Percent: 1, MinRetries: -1}
	rt := httpretry.New(nil, httpretry.WithPolicy(p), httpretry.WithBudgets(budgets), httpretry.WithObserver(observe))
	defer rt.CloseIdleConnections()
	for range 2 {
		assert.Equal(t, 200, send(t, rt, http.MethodGet, primary.URL+"/down")) // the backup's "ok"
	}
	// Demoted, the primary is not called: 32 answers teach the backup's delay.
	for range 32 {
		assert.Equal(t, 200, send(t, rt, http.MethodGet, primary.URL+"/ok"))
	}

	key := func(s string) string {
		u, err := url.Parse(s)
		require.NoError(t, err)
		return "server.address=127.0.0.1,server.port=" + u.Port()
	}
	got := counts(t, reader)
	assert.Equal(t, map[string]int64{"http.request.method=GET," + key(primary.URL): 1}, got["httpretry.demotions"])
	require.Contains(t, got, "httpretry.demoted")
	assert.Equal(t, []string{key(primary.URL)}, keys(got["httpretry.demoted"]))
	assert.Greater(t, got["httpretry.demoted"][key(primary.URL)], int64(30*time.Minute/time.Microsecond), "drawn in [For/2, For]")
	require.Contains(t, got, "httpretry.hedge.delay")
	assert.Equal(t, []string{key(backup.URL)}, keys(got["httpretry.hedge.delay"]))
	assert.Positive(t, got["httpretry.hedge.delay"][key(backup.URL)])
}

func keys(m map[string]int64) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

package otelretry

import (
	"context"
	"errors"
	"fmt"

	"github.com/httpretry/httpretry"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// ObserveBudgets registers with meter observable gauges of the current
// window of every host b holds, each with server.address and, when the
// host's key (as Budgets.Range shows it) has a port, server.port: the
// same attributes Observer gives the events of that origin:
//
//   - httpretry.budget.requests: requests counted in the window;
//   - httpretry.budget.retries: resends and hedged copies granted in it;
//   - httpretry.budget.allowance: the resends the window's requests earn
//     (Percent of them);
//   - httpretry.budget.credit: the floor credits left, the resends the
//     budget may still grant beyond the allowance;
//   - httpretry.hedge.delay: the origin's learned hedge delay in
//     microseconds (BudgetStats.HedgeAfter), for an origin that has
//     learned one (Hedge.Quantile, warm);
//   - httpretry.demoted: how long the origin stays demoted, in
//     microseconds (BudgetStats.DemotedFor), while it is.
//
// Every gauge is an int64 gauge, so that a reader handles them alike.
//
// The figures are read from b (Budgets.Range) when the meter's reader
// collects; nothing is added to the request path. Unregister the returned
// registration to stop. ObserveBudgets fails if b is nil or meter cannot
// make the gauges or register the callback.
func ObserveBudgets(meter metric.Meter, b *httpretry.Budgets) (metric.Registration, error) {
	if b == nil {
		return nil, errors.New("otelretry: ObserveBudgets: nil Budgets")
	}
	var g gauges
	for _, m := range []struct {
		into              *metric.Int64ObservableGauge
		name, unit, descr string
	}{
		{&g.requests, "httpretry.budget.requests", "{request}", "Requests to the host in its retry budget's current window."},
		{&g.retries, "httpretry.budget.retries", "{retry}", "Resends and hedged copies the host's retry budget granted in its current window."},
		{&g.allowance, "httpretry.budget.allowance", "{retry}", "Resends the requests of the host's current window earn."},
		{&g.credit, "httpretry.budget.credit", "{retry}", "Floor credits the host has left: resends its budget may grant beyond the allowance."},
		{&g.hedgeDelay, "httpretry.hedge.delay", "us", "The origin's learned hedge delay: a quantile of its recent times to response headers."},
		{&g.demoted, "httpretry.demoted", "us", "How long the origin stays behind the other candidates of its requests."},
	} {
		gauge, err := meter.Int64ObservableGauge(m.name, metric.WithUnit(m.unit), metric.WithDescription(m.descr))
		if err != nil {
			return nil, fmt.Errorf("otelretry: %s: %w", m.name, err)
		}
		*m.into = gauge
	}
	reg, err := meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		b.Range(func(host string, s httpretry.BudgetStats) bool {
			g.observe(o, host, s)
			return true
		})
		return nil
	}, g.requests, g.retries, g.allowance, g.credit, g.hedgeDelay, g.demoted)
	if err != nil {
		return nil, fmt.Errorf("otelretry: ObserveBudgets: %w", err)
	}
	return reg, nil
}

type gauges struct {
	requests, retries, allowance, credit, hedgeDelay, demoted metric.Int64ObservableGauge
}

func (g *gauges) observe(o metric.Observer, host string, s httpretry.BudgetStats) {
	name, port := splitHost(host)
	attrs := []attribute.KeyValue{keyServerAddress.String(name)}
	if port != 0 {
		attrs = append(attrs, keyServerPort.Int(port))
	}
	set := metric.WithAttributeSet(attribute.NewSet(attrs...))
	o.ObserveInt64(g.requests, int64(s.Requests), set)
	o.ObserveInt64(g.retries, int64(s.Retries), set)
	o.ObserveInt64(g.allowance, int64(s.Allowance), set)
	o.ObserveInt64(g.credit, int64(s.Credit), set)
	// Most hosts learn no delay and are never demoted: they get no point
	// rather than a series of zeros.
	if s.HedgeAfter > 0 {
		o.ObserveInt64(g.hedgeDelay, s.HedgeAfter.Microseconds(), set)
	}
	if s.DemotedFor > 0 {
		o.ObserveInt64(g.demoted, s.DemotedFor.Microseconds(), set)
	}
}

// Package otelretry reports what httpretry does as OpenTelemetry metrics.
//
// Observer counts retries, hedged copies, fallbacks, give-ups, demotions
// and resumes from httpretry's events:
//
//	observe, err := otelretry.Observer(otel.Meter("myservice"))
//	if err != nil {
//		return err
//	}
//	rt := httpretry.New(nil, httpretry.WithObserver(observe))
//
// ObserveBudgets registers gauges of each host's retry budget window
// (httpretry.Budgets).
//
// It lives in a module of its own so that httpretry itself keeps a single
// runtime dependency. It uses only the OpenTelemetry metric API: the
// application chooses and configures the SDK and its exporters.
package otelretry

package otelretry_test

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/httpretry/httpretry"
	"github.com/httpretry/httpretry/otelretry"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

func ExampleObserveBudgets() {
	reader := sdkmetric.NewManualReader()
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer provider.Shutdown(context.Background())

	// The registry the application's transports share (httpretry.WithBudgets).
	budgets := httpretry.NewBudgets()
	reg, err := otelretry.ObserveBudgets(provider.Meter("example"), budgets)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer reg.Unregister()

	// Ten requests to one host, and one resend.
	b := budgets.For("api.example.com", httpretry.BudgetConfig{Percent: 20, MinRetries: 10})
	for range 10 {
		b.Record()
	}
	b.TryReserve()

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		fmt.Println(err)
		return
	}
	var lines []string
	for _, m := range rm.ScopeMetrics[0].Metrics {
		for _, p := range m.Data.(metricdata.Gauge[int64]).DataPoints {
			host, _ := p.Attributes.Value("server.address")
			lines = append(lines, fmt.Sprintf("%s{%s} %d", m.Name, host.AsString(), p.Value))
		}
	}
	slices.Sort(lines)
	fmt.Println(strings.Join(lines, "\n"))
	// Output:
	// httpretry.budget.allowance{api.example.com} 2
	// httpretry.budget.credit{api.example.com} 10
	// httpretry.budget.requests{api.example.com} 10
	// httpretry.budget.retries{api.example.com} 1
}

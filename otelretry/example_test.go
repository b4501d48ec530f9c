package otelretry_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"

	"github.com/httpretry/httpretry"
	"github.com/httpretry/httpretry/otelretry"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

func ExampleObserver() {
	// An upstream that answers 503 to its first two requests.
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) <= 2 {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		io.WriteString(w, "ok")
	}))
	defer srv.Close()

	// In a service the meter comes from otel.Meter; here, an SDK with a
	// reader to print from.
	reader := sdkmetric.NewManualReader()
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer provider.Shutdown(context.Background())

	observe, err := otelretry.Observer(provider.Meter("example"))
	if err != nil {
		fmt.Println(err)
		return
	}
	p := httpretry.DefaultPolicy()
	p.Backoff = httpretry.NoBackoff()
	rt := httpretry.New(nil, httpretry.WithPolicy(p), httpretry.WithObserver(observe))
	defer rt.CloseIdleConnections()
	resp, err := (&http.Client{Transport: rt}).Get(srv.URL)
	if err != nil {
		fmt.Println(err)
		return
	}
	resp.Body.Close()

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		fmt.Println(err)
		return
	}
	for _, m := range rm.ScopeMetrics[0].Metrics {
		for _, p := range m.Data.(metricdata.Sum[int64]).DataPoints {
			method, _ := p.Attributes.Value("http.request.method")
			fmt.Println(m.Name, method.AsString(), p.Value)
		}
	}
	// Output: httpretry.retries GET 2
}

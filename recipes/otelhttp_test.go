package recipes_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/httpretry/httpretry"
)

// resendCount sets the semantic convention's http.request.resend_count on
// the span otelhttp started for this attempt, from httpretry's attempt
// number; a first attempt has none.
type resendCount struct{ next http.RoundTripper }

func (t resendCount) RoundTrip(r *http.Request) (*http.Response, error) {
	if n := httpretry.AttemptFromContext(r.Context()) - 1; n > 0 {
		trace.SpanFromContext(r.Context()).SetAttributes(attribute.Int("http.request.resend_count", n))
	}
	return t.next.RoundTrip(r)
}

// Example_otelhttp shows the spans of one request whose first two attempts
// get 503: otelhttp outside httpretry records the request, inside it records
// each attempt.
func Example_otelhttp() {
	p := quickPolicy()

	for _, c := range []struct {
		name string
		rt   func(tp trace.TracerProvider) http.RoundTripper
	}{
		{"otelhttp outside httpretry", func(tp trace.TracerProvider) http.RoundTripper {
			return otelhttp.NewTransport(httpretry.New(nil, httpretry.WithPolicy(p)),
				otelhttp.WithTracerProvider(tp))
		}},
		{"otelhttp inside httpretry", func(tp trace.TracerProvider) http.RoundTripper {
			return httpretry.New(otelhttp.NewTransport(resendCount{http.DefaultTransport},
				otelhttp.WithTracerProvider(tp)), httpretry.WithPolicy(p))
		}},
	} {
		var calls atomic.Int32
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if calls.Add(1) <= 2 {
				w.Header().Set("Retry-After", "0")
				w.WriteHeader(http.StatusServiceUnavailable)
			}
		}))
		spans := tracetest.NewSpanRecorder()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))

		client := &http.Client{Transport: c.rt(tp)}
		resp, err := client.Get(srv.URL)
		if err != nil {
			fmt.Println(err)
			return
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close() // otelhttp ends its span when the body is closed

		fmt.Printf("%s: %d calls, %d spans\n", c.name, calls.Load(), len(spans.Ended()))
		for _, s := range spans.Ended() {
			var status, resends int64
			for _, kv := range s.Attributes() {
				switch kv.Key {
				case "http.response.status_code":
					status = kv.Value.AsInt64()
				case "http.request.resend_count":
					resends = kv.Value.AsInt64()
				}
			}
			fmt.Printf("  %s status %d resend_count %d\n", s.Name(), status, resends)
		}

		client.CloseIdleConnections()
		srv.Close()
		_ = tp.Shutdown(context.Background())
	}
	// Output:
	// otelhttp outside httpretry: 3 calls, 1 spans
	//   HTTP GET status 200 resend_count 0
	// otelhttp inside httpretry: 3 calls, 3 spans
	//   HTTP GET status 503 resend_count 0
	//   HTTP GET status 503 resend_count 1
	//   HTTP GET status 200 resend_count 2
}

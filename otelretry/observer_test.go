package otelretry

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/httpretry/httpretry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// newReader returns a meter whose measurements reader collects.
func newReader(t *testing.T) (metric.Meter, *sdkmetric.ManualReader) {
	t.Helper()
	reader := sdkmetric.NewManualReader()
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { require.NoError(t, provider.Shutdown(context.Background())) })
	return provider.Meter("otelretry_test"), reader
}

// counts collects every int64 sum and gauge, by instrument name, then by
// attribute set ("k=v,k=v", keys sorted).
func counts(t *testing.T, reader *sdkmetric.ManualReader) map[string]map[string]int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(context.Background(), &rm))
	out := map[string]map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			var points []metricdata.DataPoint[int64]
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				assert.True(t, d.IsMonotonic, m.Name)
				points = d.DataPoints
			case metricdata.Gauge[int64]:
				points = d.DataPoints
			default:
				t.Fatalf("%s: unexpected data %T", m.Name, m.Data)
			}
			byAttrs := map[string]int64{}
			for _, p := range points {
				byAttrs[p.Attributes.Encoded(attribute.DefaultEncoder())] = p.Value
			}
			out[m.Name] = byAttrs
		}
	}
	return out
}

// upstream serves, on loopback:
//
//	/flaky  503 to its first two requests, then 200
//	/down   503 always
//	/slow   its first request stalls (until canceled, or 1 s), later ones answer at once
func upstream(t *testing.T) *httptest.Server {
	t.Helper()
	var mu sync.Mutex
	seen := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		mu.Lock()
		seen[r.URL.Path]++
		n := seen[r.URL.Path]
		mu.Unlock()
		switch {
		case r.URL.Path == "/flaky" && n <= 2, r.URL.Path == "/down":
			http.Error(w, "busy", http.StatusServiceUnavailable)
		case r.URL.Path == "/slow" && n == 1:
			select {
			case <-r.Context().Done():
				return
			case <-time.After(time.Second):
			}
		}
		io.WriteString(w, "ok")
	}))
	t.Cleanup(srv.Close)
	return srv
}

// get sends method to url through rt and returns the status.
func send(t *testing.T, rt http.RoundTripper, method, url string) int {
	t.Helper()
	var body io.Reader
	if method == http.MethodPost {
		body = strings.NewReader("{}")
	}
	req, err := http.NewRequest(method, url, body)
	require.NoError(t, err)
	resp, err := rt.RoundTrip(req)
	require.NoError(t, err)
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

func TestObserverOverLoopback(t *testing.T) {
	srv := upstream(t)
	u, err := url.Parse(srv.URL)
	require.NoError(t, err)
	meter, reader := newReader(t)
	observe, err := Observer(meter)
	require.NoError(t, err)

	p := httpretry.DefaultPolicy()
	p.MaxRetries = 2
	p.Backoff = httpretry.NoBackoff()
	// Every answer but /slow's first comes well within 200 ms on any
	// machine, so it alone is hedged; at 10 ms a loaded machine's slow
	// answer to /flaky or /down could draw a hedge of its own.
	p.Hedge = httpretry.Hedge{After: 200 * time.Millisecond, Max: 1}
	// Hold -1: /down's failures in a row would have the hold refuse
	// /slow's copy (DESIGN point 22, counted under reason=hold); here the
	// copy must go.
	p.Budget.Hold = -1
	rt := httpretry.New(nil, httpretry.WithPolicy(p), httpretry.WithObserver(observe))
	defer rt.CloseIdleConnections()

	assert.Equal(t, 200, send(t, rt, http.MethodGet, srv.URL+"/flaky")) // 2 retries
	assert.Equal(t, 503, send(t, rt, http.MethodGet, srv.URL+"/down"))  // 2 retries, a give-up
	assert.Equal(t, 503, send(t, rt, http.MethodPost, srv.URL+"/down")) // a give-up: no key
	assert.Equal(t, 200, send(t, rt, http.MethodGet, srv.URL+"/slow"))  // a hedged copy wins

	// A transport whose strict budget (no floor) refuses the copy.
	strict := p
	strict.Budget.MinRetries = -1
	rtStrict := httpretry.New(nil, httpretry.WithPolicy(strict), httpretry.WithObserver(observe))
	defer rtStrict.CloseIdleConnections()
	srv2 := upstream(t)
	u2, err := url.Parse(srv2.URL)
	require.NoError(t, err)
	assert.Equal(t, 200, send(t, rtStrict, http.MethodGet, srv2.URL+"/slow"))

	server := "server.address=127.0.0.1,server.port=" + u.Port()
	server2 := "server.address=127.0.0.1,server.port=" + u2.Port()
	assert.Equal(t, map[string]map[string]int64{
		"httpretry.retries": {"http.request.method=GET," + server: 4},
		"httpretry.hedges": {
			"http.request.method=GET," + server:                1,
			"http.request.method=GET,reason=budget," + server2: 1,
		},
		"httpretry.giveups": {
			"http.request.method=GET,reason=exhausted," + server:       1,
			"http.request.method=POST,reason=not-idempotent," + server: 1,
		},
	}, counts(t, reader))
}

// TestObserverEvents feeds events directly: the kinds a plain loopback
// loop does not produce, origins, methods and hosts.
func TestObserverEvents(t *testing.T) {
	meter, reader := newReader(t)
	observe, err := Observer(meter)
	require.NoError(t, err)
	req := func(method, rawURL string) *http.Request {
		r, err := http.NewRequest(method, rawURL, nil)
		require.NoError(t, err)
		return r
	}
	get := req(http.MethodGet, "https://API.example.com/v1/items?token=secret")
	observe(httpretry.Event{Kind: httpretry.EventFallback, Request: get, Attempt: 1, Status: 503, Origin: "https://backup.example.com:8443"})
	observe(httpretry.Event{Kind: httpretry.EventFallback, Request: get, Attempt: 2, Err: errors.New("refused"), Origin: "http://10.0.0.7:80"})
	observe(httpretry.Event{Kind: httpretry.EventGiveUp, Request: get, Attempt: 3, Status: 503, Reason: httpretry.ReasonBudget, Origin: "https://api.example.com"})
	observe(httpretry.Event{Kind: httpretry.EventRetry, Request: req("PURGE", "http://[::1]:9000/x"), Attempt: 1, Status: 502})
	observe(httpretry.Event{Kind: httpretry.EventRetry, Request: req(http.MethodDelete, "http://cache.internal/x"), Attempt: 1, Status: 502})
	observe(httpretry.Event{Kind: httpretry.EventResume, Request: get, Attempt: 1, Err: io.ErrUnexpectedEOF, Offset: 10, Origin: "https://api.example.com"})
	observe(httpretry.Event{Kind: httpretry.EventKind(99), Request: get})

	assert.Equal(t, map[string]map[string]int64{
		"httpretry.fallbacks": {
			"http.request.method=GET,server.address=backup.example.com,server.port=8443": 1,
			"http.request.method=GET,server.address=10.0.0.7":                            1,
		},
		"httpretry.giveups": {"http.request.method=GET,reason=budget,server.address=api.example.com": 1},
		"httpretry.resumes": {"http.request.method=GET,server.address=api.example.com": 1},
		"httpretry.retries": {
			"http.request.method=_OTHER,server.address=::1,server.port=9000": 1,
			"http.request.method=DELETE,server.address=cache.internal":       1,
		},
	}, counts(t, reader))
}

func TestSplitHost(t *testing.T) {
	tests := []struct {
		in   string
		host string
		port int
	}{
		{"api.example.com", "api.example.com", 0},
		{"API.Example.com:8443", "api.example.com", 8443},
		{"api.example.com:443", "api.example.com", 443}, // as http://api.example.com:443 is keyed
		{"api.example.com:80", "api.example.com", 80},   // as https://api.example.com:80 is keyed
		{"[::1]:9000", "::1", 9000},
		{"[::1]", "::1", 0},
		{"h:99999", "h", 0},
		{"h:x", "h", 0},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			host, port := splitHost(tt.in)
			assert.Equal(t, tt.host, host)
			assert.Equal(t, tt.port, port)
		})
	}
}

func TestServer(t *testing.T) {
	tests := []struct {
		origin, url string // Event.Origin, or the request's URL when it is ""
		host        string
		port        int
	}{
		{origin: "https://h", host: "h"},
		{origin: "https://h:80", host: "h", port: 80},
		{origin: "http://h:443", host: "h", port: 443},
		{origin: "http://h:8080", host: "h", port: 8080},
		{origin: "http://h:80", host: "h"},
		{origin: "https://[::1]:8443", host: "::1", port: 8443},
		{url: "https://H:443/x", host: "h"},
		{url: "https://h:80/x", host: "h", port: 80},
		{url: "http://h:80/x", host: "h"},
		{url: "http://h:08080/x", host: "h", port: 8080},
		{},
	}
	for _, tt := range tests {
		t.Run(tt.origin+tt.url, func(t *testing.T) {
			e := httpretry.Event{Origin: tt.origin}
			if tt.url != "" {
				r, err := http.NewRequest(http.MethodGet, tt.url, nil)
				require.NoError(t, err)
				e.Request = r
			}
			host, port := server(e)
			assert.Equal(t, tt.host, host)
			assert.Equal(t, tt.port, port)
		})
	}
}

// TestEventsAndGaugesShareAnOrigin: https://h:80 and https://h are two
// origins with two budgets; the counts of each origin's events carry the
// attributes of its budget's gauges, and no other's.
func TestEventsAndGaugesShareAnOrigin(t *testing.T) {
	meter, reader := newReader(t)
	observe, err := Observer(meter)
	require.NoError(t, err)
	budgets := httpretry.NewBudgets()
	_, err = ObserveBudgets(meter, budgets)
	require.NoError(t, err)
	p := httpretry.DefaultPolicy()
	p.MaxRetries = 1
	p.Backoff = httpretry.NoBackoff()
	refuse := roundTripperFunc(func(*http.Request) (*http.Response, error) { return nil, errors.New("refused") })
	rt := httpretry.New(refuse, httpretry.WithPolicy(p), httpretry.WithBudgets(budgets), httpretry.WithObserver(observe))
	for _, u := range []string{"https://h:80/", "https://H:443/", "http://h:80/"} {
		req, err := http.NewRequest(http.MethodGet, u, nil)
		require.NoError(t, err)
		_, err = rt.RoundTrip(req)
		require.Error(t, err)
	}
	got := counts(t, reader)
	const method = "http.request.method=GET,"
	assert.Equal(t, map[string]int64{method + "server.address=h": 2, method + "server.address=h,server.port=80": 1},
		got["httpretry.retries"])
	assert.Equal(t, map[string]int64{"server.address=h": 2, "server.address=h,server.port=80": 1},
		got["httpretry.budget.requests"], "one budget per origin, with its events' attributes")
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// failingMeter refuses to make counters.
type failingMeter struct{ noop.Meter }

func (failingMeter) Int64Counter(name string, _ ...metric.Int64CounterOption) (metric.Int64Counter, error) {
	return nil, errors.New("no counters today")
}

func TestObserverMeterError(t *testing.T) {
	fn, err := Observer(failingMeter{})
	assert.Nil(t, fn)
	assert.EqualError(t, err, "otelretry: httpretry.retries: no counters today")
}

func TestObserverFallbackOverLoopback(t *testing.T) {
	primary := upstream(t) // /down answers 503
	backup := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok")
	}))
	t.Cleanup(backup.Close)
	meter, reader := newReader(t)
	observe, err := Observer(meter)
	require.NoError(t, err)

	p := httpretry.DefaultPolicy()
	p.Backoff = httpretry.NoBackoff()
	p.Fallbacks = []string{backup.URL}
	rt := httpretry.New(nil, httpretry.WithPolicy(p), httpretry.WithObserver(observe))
	defer rt.CloseIdleConnections()
	assert.Equal(t, 200, send(t, rt, http.MethodGet, primary.URL+"/down"))

	u, err := url.Parse(backup.URL)
	require.NoError(t, err)
	assert.Equal(t, map[string]map[string]int64{
		"httpretry.fallbacks": {"http.request.method=GET,server.address=127.0.0.1,server.port=" + u.Port(): 1},
	}, counts(t, reader))
}

// A body cut mid-stream over loopback is resumed once, and counted so.
func TestObserverResumeOverLoopback(t *testing.T) {
	data := strings.Repeat("0123456789", 20_000)
	var calls int
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		calls++
		first := calls == 1
		mu.Unlock()
		w.Header().Set("Etag", `"v1"`)
		if first {
			w.Header().Set("Content-Length", strconv.Itoa(len(data)))
			io.WriteString(w, data[:100_000])
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler)
		}
		http.ServeContent(w, r, "", time.Time{}, strings.NewReader(data))
	}))
	t.Cleanup(srv.Close)
	meter, reader := newReader(t)
	observe, err := Observer(meter)
	require.NoError(t, err)
	rt := httpretry.New(nil, httpretry.WithObserver(observe))
	defer rt.CloseIdleConnections()
	req, err := http.NewRequest(http.MethodGet, srv.URL, nil)
	require.NoError(t, err)
	resp, err := rt.RoundTrip(req)
	require.NoError(t, err)
	got, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, data, string(got))

	u, err := url.Parse(srv.URL)
	require.NoError(t, err)
	assert.Equal(t, map[string]map[string]int64{
		"httpretry.resumes": {"http.request.method=GET,server.address=127.0.0.1,server.port=" + u.Port(): 1},
	}, counts(t, reader))
}

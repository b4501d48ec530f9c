package httpretry_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"time"

	"github.com/httpretry/httpretry"
)

// flaky answers 503 to its first two requests, then 200.
func flaky() *httptest.Server {
	var n atomic.Int32
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) <= 2 {
			w.Header().Set("Retry-After", "0")
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		io.WriteString(w, "hello")
	}))
}

func Example() {
	srv := flaky()
	defer srv.Close()

	client := &http.Client{Transport: httpretry.New(nil)} // DefaultPolicy
	resp, err := client.Get(srv.URL)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.StatusCode, string(body))
	// Output: 200 hello
}

func ExampleWithObserver() {
	srv := flaky()
	defer srv.Close()

	p := httpretry.DefaultPolicy()
	p.Backoff = httpretry.Fixed(10 * time.Millisecond)
	rt := httpretry.New(nil,
		httpretry.WithPolicy(p),
		httpretry.WithObserver(func(e httpretry.Event) {
			fmt.Printf("%s: attempt %d got %d, next in %v\n", e.Kind, e.Attempt, e.Status, e.Delay)
		}),
	)
	resp, err := (&http.Client{Transport: rt}).Get(srv.URL)
	if err != nil {
		fmt.Println(err)
		return
	}
	resp.Body.Close()
	fmt.Println("final:", resp.StatusCode)
	// Output:
	// retry: attempt 1 got 503, next in 10ms
	// retry: attempt 2 got 503, next in 10ms
	// final: 200
}

func ExampleWithHostPolicy() {
	rt := httpretry.New(nil,
		// Every host: the defaults.
		httpretry.WithPolicy(httpretry.DefaultPolicy()),
		// The payments API: fewer resends, each attempt and the whole call bounded,
		// and a key on every POST so that it may be resent.
		httpretry.WithHostPolicy("payments.internal:8443", httpretry.Policy{
			MaxRetries:         2,
			PerTryTimeout:      2 * time.Second,
			Deadline:           5 * time.Second,
			AutoIdempotencyKey: true,
		}),
		// A host whose requests the policy does not resend; a request can
		// still ask for resends with WithMaxRetries, which wins over it.
		httpretry.WithHostPolicy("legacy.internal", httpretry.Policy{MaxRetries: 0}),
	)
	_ = &http.Client{Transport: rt}
	fmt.Println("configured")
	// Output: configured
}

func ExampleWithBudgets() {
	// One registry for the process: transports rebuilt on a configuration
	// reload keep what the budgets have counted.
	budgets := httpretry.NewBudgets()
	build := func(p httpretry.Policy) http.RoundTripper {
		return httpretry.New(nil, httpretry.WithBudgets(budgets), httpretry.WithPolicy(p))
	}
	_ = build(httpretry.DefaultPolicy())

	b := budgets.For("api.example.com", httpretry.BudgetConfig{Percent: 10, MinRetries: -1})
	for range 30 {
		b.Record()
	}
	granted := 0
	for b.TryReserve() {
		granted++
	}
	fmt.Println("resends granted for 30 requests at 10 %:", granted)
	// Output: resends granted for 30 requests at 10 %: 3
}

func ExampleWithMaxRetries() {
	srv := flaky()
	defer srv.Close()

	// This request must not be resent, whatever the policy says.
	ctx := httpretry.WithMaxRetries(context.Background(), 0)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	resp, err := (&http.Client{Transport: httpretry.New(nil)}).Do(req)
	if err != nil {
		fmt.Println(err)
		return
	}
	resp.Body.Close()
	fmt.Println(resp.StatusCode)
	// Output: 503
}

func ExampleMiddleware() {
	logging := func(next http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			resp, err := next.RoundTrip(r)
			if err == nil {
				fmt.Println(r.Method, r.URL.Path, "->", resp.StatusCode)
			}
			return resp, err
		})
	}
	srv := flaky()
	defer srv.Close()

	p := httpretry.DefaultPolicy()
	p.Backoff = httpretry.NoBackoff()
	retry := httpretry.Middleware(httpretry.WithPolicy(p))
	// Logging inside the retry layer sees every attempt.
	rt := retry(logging(http.DefaultTransport))
	resp, err := (&http.Client{Transport: rt}).Get(srv.URL + "/items")
	if err != nil {
		fmt.Println(err)
		return
	}
	resp.Body.Close()
	// Output:
	// GET /items -> 503
	// GET /items -> 503
	// GET /items -> 200
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func ExampleParseRetryAfter() {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	for _, v := range []string{"120", "Sun, 29 Nov 2026 12:00:30 GMT", "1.5", "soon"} {
		d, ok := httpretry.ParseRetryAfter(v, now)
		fmt.Printf("%-30q %v %v\n", v, d, ok)
	}
	// Output:
	// "120"                          2m0s true
	// "Sun, 29 Nov 2026 12:00:30 GMT" 30s true
	// "1.5"                          0s false
	// "soon"                         0s false
}

func ExampleBackoff_Ceiling() {
	b := httpretry.Exponential(100*time.Millisecond, time.Second)
	var ceilings []string
	for n := 1; n <= 6; n++ {
		ceilings = append(ceilings, b.Ceiling(n).String())
	}
	fmt.Println(b, strings.Join(ceilings, " "))
	fmt.Println(httpretry.DefaultPolicy().Backoff.WithWaitBudget(5 * time.Second))
	// Output:
	// exponential(100ms, 1s) 100ms 200ms 400ms 800ms 1s 1s
	// exponentialJitter(100ms, 2s).WithWaitBudget(5s)
}

func ExamplePolicy_Validate() {
	p := httpretry.Policy{MaxRetries: 20, RetryOn: []int{503, 700}, PerTryTimeout: -time.Second}
	fmt.Println(p.Validate())
	// Output: httpretry: invalid policy: MaxRetries 20 is outside 0..16; RetryOn status 700 is outside 400..599; PerTryTimeout -1s is negative
}

package httpretry_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/httpretry/httpretry"
)

// A tracing or logging middleware placed inside httpretry learns which
// attempt it sees, for example to set http.request.resend_count.
func ExampleAttemptFromContext() {
	srv := flaky()
	defer srv.Close()

	inner := func(base http.RoundTripper) http.RoundTripper {
		return roundTripper(func(r *http.Request) (*http.Response, error) {
			fmt.Println("attempt", httpretry.AttemptFromContext(r.Context()))
			return base.RoundTrip(r)
		})
	}
	p := httpretry.DefaultPolicy()
	p.Backoff = httpretry.NoBackoff()
	client := &http.Client{Transport: httpretry.New(inner(http.DefaultTransport), httpretry.WithPolicy(p))}
	resp, err := client.Get(srv.URL)
	if err != nil {
		fmt.Println(err)
		return
	}
	resp.Body.Close()
	fmt.Println("final:", resp.StatusCode)
	// Output:
	// attempt 1
	// attempt 2
	// attempt 3
	// final: 200
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// One request with its own fallback: the primary refuses connections and
// the standby answers.
func ExampleWithFallbacks() {
	standby := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "from the standby")
	}))
	defer standby.Close()
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	primary := "http://" + ln.Addr().String()
	ln.Close() // nothing listens there now

	rt := httpretry.New(nil, httpretry.WithObserver(func(e httpretry.Event) {
		fmt.Println(e.Kind, "after attempt", e.Attempt)
	}))
	ctx := httpretry.WithFallbacks(context.Background(), standby.URL)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, primary+"/report", nil)
	resp, err := (&http.Client{Transport: rt}).Do(req)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.StatusCode, string(body), resp.Request.URL.Path)
	// Output:
	// fallback after attempt 1
	// 200 from the standby /report
}

// RetryIf decides which outcomes are worth another attempt: here a 500
// as well as the usual statuses. The other checks still apply.
func ExamplePolicy_retryIf() {
	var calls int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls++; calls == 1 {
			http.Error(w, "oops", http.StatusInternalServerError)
			return
		}
		io.WriteString(w, "ok")
	}))
	defer srv.Close()

	p := httpretry.DefaultPolicy()
	p.Backoff = httpretry.Fixed(time.Millisecond)
	p.RetryIf = func(resp *http.Response, err error) bool {
		return err != nil || resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests
	}
	resp, err := (&http.Client{Transport: httpretry.New(nil, httpretry.WithPolicy(p))}).Get(srv.URL)
	if err != nil {
		fmt.Println(err)
		return
	}
	resp.Body.Close()
	fmt.Println(resp.StatusCode, "after", calls, "calls")
	// Output:
	// 200 after 2 calls
}

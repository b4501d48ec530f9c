package bench

import (
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/hashicorp/go-retryablehttp"

	"github.com/httpretry/httpretry"
)

// NameBareTwice is the reference of the resend case: the base transport
// alone, called twice, as a caller that resends by hand would.
const NameBareTwice = "bare-twice"

// ResendStub is an in-process base transport that answers its odd calls
// (the first, the third…) with an empty 503 and its even calls with an
// empty 200, so that a request resent once succeeds. It reads and closes
// request bodies as StubTransport does. It is safe for concurrent use, but
// the alternation only pairs attempts for sequential callers.
type ResendStub struct{ calls atomic.Uint64 }

// RoundTrip consumes the request body and answers 503 or 200 in turn.
func (s *ResendStub) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := StubTransport{}.RoundTrip(req)
	if err == nil && s.calls.Add(1)%2 == 1 {
		resp.StatusCode, resp.Status = http.StatusServiceUnavailable, "503 Service Unavailable"
	}
	return resp, err
}

// ResendLibraries returns the contenders of the resend case, each set to
// resend at once and without a budget, so that the figure is the cost of
// the resend itself: bare called twice, httpretry with NoBackoff and its
// budget disabled, retryablehttp with zero waits, and failsafe as it is
// (it does not wait by default). failsafe-budget is left out: the case has
// no budget.
func ResendLibraries() []Library {
	return []Library{
		{Name: NameBareTwice, Wrap: wrapBare},
		{Name: NameHTTPRetry, Wrap: func(base http.RoundTripper) http.RoundTripper {
			p := httpretry.DefaultPolicy()
			p.Backoff = httpretry.NoBackoff()
			p.Budget.Disabled = true
			return httpretry.New(base, httpretry.WithPolicy(p))
		}},
		{Name: NameRetryableHTTP, Wrap: func(base http.RoundTripper) http.RoundTripper {
			rt := wrapRetryableHTTP(base).(*retryablehttp.RoundTripper)
			rt.Client.RetryWaitMin, rt.Client.RetryWaitMax = 0, 0
			return rt
		}},
		{Name: NameFailsafe, Wrap: wrapFailsafe},
	}
}

// BenchResend returns a benchmark of one GET whose first attempt gets a
// 503 and whose resend gets a 200, through lib around a fresh ResendStub;
// for NameBareTwice, of two calls of the bare stub. The request is built
// once, as in BenchGET; every operation must end with the 200.
func BenchResend(lib Library) func(*testing.B) {
	return func(b *testing.B) {
		client := &http.Client{Transport: lib.Wrap(&ResendStub{})}
		req, err := http.NewRequest(http.MethodGet, stubURL, nil)
		if err != nil {
			b.Fatal(err)
		}
		calls := 1
		if lib.Name == NameBareTwice {
			calls = 2
		}
		b.ReportAllocs()
		for b.Loop() {
			status := 0
			for range calls {
				if status, err = sendStatus(client, req); err != nil {
					b.Fatal(err)
				}
			}
			if status != http.StatusOK {
				b.Fatalf("%s: the operation ended with %d, want 200", lib.Name, status)
			}
		}
	}
}

// sendStatus is send that also returns the response's status.
func sendStatus(client *http.Client, req *http.Request) (int, error) {
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	if cerr := resp.Body.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, fmt.Errorf("bench: read response: %w", err)
	}
	return resp.StatusCode, nil
}

// Package bench compares httpretry with the bare base transport and with its
// peers, go-retryablehttp and failsafe-go, in one process and one run.
//
// Every library wraps the same base http.RoundTripper in each scenario, so
// that a difference between two rows is the difference between the
// middlewares and nothing else. The Go benchmarks in bench_test.go and the
// cmd/benchreport program share the scenario code in this package.
package bench

import (
	"net/http"

	"github.com/failsafe-go/failsafe-go/budget"
	"github.com/failsafe-go/failsafe-go/failsafehttp"
	"github.com/hashicorp/go-cleanhttp"
	"github.com/hashicorp/go-retryablehttp"

	"github.com/httpretry/httpretry"
)

// Library is one contender: a name for the tables and a function that wraps
// a base transport the way that library's users would.
type Library struct {
	Name string
	Wrap func(base http.RoundTripper) http.RoundTripper
}

// The names used in sub-benchmarks and tables.
const (
	NameBare              = "bare"
	NameHTTPRetry         = "httpretry"
	NameHTTPRetryNoBudget = "httpretry-nobudget"
	NameRetryableHTTP     = "retryablehttp"
	NameFailsafe          = "failsafe"
	NameFailsafeBudget    = "failsafe-budget"
)

// Libraries returns the five contenders every scenario measures, bare first
// so that ratios can be taken against the first row.
func Libraries() []Library {
	return []Library{
		{Name: NameBare, Wrap: wrapBare},
		{Name: NameHTTPRetry, Wrap: wrapHTTPRetry},
		{Name: NameRetryableHTTP, Wrap: wrapRetryableHTTP},
		{Name: NameFailsafe, Wrap: wrapFailsafe},
		{Name: NameFailsafeBudget, Wrap: wrapFailsafeBudget},
	}
}

// HerdLibraries returns Libraries with httpretry measured a second time
// with its budget disabled, so that its jitter can be seen on its own.
func HerdLibraries() []Library {
	libs := Libraries()
	out := make([]Library, 0, len(libs)+1)
	for _, l := range libs {
		out = append(out, l)
		if l.Name == NameHTTPRetry {
			out = append(out, Library{Name: NameHTTPRetryNoBudget, Wrap: wrapHTTPRetryNoBudget})
		}
	}
	return out
}

// LibraryByName returns the contender called name, from HerdLibraries.
func LibraryByName(name string) (Library, bool) {
	for _, l := range HerdLibraries() {
		if l.Name == name {
			return l, true
		}
	}
	return Library{}, false
}

func wrapBare(base http.RoundTripper) http.RoundTripper { return base }

// wrapHTTPRetry uses New with no option: DefaultPolicy and a budget
// registry of the transport's own.
func wrapHTTPRetry(base http.RoundTripper) http.RoundTripper {
	return httpretry.New(base)
}

func wrapHTTPRetryNoBudget(base http.RoundTripper) http.RoundTripper {
	p := httpretry.DefaultPolicy()
	p.Budget.Disabled = true
	return httpretry.New(base, httpretry.WithPolicy(p))
}

// wrapRetryableHTTP keeps NewClient's defaults (RetryMax 4, RetryWaitMin
// 1 s, RetryWaitMax 30 s, DefaultRetryPolicy, DefaultBackoff) and changes two
// things only: its inner client sends through base, and its logger is
// silenced, because the default one writes a line to stderr per request and
// per retry, which would measure log I/O rather than retrying.
func wrapRetryableHTTP(base http.RoundTripper) http.RoundTripper {
	c := retryablehttp.NewClient()
	c.HTTPClient.Transport = base
	c.Logger = nil
	return &retryablehttp.RoundTripper{Client: c}
}

// wrapFailsafe uses failsafehttp's own retry policy builder with nothing
// changed: 2 retries, no delay unless the response carries Retry-After,
// 429 and 5xx except 501 retried, and an ExceededError once retries run out.
func wrapFailsafe(base http.RoundTripper) http.RoundTripper {
	return failsafehttp.NewRoundTripper(base, failsafehttp.NewRetryPolicyBuilder().Build())
}

// wrapFailsafeBudget adds failsafe's budget policy with its defaults
// (retries may be at most 20 % of the executions in flight, with at least 3
// concurrent retries always allowed), shared by every request through the
// returned transport.
func wrapFailsafeBudget(base http.RoundTripper) http.RoundTripper {
	rp := failsafehttp.NewRetryPolicyBuilder().WithBudget(budget.New()).Build()
	return failsafehttp.NewRoundTripper(base, rp)
}

// NewLoopbackBase returns the base transport every library wraps in the
// loopback scenarios: cleanhttp's pooled transport, httpretry's and
// retryablehttp's default, with room to keep an idle connection for each of
// up to 256 concurrent clients. With the stock limit (GOMAXPROCS+1) the
// bare transport would close and reopen connections under 50 clients, and
// the run would measure TIME_WAIT churn rather than the middlewares.
func NewLoopbackBase() *http.Transport {
	t := cleanhttp.DefaultPooledTransport()
	t.Proxy = nil // loopback traffic only, whatever the environment says
	t.MaxIdleConns = 256
	t.MaxIdleConnsPerHost = 256
	return t
}

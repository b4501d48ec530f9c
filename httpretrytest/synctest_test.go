package httpretrytest_test

import (
	"io"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/httpretry/httpretry"
	"github.com/httpretry/httpretry/httpretrytest"
)

// seen is an attempt as these tests compare it: its number, what it asked
// for, and when it arrived after the test began.
type seen struct {
	N     int
	URL   string
	Range string
	At    time.Duration
}

func seenSince(start time.Time, attempts []httpretrytest.Attempt) []seen {
	out := make([]seen, len(attempts))
	for i, a := range attempts {
		out[i] = seen{a.N, a.URL, a.Header.Get("Range"), a.At.Sub(start)}
	}
	return out
}

// The package's promise: a transport and its budgets run inside a synctest
// bubble, waits, Retry-After, hedging and a cut body's resend take virtual time, to
// the nanosecond, and synctest.Test returns, which it does only once every
// goroutine of the bubble has ended.
func TestATransportRunsInsideSynctest(t *testing.T) {
	const file = "0123456789abcdef"
	synctest.Test(t, func(t *testing.T) {
		base := httpretrytest.Script().
			On("/flaky", httpretrytest.Status(503), httpretrytest.Status(503), httpretrytest.Status(200)).
			On("/busy", httpretrytest.Status(429).RetryAfter(2*time.Second), httpretrytest.Status(200)).
			On("/slow", httpretrytest.Status(200).Body("slow").After(time.Second), httpretrytest.Status(200).Body("copy")).
			On("/file", httpretrytest.Content(`"v1"`, file).CutAfter(5), httpretrytest.Content(`"v1"`, file))
		p := httpretry.DefaultPolicy()
		p.Backoff = httpretry.Fixed(100 * time.Millisecond)
		p.Hedge = httpretry.Hedge{After: 50 * time.Millisecond}
		p.Resume.MinBytes = 1
		budgets := httpretry.NewBudgets()
		client := &http.Client{Transport: httpretry.New(base, httpretry.WithPolicy(p), httpretry.WithBudgets(budgets))}

		start := time.Now()
		get := func(path string) (string, time.Duration) {
			resp, err := client.Get("http://api.example.com" + path)
			require.NoError(t, err)
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			return string(body), time.Since(start)
		}
		body, done := get("/flaky")
		assert.Equal(t, "", body)
		// Two failures in a row hold the second resend (DESIGN point 22):
		// nothing else is in flight to the origin, so it listens for 1 s
		// (HoldFor) past its 100 ms wait, then goes on its floor credit.
		assert.Equal(t, 1200*time.Millisecond, done, "two waits of 100 ms, the second held 1 s")
		_, done = get("/busy")
		assert.Equal(t, 3200*time.Millisecond, done, "Retry-After: 2 over the backoff's 100 ms")
		body, done = get("/slow")
		assert.Equal(t, "copy", body)
		assert.Equal(t, 3250*time.Millisecond, done, "the copy after 50 ms, not the slow answer after 1 s")
		// /file's 16 bytes are within Prefetch (64 KiB by default), so they
		// are read whole before RoundTrip returns (DESIGN point 24): the
		// cut after 5 bytes is a failed attempt, resent whole after the
		// backoff's 100 ms, where a body handed back as it came was resumed
		// at once with Range: bytes=5-.
		body, done = get("/file")
		assert.Equal(t, file, body)
		assert.Equal(t, 3350*time.Millisecond, done, "the cut answer resent after 100 ms")

		const host = "http://api.example.com"
		assert.Equal(t, []seen{
			{1, host + "/flaky", "", 0},
			{2, host + "/flaky", "", 100 * time.Millisecond},
			{3, host + "/flaky", "", 1200 * time.Millisecond},
			{1, host + "/busy", "", 1200 * time.Millisecond},
			{2, host + "/busy", "", 3200 * time.Millisecond},
			{1, host + "/slow", "", 3200 * time.Millisecond},
			{2, host + "/slow", "", 3250 * time.Millisecond},
			{1, host + "/file", "", 3250 * time.Millisecond},
			{2, host + "/file", "", 3350 * time.Millisecond},
		}, seenSince(start, base.Attempts()))

		var stats []httpretry.BudgetStats
		budgets.Range(func(_ string, s httpretry.BudgetStats) bool {
			stats = append(stats, s)
			return true
		})
		require.Len(t, stats, 1)
		assert.Equal(t, 4, stats[0].Requests)
		assert.Equal(t, 5, stats[0].Retries, "2 retries, 1 after Retry-After, 1 copy, 1 resend of the cut answer")
	})
}

// A budget outlives a test: the first test's 4 failures in a row leave
// the host down for the next (DESIGN point 22), where a resend with
// nothing in flight gives up at once. These are the calls each request to
// an always-503 origin gets, five tests of one request each.
func TestBudgetsAcrossTests(t *testing.T) {
	p := httpretry.DefaultPolicy()
	p.Backoff = httpretry.NoBackoff()
	calls := func(rt http.RoundTripper, base *httpretrytest.Transport) int {
		before := len(base.Attempts())
		resp, err := (&http.Client{Transport: rt}).Get("http://api.example.com/")
		require.NoError(t, err)
		resp.Body.Close()
		return len(base.Attempts()) - before
	}
	tests := []struct {
		name  string
		rt    func(base http.RoundTripper) http.RoundTripper
		calls []int
	}{
		{"one client for every test", func() func(http.RoundTripper) http.RoundTripper {
			var shared http.RoundTripper
			return func(base http.RoundTripper) http.RoundTripper {
				if shared == nil {
					shared = httpretry.New(base, httpretry.WithPolicy(p))
				}
				return shared
			}
		}(), []int{4, 1, 1, 1, 1}},
		{"fresh Budgets per test", func(base http.RoundTripper) http.RoundTripper {
			return httpretry.New(base, httpretry.WithPolicy(p), httpretry.WithBudgets(httpretry.NewBudgets()))
		}, []int{4, 4, 4, 4, 4}},
		{"budget disabled", func(base http.RoundTripper) http.RoundTripper {
			q := p
			q.Budget = httpretry.BudgetConfig{Disabled: true}
			return httpretry.New(base, httpretry.WithPolicy(q))
		}, []int{4, 4, 4, 4, 4}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := httpretrytest.Script(httpretrytest.Status(503))
			var got []int
			for range 5 {
				got = append(got, calls(tt.rt(base), base))
			}
			assert.Equal(t, tt.calls, got)
		})
	}
}

package chaos

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/httpretry/httpretry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestHostileRetryAfter answers the first request with a 503 (or 429)
// carrying a hostile Retry-After and the second with a 200, and measures
// the wait between the two at the server: no wait may exceed
// MaxRetryAfter, none may come earlier than a valid value asked for, and
// garbage must fall back to the local backoff.
func TestHostileRetryAfter(t *testing.T) {
	const maxRetryAfter = 2 * time.Second
	const local = 20 * time.Millisecond
	type want struct {
		end     end
		retried bool
		minWait time.Duration // with retried: the server asked for at least this
		reason  *httpretry.Reason
	}
	tooLong, deadline := httpretry.ReasonRetryAfterTooLong, httpretry.ReasonDeadline
	cases := []struct {
		name     string
		status   int
		values   []string
		deadline time.Duration
		want     want
	}{
		{name: "-1", values: []string{"-1"}, want: want{end: endOK, retried: true}},
		{name: "1e9", values: []string{"1e9"}, want: want{end: endOK, retried: true}},
		{name: "1.5", values: []string{"1.5"}, want: want{end: endOK, retried: true}},
		{name: "20 digits", values: []string{"99999999999999999999"}, want: want{end: endOK, retried: true}},
		{name: "empty", values: []string{""}, want: want{end: endOK, retried: true}},
		{name: "date in 1970", values: []string{"Thu, 01 Jan 1970 00:00:00 GMT"}, want: want{end: endOK, retried: true}},
		{name: "date in 9999", values: []string{"Fri, 31 Dec 9999 23:59:59 GMT"}, want: want{end: endStatus, reason: &tooLong}},
		{name: "1 s", values: []string{"1"}, want: want{end: endOK, retried: true, minWait: time.Second}},
		{name: "429 with 0", status: http.StatusTooManyRequests, values: []string{"0"}, want: want{end: endOK, retried: true}},
		{name: "beyond MaxRetryAfter", values: []string{"5"}, want: want{end: endStatus, reason: &tooLong}},
		{name: "two headers 1 and 3600", values: []string{"1", "3600"}, want: want{end: endStatus, reason: &tooLong}},
		{name: "two headers 0 and 1", values: []string{"0", "1"}, want: want{end: endOK, retried: true, minWait: time.Second}},
		{name: "crosses the deadline", values: []string{"1"}, deadline: 500 * time.Millisecond, want: want{end: endStatus, reason: &deadline}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			status := tc.status
			if status == 0 {
				status = http.StatusServiceUnavailable
			}
			srv := newRawServer(t, func(c *rawConn) {
				for {
					if _, err := c.readRequest(); err != nil {
						return
					}
					if len(c.srv.seen()) > 1 {
						c.write(okResponse(100))
						continue
					}
					var h strings.Builder
					for _, v := range tc.values {
						fmt.Fprintf(&h, "Retry-After: %s\r\n", v)
					}
					c.write(fmt.Sprintf("HTTP/1.1 %d %s\r\n%sContent-Length: 0\r\n\r\n", status, http.StatusText(status), h.String()))
				}
			})
			p := hostilePolicy()
			p.MaxRetries = 1
			p.Backoff = httpretry.Fixed(local)
			p.MaxRetryAfter = maxRetryAfter
			p.Deadline = tc.deadline
			var obs observed
			rt := newRetrying(t, newBase(), p, httpretry.WithObserver(obs.observe))

			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			c := send(ctx, rt, srv.URL(), spec{kind: kindGet, id: "ra", respSize: 100})
			seen := srv.seen()
			require.Empty(t, c.violation)
			assert.Equal(t, tc.want.end, endOf(c), "outcome: %s", statusOf(c))
			assert.LessOrEqual(t, c.elapsed, maxRetryAfter+time.Second, "the call waited longer than MaxRetryAfter")
			if tc.want.retried {
				require.Len(t, seen, 2)
				wait := seen[1].at.Sub(seen[0].at)
				t.Logf("Retry-After %q: retried after %s", tc.values, wait.Round(time.Millisecond))
				assert.GreaterOrEqual(t, wait, tc.want.minWait, "resent earlier than the server asked")
				assert.LessOrEqual(t, wait, max(tc.want.minWait, local)+time.Second, "waited beyond the valid value or the local backoff")
			} else {
				assert.Len(t, seen, 1, "resent a response that should have been returned")
				t.Logf("Retry-After %q: returned %d after %s, give-ups %v", tc.values, c.status, c.elapsed.Round(time.Millisecond), obs.giveUps())
				assert.Less(t, c.elapsed, time.Second, "the response was not returned at once")
			}
			if tc.want.reason != nil {
				assert.Equal(t, []httpretry.Reason{*tc.want.reason}, obs.giveUps())
			}
			rt.CloseIdleConnections()
			assert.Eventually(t, func() bool { return srv.open.Load() == 0 }, 5*time.Second, 5*time.Millisecond)
		})
	}
}

package chaos

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/httpretry/httpretry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// trickle answers each request with a 3-byte body sent one byte a second.
func trickle(c *rawConn) {
	if _, err := c.readRequest(); err != nil {
		return
	}
	c.write("HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\n")
	for i := 0; i < 3; i++ {
		if i > 0 && !c.sleep(time.Second) {
			return
		}
		if _, err := c.Write(payload[i : i+1]); err != nil {
			return
		}
	}
}

// silent reads a request and never answers, holding the connection until
// the client gives up.
func silent(c *rawConn) {
	if _, err := c.readRequest(); err != nil {
		return
	}
	c.drain()
}

// TestSlowPeers covers a body that trickles one byte a second and a server
// that never answers: the per-try timeout stops at response headers and
// never cuts a body, a silent server costs (1+MaxRetries)·PerTryTimeout
// for a GET and one PerTryTimeout for an unkeyed POST, and both the
// policy's Deadline and the context's bound the call.
func TestSlowPeers(t *testing.T) {
	cases := []struct {
		name       string
		script     func(*rawConn)
		kind       reqKind
		perTry     time.Duration
		deadline   time.Duration // the policy's
		ctxTimeout time.Duration
		wantEnd    end
		attempts   int
		minTime    time.Duration
		maxTime    time.Duration
		wantErr    error // errors.Is target, on a RoundTrip or read error
	}{
		// A second for the headers, which come at once, and half the
		// trickle's two seconds: at 200 ms a loaded machine's headers
		// could miss it and cost a resend.
		{name: "trickling body outlives the per-try timeout", script: trickle, kind: kindGet, perTry: time.Second,
			ctxTimeout: 10 * time.Second, wantEnd: endOK, attempts: 1, minTime: 1900 * time.Millisecond, maxTime: 4 * time.Second},
		// Its 3 bytes are read whole inside RoundTrip (point 24), so the
		// context's end cuts that read: a RoundTrip error, not the caller's.
		{name: "trickling body cut by the context", script: trickle, kind: kindGet, perTry: time.Second,
			ctxTimeout: 1500 * time.Millisecond, wantEnd: endRTError, attempts: 1, minTime: 1400 * time.Millisecond, maxTime: 2500 * time.Millisecond,
			wantErr: context.DeadlineExceeded},
		{name: "silent server, GET", script: silent, kind: kindGet, perTry: 200 * time.Millisecond,
			ctxTimeout: 10 * time.Second, wantEnd: endRTError, attempts: 3, minTime: 600 * time.Millisecond, maxTime: 3 * time.Second,
			wantErr: httpretry.ErrAttemptTimeout},
		{name: "silent server, unkeyed POST", script: silent, kind: kindUnkeyedPost, perTry: 200 * time.Millisecond,
			ctxTimeout: 10 * time.Second, wantEnd: endRTError, attempts: 1, minTime: 200 * time.Millisecond, maxTime: 2 * time.Second,
			wantErr: context.DeadlineExceeded},
		{name: "silent server, policy deadline", script: silent, kind: kindKeyedPost, deadline: 400 * time.Millisecond,
			ctxTimeout: 10 * time.Second, wantEnd: endRTError, attempts: 1, minTime: 400 * time.Millisecond, maxTime: 2 * time.Second,
			wantErr: context.DeadlineExceeded},
		{name: "silent server, context deadline", script: silent, kind: kindGet,
			ctxTimeout: 300 * time.Millisecond, wantEnd: endRTError, attempts: 1, minTime: 300 * time.Millisecond, maxTime: 2 * time.Second,
			wantErr: context.DeadlineExceeded},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := newRawServer(t, tc.script)
			p := hostilePolicy()
			p.PerTryTimeout = tc.perTry
			p.Deadline = tc.deadline
			rt := newRetrying(t, newBase(), p)
			ctx, cancel := context.WithTimeout(context.Background(), tc.ctxTimeout)
			defer cancel()
			s := spec{kind: tc.kind, id: "slow", respSize: 3}
			if tc.kind != kindGet {
				s.body = payload[:1000]
			}
			c := send(ctx, rt, srv.URL(), s)
			t.Logf("ended: %s after %d attempts in %s", statusOf(c), len(srv.seen()), c.elapsed.Round(time.Millisecond))
			require.Empty(t, c.violation)
			assert.Equal(t, tc.wantEnd, endOf(c), "outcome: %s", statusOf(c))
			assert.Len(t, srv.seen(), tc.attempts, "requests the server saw")
			assert.GreaterOrEqual(t, c.elapsed, tc.minTime)
			assert.LessOrEqual(t, c.elapsed, tc.maxTime)
			if tc.wantErr != nil {
				err := c.err
				if err == nil {
					err = c.readErr
				}
				assert.True(t, errors.Is(err, tc.wantErr), "error %v does not wrap %v", err, tc.wantErr)
			}
			rt.CloseIdleConnections()
			if c.body != nil {
				assert.Eventually(t, c.body.closed.Load, 2*time.Second, 5*time.Millisecond, "request body never closed")
			}
			assert.Eventually(t, func() bool { return srv.open.Load() == 0 }, 5*time.Second, 5*time.Millisecond)
		})
	}
}

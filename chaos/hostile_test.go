package chaos

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/httpretry/httpretry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// hostilePolicy retries twice with a short fixed wait and no budget, so a
// hostile-response case sees exactly the attempts its outcome allows; its
// per-try timeout only stops a server that never answers, and no answer,
// however large or slow to parse under load, meets it.
func hostilePolicy() httpretry.Policy {
	p := httpretry.DefaultPolicy()
	p.MaxRetries = 2
	p.Backoff = httpretry.Fixed(10 * time.Millisecond)
	p.PerTryTimeout = generousPerTry
	p.MaxRetryAfter = 2 * time.Second
	p.Budget = httpretry.BudgetConfig{Disabled: true}
	return p
}

// okResponse is a keep-alive 200 carrying payload[:n].
func okResponse(n int) string {
	return fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", n, payload[:n])
}

// serveOK answers every further request on c whole, as a healthy server.
func serveOK(c *rawConn, n int) {
	for {
		if _, err := c.readRequest(); err != nil {
			return
		}
		c.write(okResponse(n))
	}
}

// end is how a hostile call should come back.
type end string

const (
	endOK        end = "200, body whole"
	endRTError   end = "RoundTrip error"
	endReadError end = "body read error"
	endStatus    end = "non-200 returned"
)

// endOf classifies a call.
func endOf(c *call) end {
	switch {
	case c.err != nil:
		return endRTError
	case c.readErr != nil:
		return endReadError
	case c.status != http.StatusOK:
		return endStatus
	default:
		return endOK
	}
}

// hostileWant is the expected end and server-side request count of one
// request shape; attempts 0 means "any within MaxRetries".
type hostileWant struct {
	end      end
	attempts int
}

// TestHostileResponses sends each request shape, with and without GetBody,
// to raw servers that break HTTP in one way each, and checks both the
// outcome the caller sees and what the server received.
func TestHostileResponses(t *testing.T) {
	const respSize = 1000
	cases := []struct {
		name     string
		bodySize int
		script   func(c *rawConn)
		want     map[reqKind]hostileWant
	}{
		{
			name: "closed inside the status line",
			script: func(c *rawConn) {
				if _, err := c.readRequest(); err == nil {
					c.write("HTTP/1.1 2")
				}
			},
			want: map[reqKind]hostileWant{
				kindGet: {endRTError, 3}, kindKeyedPost: {endRTError, 3}, kindUnkeyedPost: {endRTError, 1},
			},
		},
		{
			name: "closed after the headers",
			script: func(c *rawConn) {
				if _, err := c.readRequest(); err == nil {
					c.write("HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n")
				}
			},
			want: map[reqKind]hostileWant{
				// A body of known length within Prefetch is read whole before
				// RoundTrip returns (point 24): its cut is a failed attempt,
				// resent, and the last one's ends the call with an error
				// that names it; an unkeyed POST is not read ahead.
				kindGet: {endRTError, 3}, kindKeyedPost: {endRTError, 3}, kindUnkeyedPost: {endReadError, 1},
			},
		},
		{
			name: "closed mid-body",
			script: func(c *rawConn) {
				if _, err := c.readRequest(); err == nil {
					c.write("HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n" + string(payload[:500]))
				}
			},
			want: map[reqKind]hostileWant{
				// A body of known length within Prefetch is read whole before
				// RoundTrip returns (point 24): its cut is a failed attempt,
				// resent, and the last one's ends the call with an error
				// that names it; an unkeyed POST is not read ahead.
				kindGet: {endRTError, 3}, kindKeyedPost: {endRTError, 3}, kindUnkeyedPost: {endReadError, 1},
			},
		},
		{
			name: "chunked, closed mid-body",
			script: func(c *rawConn) {
				if _, err := c.readRequest(); err == nil {
					c.write("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n100\r\n" + string(payload[:256]) + "\r\n")
				}
			},
			want: map[reqKind]hostileWant{
				kindGet: {endReadError, 1}, kindKeyedPost: {endReadError, 1}, kindUnkeyedPost: {endReadError, 1},
			},
		},
		{
			name: "503 closed mid-body, then 200",
			script: func(c *rawConn) {
				if c.n > 1 {
					serveOK(c, respSize)
					return
				}
				if _, err := c.readRequest(); err == nil {
					c.write("HTTP/1.1 503 Service Unavailable\r\nContent-Length: 1000\r\n\r\n" + string(payload[:10]))
				}
			},
			want: map[reqKind]hostileWant{
				kindGet: {endOK, 2}, kindKeyedPost: {endOK, 2}, kindUnkeyedPost: {endReadError, 1},
			},
		},
		{
			// Within net/http's 10 MiB default: an odd but valid answer.
			name: "200 with a 2 MiB header block",
			script: func(c *rawConn) {
				if _, err := c.readRequest(); err == nil {
					c.write("HTTP/1.1 200 OK\r\n" + hugeHeaders(2<<20) + fmt.Sprintf("Content-Length: %d\r\n\r\n%s", respSize, payload[:respSize]))
				}
			},
			want: map[reqKind]hostileWant{
				kindGet: {endOK, 1}, kindKeyedPost: {endOK, 1}, kindUnkeyedPost: {endOK, 1},
			},
		},
		{
			// Beyond net/http's limit: the base refuses it with an error.
			name: "200 with a 12 MiB header block",
			script: func(c *rawConn) {
				if _, err := c.readRequest(); err == nil {
					c.write("HTTP/1.1 200 OK\r\n" + hugeHeaders(12<<20) + "Content-Length: 0\r\n\r\n")
				}
			},
			want: map[reqKind]hostileWant{
				kindGet: {endRTError, 0}, kindKeyedPost: {endRTError, 0}, kindUnkeyedPost: {endRTError, 1},
			},
		},
		{
			name: "503 with a 512 KiB header block, then 200",
			script: func(c *rawConn) {
				if c.n > 1 {
					serveOK(c, respSize)
					return
				}
				if _, err := c.readRequest(); err == nil {
					c.write("HTTP/1.1 503 Service Unavailable\r\n" + hugeHeaders(512<<10) + "Content-Length: 0\r\nConnection: close\r\n\r\n")
				}
			},
			want: map[reqKind]hostileWant{
				kindGet: {endOK, 2}, kindKeyedPost: {endOK, 2}, kindUnkeyedPost: {endStatus, 1},
			},
		},
		{
			name:     "reset during the request body upload",
			bodySize: 256 << 10,
			script: func(c *rawConn) {
				if c.n > 1 {
					serveOK(c, respSize)
					return
				}
				req, err := c.readHead()
				if err != nil {
					return
				}
				if req.Body != nil {
					_, _ = req.Body.Read(make([]byte, 8<<10))
				}
				c.reset()
			},
			want: map[reqKind]hostileWant{
				kindGet: {endOK, 2}, kindKeyedPost: {endOK, 2}, kindUnkeyedPost: {endRTError, 1},
			},
		},
		{
			name:     "503 before the request body is read",
			bodySize: 900 << 10,
			script: func(c *rawConn) {
				if c.n > 1 {
					serveOK(c, respSize)
					return
				}
				if _, err := c.readHead(); err != nil {
					return
				}
				c.write("HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
				// Leave the client mid-upload for a moment, as a busy
				// server that answers before reading would.
				c.sleep(30 * time.Millisecond)
			},
			want: map[reqKind]hostileWant{
				kindGet: {endOK, 2}, kindKeyedPost: {endOK, 2}, kindUnkeyedPost: {endStatus, 1},
			},
		},
	}
	for _, tc := range cases {
		for _, kind := range allKinds {
			for _, getBody := range []bool{false, true} {
				if kind == kindGet && getBody {
					continue
				}
				name := fmt.Sprintf("%s/%s/getbody=%t", tc.name, kind, getBody)
				t.Run(name, func(t *testing.T) {
					srv := newRawServer(t, tc.script)
					base := newBase()
					rt := newRetrying(t, base, hostilePolicy())
					size := tc.bodySize
					if size == 0 {
						size = 4 << 10
					}
					s := spec{kind: kind, id: "h1", respSize: respSize, getBody: getBody}
					if kind != kindGet {
						s.body = payload[:size]
					}
					ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
					defer cancel()
					c := send(ctx, rt, srv.URL(), s)
					want := tc.want[kind]
					t.Logf("ended: %s after %d attempts in %s", statusOf(c), len(srv.seen()), c.elapsed.Round(time.Millisecond))

					require.Empty(t, c.violation)
					assert.Equal(t, want.end, endOf(c), "outcome: %s", statusOf(c))
					checkRawServer(t, srv, want.attempts, hostilePolicy().MaxRetries)
					rt.CloseIdleConnections()
					if c.body != nil {
						assert.Eventually(t, c.body.closed.Load, 2*time.Second, 5*time.Millisecond, "request body never closed")
					}
					assert.Eventually(t, func() bool { return srv.open.Load() == 0 }, 5*time.Second, 5*time.Millisecond,
						"server-side connections still open after CloseIdleConnections: %d", srv.open.Load())
				})
			}
		}
	}
}

// checkRawServer asserts what the server saw: the expected number of
// requests (or at most 1+maxRetries when attempts is 0), and every body it
// read to the end identical to the original.
func checkRawServer(t *testing.T, srv *rawServer, attempts, maxRetries int) {
	t.Helper()
	seen := srv.seen()
	if attempts > 0 {
		assert.Len(t, seen, attempts, "requests the server saw")
	} else {
		assert.LessOrEqual(t, len(seen), 1+maxRetries, "requests the server saw")
	}
	for i, r := range seen {
		if r.complete && r.wantSum != "" {
			assert.Equal(t, r.wantSum, r.bodySum, "attempt %d sent a body that differs from the original", i+1)
		}
	}
}

// hugeHeaders is about size bytes of header lines, cut from one block
// built once so that each attempt does not rebuild megabytes.
func hugeHeaders(size int) string {
	all := headerBlock()
	return all[:len(all)-len(all)%headerLineLen][:size-size%headerLineLen]
}

const headerLineLen = 1009 // len("X-Pad: ") + 1000 + len("\r\n")

var headerBlock = sync.OnceValue(func() string {
	return strings.Repeat("X-Pad: "+strings.Repeat("p", 1000)+"\r\n", (12<<20)/headerLineLen+1)
})

// observed collects events from an observer, safe for concurrent calls.
type observed struct {
	mu     sync.Mutex
	events []httpretry.Event
}

func (o *observed) observe(e httpretry.Event) {
	o.mu.Lock()
	o.events = append(o.events, e)
	o.mu.Unlock()
}

// giveUps returns the reasons of every EventGiveUp.
func (o *observed) giveUps() []httpretry.Reason {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []httpretry.Reason
	for _, e := range o.events {
		if e.Kind == httpretry.EventGiveUp {
			out = append(out, e.Reason)
		}
	}
	return out
}

package httpretry

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRetriesRetryableStatusUntilSuccess(t *testing.T) {
	up := newUpstream(t, failFirst(2))
	var rec recorder
	c := &http.Client{Transport: New(nil, WithPolicy(fastPolicy(3)), WithObserver(rec.observe))}

	resp, err := c.Get(up.URL)
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "ok", readAll(t, resp))
	assert.EqualValues(t, 3, up.calls.Load())
	assert.Equal(t, []EventKind{EventRetry, EventRetry}, rec.kinds())
	for i, e := range rec.all() {
		assert.Equal(t, i+1, e.Attempt)
		assert.Equal(t, http.StatusServiceUnavailable, e.Status)
		assert.NoError(t, e.Err)
	}
}

func TestGivesUpAfterMaxRetriesWithLastResponseIntact(t *testing.T) {
	up := newUpstream(t, always(http.StatusServiceUnavailable))
	var rec recorder
	c := &http.Client{Transport: New(nil, WithPolicy(fastPolicy(2)), WithObserver(rec.observe))}

	resp, err := c.Get(up.URL)
	require.NoError(t, err)
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	assert.Equal(t, "Service Unavailable", readAll(t, resp))
	assert.EqualValues(t, 3, up.calls.Load())
	assert.Equal(t, ReasonExhausted, rec.giveUp(t))
}

func TestAnswersAreNotRetried(t *testing.T) {
	for _, code := range []int{200, 201, 204, 301, 400, 404, 412, 500, 501} {
		t.Run(http.StatusText(code), func(t *testing.T) {
			up := newUpstream(t, always(code))
			var rec recorder
			c := &http.Client{
				Transport:     New(nil, WithPolicy(fastPolicy(3)), WithObserver(rec.observe)),
				CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
			}
			resp, err := c.Get(up.URL)
			require.NoError(t, err)
			resp.Body.Close()
			assert.Equal(t, code, resp.StatusCode)
			assert.EqualValues(t, 1, up.calls.Load())
			assert.Empty(t, rec.all(), "an answer is not a failure: no event")
		})
	}
}

func TestRetryOnListsTheRetriedStatuses(t *testing.T) {
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if n == 1 {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		io.WriteString(w, "ok")
	})
	p := fastPolicy(1)
	p.RetryOn = []int{500}
	resp, err := (&http.Client{Transport: New(nil, WithPolicy(p))}).Get(up.URL)
	require.NoError(t, err)
	assert.Equal(t, "ok", readAll(t, resp))
	assert.EqualValues(t, 2, up.calls.Load())
}

func TestPostWithoutKeyIsNotResent(t *testing.T) {
	up := newUpstream(t, always(http.StatusServiceUnavailable))
	var rec recorder
	c := &http.Client{Transport: New(nil, WithPolicy(fastPolicy(3)), WithObserver(rec.observe))}

	for _, method := range []string{http.MethodPost, http.MethodPatch} {
		up.calls.Store(0)
		body := newTrackedBody("pay 10 EUR")
		req, _ := http.NewRequest(method, up.URL, body)
		resp, err := c.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
		assert.EqualValues(t, 1, up.calls.Load(), method)
		assert.EqualValues(t, 1, body.closes.Load(), "the caller's body is closed once")
	}
	assert.Equal(t, []EventKind{EventGiveUp, EventGiveUp}, rec.kinds())
	for _, e := range rec.all() {
		assert.Equal(t, ReasonNotIdempotent, e.Reason)
	}
}

func TestKeyedPostIsResentWithTheSameBody(t *testing.T) {
	for _, tc := range []struct {
		name, header, policyHeader string
	}{
		{"Idempotency-Key", "Idempotency-Key", ""},
		{"X-Idempotency-Key", "X-Idempotency-Key", ""},
		{"custom header", "X-Request-Id", "x-request-id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := newUpstream(t, failFirst(2))
			p := fastPolicy(3)
			p.IdempotencyHeader = tc.policyHeader
			c := &http.Client{Transport: New(nil, WithPolicy(p))}
			payload := strings.Repeat("order line\n", 1000)
			body := newTrackedBody(payload)
			req, _ := http.NewRequest(http.MethodPost, up.URL, body)
			req.Header.Set(tc.header, "k-1")
			resp, err := c.Do(req)
			require.NoError(t, err)
			assert.Equal(t, "ok", readAll(t, resp))
			require.EqualValues(t, 3, up.calls.Load())
			for i, b := range up.received() {
				assert.Equal(t, payload, string(b), "attempt %d", i+1)
			}
			assert.EqualValues(t, 1, body.closes.Load())
		})
	}
}

func TestBlankKeyDoesNotMakePostResendable(t *testing.T) {
	up := newUpstream(t, always(http.StatusServiceUnavailable))
	req, _ := http.NewRequest(http.MethodPost, up.URL, strings.NewReader("x"))
	req.Header.Set("Idempotency-Key", "  ")
	resp, err := (&http.Client{Transport: New(nil, WithPolicy(fastPolicy(3)))}).Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.EqualValues(t, 1, up.calls.Load())
}

func TestAutoIdempotencyKeySharedByAttemptsAndCallerUntouched(t *testing.T) {
	up := newUpstream(t, failFirst(2))
	p := fastPolicy(3)
	p.AutoIdempotencyKey = true
	req, _ := http.NewRequest(http.MethodPost, up.URL, strings.NewReader("x"))
	req.Header.Set("Content-Type", "text/plain")
	resp, err := (&http.Client{Transport: New(nil, WithPolicy(p))}).Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.EqualValues(t, 3, up.calls.Load())
	keys := up.keys()
	assert.Regexp(t, `^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`, keys[0])
	assert.Equal(t, []string{keys[0], keys[0], keys[0]}, keys)
	assert.Equal(t, http.Header{"Content-Type": {"text/plain"}}, req.Header, "the caller's header is not modified")
}

// refuseFirstDial is a base whose first dial fails as a refused connection
// would, before any byte is written.
func refuseFirstDial() (*http.Transport, *atomic.Int32) {
	var dials atomic.Int32
	tr := &http.Transport{DisableKeepAlives: true}
	var d net.Dialer
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if dials.Add(1) == 1 {
			return nil, &net.OpError{Op: "dial", Net: network, Err: errors.New("connection refused")}
		}
		return d.DialContext(ctx, network, addr)
	}
	return tr, &dials
}

func TestPostThatNeverReachedTheWireIsResent(t *testing.T) {
	up := newUpstream(t, always(http.StatusOK))
	base, dials := refuseFirstDial()
	defer base.CloseIdleConnections()
	var rec recorder
	body := newTrackedBody("pay 10 EUR")
	req, _ := http.NewRequest(http.MethodPost, up.URL, body)
	resp, err := (&http.Client{Transport: New(base, WithPolicy(fastPolicy(3)), WithObserver(rec.observe))}).Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.EqualValues(t, 2, dials.Load())
	assert.EqualValues(t, 1, up.calls.Load())
	assert.Equal(t, [][]byte{[]byte("pay 10 EUR")}, up.received())
	assert.Equal(t, []EventKind{EventRetry}, rec.kinds())
	assert.EqualValues(t, 1, body.closes.Load())
}

func TestPostCutAfterReachingTheWireIsNotResent(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		io.ReadAll(r.Body)
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close() // the request arrived; the answer is lost
		}
	}))
	defer srv.Close()
	var rec recorder
	req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader("pay 10 EUR"))
	resp, err := (&http.Client{Transport: New(nil, WithPolicy(fastPolicy(3)), WithObserver(rec.observe))}).Do(req)
	require.Error(t, err)
	assert.Nil(t, resp)
	assert.EqualValues(t, 1, calls.Load())
	assert.Equal(t, ReasonNotIdempotent, rec.giveUp(t))
}

func TestGetCutByTheServerIsResent(t *testing.T) {
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if n == 1 {
			conn, _, _ := w.(http.Hijacker).Hijack()
			conn.Close()
			return
		}
		io.WriteString(w, "ok")
	})
	resp, err := (&http.Client{Transport: New(nil, WithPolicy(fastPolicy(3)))}).Get(up.URL)
	require.NoError(t, err)
	assert.Equal(t, "ok", readAll(t, resp))
	assert.EqualValues(t, 2, up.calls.Load())
}

func TestGetBodyIsUsedForResendsWithoutCopying(t *testing.T) {
	up := newUpstream(t, failFirst(2))
	payload := bytes.Repeat([]byte("x"), 64<<10)
	req, _ := http.NewRequest(http.MethodPut, up.URL, bytes.NewReader(payload))
	var getBodies atomic.Int32
	orig := req.GetBody
	req.GetBody = func() (io.ReadCloser, error) { getBodies.Add(1); return orig() }
	resp, err := (&http.Client{Transport: New(nil, WithPolicy(fastPolicy(3)))}).Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.EqualValues(t, 2, getBodies.Load(), "once per resend")
	for _, b := range up.received() {
		assert.Equal(t, payload, b)
	}
}

func TestBodyLongerThanMaxReplayBytesIsSentOnceWhole(t *testing.T) {
	up := newUpstream(t, always(http.StatusServiceUnavailable))
	p := fastPolicy(3)
	p.MaxReplayBytes = 1 << 10
	var rec recorder
	payload := strings.Repeat("0123456789abcdef", 4<<10) // 64 KiB
	body := newTrackedBody(payload)
	req, _ := http.NewRequest(http.MethodPut, up.URL, body)
	resp, err := (&http.Client{Transport: New(nil, WithPolicy(p), WithObserver(rec.observe))}).Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	assert.Equal(t, [][]byte{[]byte(payload)}, up.received())
	assert.Equal(t, ReasonBodyNotReplayable, rec.giveUp(t))
	assert.EqualValues(t, 1, body.closes.Load())
}

func TestNegativeMaxReplayBytesNeverRecords(t *testing.T) {
	up := newUpstream(t, always(http.StatusServiceUnavailable))
	p := fastPolicy(3)
	p.MaxReplayBytes = -1
	var rec recorder
	req, _ := http.NewRequest(http.MethodPut, up.URL, newTrackedBody("small"))
	resp, err := (&http.Client{Transport: New(nil, WithPolicy(p), WithObserver(rec.observe))}).Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.EqualValues(t, 1, up.calls.Load())
	assert.Equal(t, ReasonBodyNotReplayable, rec.giveUp(t))
}

// failingBody yields n bytes, then err.
type failingBody struct {
	n      int
	err    error
	closes atomic.Int32
}

func (b *failingBody) Read(p []byte) (int, error) {
	if b.n == 0 {
		return 0, b.err
	}
	k := min(len(p), b.n)
	for i := range p[:k] {
		p[i] = 'x'
	}
	b.n -= k
	return k, nil
}

func (b *failingBody) Close() error { b.closes.Add(1); return nil }

func TestBodyReadErrorEndsTheCall(t *testing.T) {
	up := newUpstream(t, always(http.StatusOK))
	boom := errors.New("disk on fire")
	body := &failingBody{n: 10 << 10, err: boom}
	var rec recorder
	req, _ := http.NewRequest(http.MethodPut, up.URL, body)
	req.ContentLength = 20 << 10
	resp, err := (&http.Client{Transport: New(nil, WithPolicy(fastPolicy(3)), WithObserver(rec.observe))}).Do(req)
	require.Error(t, err)
	assert.Nil(t, resp)
	assert.ErrorIs(t, err, boom)
	assert.Equal(t, ReasonBodyNotReplayable, rec.giveUp(t))
	assert.LessOrEqual(t, up.calls.Load(), int64(1))
	require.Eventually(t, func() bool { return body.closes.Load() == 1 }, 5*time.Second, time.Millisecond)
}

func TestPermanentErrorIsNotRetried(t *testing.T) {
	var rec recorder
	var calls atomic.Int32
	base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		calls.Add(1)
		return http.DefaultTransport.RoundTrip(r)
	})
	req, _ := http.NewRequest(http.MethodGet, "ftp://127.0.0.1/file", nil)
	resp, err := New(base, WithPolicy(fastPolicy(3)), WithObserver(rec.observe)).RoundTrip(req)
	require.Error(t, err)
	assert.Nil(t, resp)
	assert.Contains(t, err.Error(), "unsupported protocol scheme")
	assert.EqualValues(t, 1, calls.Load())
	assert.Equal(t, ReasonNotRetryable, rec.giveUp(t))
}

func TestBudgetRefusesResendsBeyondItsShare(t *testing.T) {
	up := newUpstream(t, always(http.StatusServiceUnavailable))
	p := fastPolicy(3)
	// The window's share and floor alone, as before point 22 (Hold -1): the
	// streak is still counted and shown.
	p.Budget = BudgetConfig{Percent: 10, MinRetries: 2, Window: time.Minute, Hold: -1}
	budgets := NewBudgets()
	var rec recorder
	// Two transports share the registry, as after a configuration reload.
	t1 := New(nil, WithPolicy(p), WithBudgets(budgets), WithObserver(rec.observe))
	t2 := New(nil, WithPolicy(p), WithBudgets(budgets), WithObserver(rec.observe))
	for i := range 10 {
		rt := t1
		if i%2 == 1 {
			rt = t2
		}
		resp, err := (&http.Client{Transport: rt}).Get(up.URL)
		require.NoError(t, err)
		resp.Body.Close()
	}
	// 10 requests at 10 % allow max(2, 1) = 2 resends in all.
	assert.EqualValues(t, 12, up.calls.Load())
	reasons := map[Reason]int{}
	for _, e := range rec.all() {
		if e.Kind == EventGiveUp {
			reasons[e.Reason]++
		}
	}
	assert.Equal(t, map[Reason]int{ReasonBudget: 10}, reasons)
	host := strings.TrimPrefix(up.URL, "http://")
	assert.Equal(t, BudgetStats{Requests: 10, Retries: 2, Allowance: 1, Streak: 12}, budgets.For(host, p.Budget).Stats(),
		"the floor spent; 0.9 credit earned back")
}

func TestWithMaxRetriesOverridesThePolicy(t *testing.T) {
	for _, tc := range []struct {
		name   string
		policy int
		ctx    int
		calls  int64
	}{
		{"zero turns retrying off", 3, 0, 1},
		{"more than the policy", 1, 5, 6},
		{"capped at 16", 1, 100, 17},
		{"negative is zero", 3, -2, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := newUpstream(t, always(http.StatusServiceUnavailable))
			req, _ := http.NewRequestWithContext(WithMaxRetries(context.Background(), tc.ctx), http.MethodGet, up.URL, nil)
			resp, err := (&http.Client{Transport: New(nil, WithPolicy(fastPolicy(tc.policy)))}).Do(req)
			require.NoError(t, err)
			resp.Body.Close()
			assert.Equal(t, tc.calls, up.calls.Load())
		})
	}
}

func TestHostPolicies(t *testing.T) {
	up := newUpstream(t, always(http.StatusServiceUnavailable))
	port := up.URL[strings.LastIndexByte(up.URL, ':')+1:]
	for _, tc := range []struct {
		name  string
		opts  []Option
		calls int64
	}{
		{"every host", []Option{WithPolicy(fastPolicy(2))}, 3},
		{"host wins over every host", []Option{WithPolicy(fastPolicy(2)), WithHostPolicy("127.0.0.1", fastPolicy(1))}, 2},
		{"host:port wins over host", []Option{
			WithHostPolicy("127.0.0.1:"+port, fastPolicy(4)), WithHostPolicy("127.0.0.1", fastPolicy(1))}, 5},
		{"another port does not match", []Option{WithHostPolicy("127.0.0.1:1", fastPolicy(4)), WithPolicy(fastPolicy(0))}, 1},
		{"WithPolicy after WithHostPolicy keeps it", []Option{WithHostPolicy("127.0.0.1", fastPolicy(1)), WithPolicy(fastPolicy(3))}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up.calls.Store(0)
			resp, err := (&http.Client{Transport: New(nil, tc.opts...)}).Get(up.URL)
			require.NoError(t, err)
			resp.Body.Close()
			assert.Equal(t, tc.calls, up.calls.Load())
		})
	}
}

func TestCallersRequestIsNeverModified(t *testing.T) {
	up := newUpstream(t, failFirst(2))
	p := fastPolicy(3)
	p.AutoIdempotencyKey = true
	p.PerTryTimeout = 5 * time.Second
	p.Deadline = 10 * time.Second
	body := newTrackedBody("payload")
	req, _ := http.NewRequest(http.MethodPost, up.URL+"/path?q=1", body)
	req.Header.Set("X-Trace", "abc")
	snapshot := struct {
		method, url string
		header      http.Header
		body        io.ReadCloser
		ctx         context.Context
		length      int64
	}{req.Method, req.URL.String(), req.Header.Clone(), req.Body, req.Context(), req.ContentLength}

	resp, err := New(nil, WithPolicy(p)).RoundTrip(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.EqualValues(t, 3, up.calls.Load())
	assert.Equal(t, snapshot.method, req.Method)
	assert.Equal(t, snapshot.url, req.URL.String())
	assert.Equal(t, snapshot.header, req.Header)
	assert.Same(t, snapshot.body, req.Body)
	assert.Equal(t, snapshot.ctx, req.Context())
	assert.Equal(t, snapshot.length, req.ContentLength)
	assert.Nil(t, req.GetBody)
}

func TestBadInputIsAnErrorNotAPanic(t *testing.T) {
	rt := New(roundTripFunc(func(*http.Request) (*http.Response, error) { return nil, nil }), WithPolicy(fastPolicy(2)))

	_, err := rt.RoundTrip(nil)
	assert.ErrorContains(t, err, "httpretry: nil request")

	body := newTrackedBody("x")
	_, err = rt.RoundTrip(&http.Request{Method: http.MethodPut, Body: body})
	assert.ErrorContains(t, err, "httpretry: nil request URL")
	assert.EqualValues(t, 1, body.closes.Load())

	req, _ := http.NewRequest(http.MethodGet, "http://127.0.0.1:1/", nil)
	resp, err := rt.RoundTrip(req)
	assert.Nil(t, resp)
	assert.ErrorContains(t, err, "neither a response nor an error")

	off := New(roundTripFunc(func(*http.Request) (*http.Response, error) { return nil, nil }), WithPolicy(Policy{}))
	resp, err = off.RoundTrip(req)
	assert.Nil(t, resp)
	assert.ErrorContains(t, err, "neither a response nor an error")
}

func TestNewPanicsOnInvalidOptions(t *testing.T) {
	assert.PanicsWithValue(t, "httpretry: invalid policy: MaxRetries -1 is outside 0..16",
		func() { New(nil, WithPolicy(Policy{MaxRetries: -1})) })
	assert.Panics(t, func() { New(nil, WithHostPolicy("http://x", DefaultPolicy())) })
	assert.Panics(t, func() { New(nil, WithHostPolicy("x", Policy{PerTryTimeout: -1})) })
	assert.Panics(t, func() { Middleware(WithPolicy(Policy{Deadline: -1})) })
}

func TestSwitchingProtocolsIsReturnedUntouched(t *testing.T) {
	type rwc struct {
		io.ReadWriteCloser
	}
	body := &rwc{}
	base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: http.StatusSwitchingProtocols, Body: body, Header: http.Header{}}, nil
	})
	p := fastPolicy(2)
	p.PerTryTimeout = time.Second
	req, _ := http.NewRequest(http.MethodGet, "http://127.0.0.1:1/ws", nil)
	resp, err := New(base, WithPolicy(p)).RoundTrip(req)
	require.NoError(t, err)
	assert.Same(t, body, resp.Body)
}

type closeIdleCounter struct {
	http.RoundTripper
	n atomic.Int32
}

func (c *closeIdleCounter) CloseIdleConnections() { c.n.Add(1) }

func TestCloseIdleConnectionsIsForwarded(t *testing.T) {
	base := &closeIdleCounter{RoundTripper: http.DefaultTransport}
	New(base).CloseIdleConnections()
	assert.EqualValues(t, 1, base.n.Load())
	New(roundTripFunc(nil)).CloseIdleConnections() // a base without it: no panic
}

func TestDiscardedResponsesKeepTheirConnection(t *testing.T) {
	var conns atomic.Int32
	up := newUpstream(t, failFirst(3), func(s *http.Server) {
		s.ConnState = func(_ net.Conn, s http.ConnState) {
			if s == http.StateNew {
				conns.Add(1)
			}
		}
	})
	base := &http.Transport{}
	defer base.CloseIdleConnections()
	resp, err := (&http.Client{Transport: New(base, WithPolicy(fastPolicy(3)))}).Get(up.URL)
	require.NoError(t, err)
	assert.Equal(t, "ok", readAll(t, resp))
	assert.EqualValues(t, 4, up.calls.Load())
	assert.EqualValues(t, 1, conns.Load(), "every attempt used the one connection")
}

func TestPerTryTimeoutStopsAtHeaders(t *testing.T) {
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request, n int) {
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		time.Sleep(800 * time.Millisecond) // well past PerTryTimeout
		io.WriteString(w, "late but whole")
	})
	p := fastPolicy(2)
	// Flushed headers meet 500 ms on any machine; at 100 ms a loaded one
	// could miss it and resend.
	p.PerTryTimeout = 500 * time.Millisecond
	resp, err := (&http.Client{Transport: New(nil, WithPolicy(p))}).Get(up.URL)
	require.NoError(t, err)
	assert.Equal(t, "late but whole", readAll(t, resp))
	assert.EqualValues(t, 1, up.calls.Load())
}

func TestPerTryTimeoutRetriesASlowAttempt(t *testing.T) {
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if n == 1 {
			<-r.Context().Done() // hangs until the client gives up on it
			return
		}
		io.WriteString(w, "ok")
	})
	p := fastPolicy(2)
	// The second attempt must beat it: at 100 ms a loaded machine could
	// time it out too.
	p.PerTryTimeout = 500 * time.Millisecond
	var rec recorder
	start := time.Now()
	resp, err := (&http.Client{Transport: New(nil, WithPolicy(p), WithObserver(rec.observe))}).Get(up.URL)
	require.NoError(t, err)
	assert.Equal(t, "ok", readAll(t, resp))
	assert.Less(t, time.Since(start), 5*time.Second)
	events := rec.all()
	require.Len(t, events, 1)
	assert.ErrorIs(t, events[0].Err, ErrAttemptTimeout)
	assert.ErrorIs(t, events[0].Err, context.DeadlineExceeded)
}

func TestConcurrentUseUnderRace(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]bool{}
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request, _ int) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		first := !seen[string(b)]
		seen[string(b)] = true
		mu.Unlock()
		if first {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		w.Write(b)
	})
	p := DefaultPolicy()
	p.Backoff = Fixed(time.Millisecond)
	p.Budget.Disabled = true
	c := &http.Client{Transport: New(nil, WithPolicy(p))}
	var wg sync.WaitGroup
	var ok atomic.Int32
	for g := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 10 {
				want := strings.Repeat(string(rune('a'+g)), i+1)
				req, _ := http.NewRequest(http.MethodPut, up.URL, io.NopCloser(strings.NewReader(want)))
				resp, err := c.Do(req)
				if !assert.NoError(t, err) {
					return
				}
				if got := readAll(t, resp); resp.StatusCode == http.StatusOK && assert.Equal(t, want, got) {
					ok.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	assert.EqualValues(t, 200, ok.Load())
	assert.EqualValues(t, 400, up.calls.Load(), "each request failed once and was resent once")
}

// The happy path allocates nothing over a plain base (an
// *http.Transport), and one allocation over an opaque one, the nesting
// mark of its first attempt (point 20). Counted over what the base alone
// allocates.
func TestHappyPathDoesNotAllocate(t *testing.T) {
	resp := &http.Response{StatusCode: http.StatusOK, Body: http.NoBody}
	plain := plainBase(roundTripFunc(func(*http.Request) (*http.Response, error) { return resp, nil }))
	opaque := roundTripFunc(plain.RoundTrip)
	req, _ := http.NewRequest(http.MethodGet, "http://api.example.com/items", nil)
	put, _ := http.NewRequest(http.MethodPut, "http://api.example.com/items", strings.NewReader("x"))
	post, _ := http.NewRequest(http.MethodPost, "http://api.example.com/items", strings.NewReader("x"))
	hedging := DefaultPolicy()
	hedging.Hedge = Hedge{Quantile: 0.95, After: 50 * time.Millisecond}
	keying := DefaultPolicy()
	keying.AutoIdempotencyKey = true // keys POST and PATCH only: a GET needs no header of its own
	for _, tc := range []struct {
		name string
		p    Policy
		req  *http.Request
	}{
		{"GET", DefaultPolicy(), req},
		{"PUT with GetBody", DefaultPolicy(), put},
		{"unkeyed POST with GetBody", DefaultPolicy(), post},
		{"unkeyed POST under a hedging policy", hedging, post},
		{"GET under an auto-keying policy", keying, req},
		{"GET with a fallback", withFallbacks(DefaultPolicy(), "http://standby.example.com"), req},
		{"GET passed through", Policy{}, req},
	} {
		bare := testing.AllocsPerRun(100, func() { plain.RoundTrip(tc.req) })
		for want, base := range []http.RoundTripper{plain, opaque} {
			rt := New(base, WithPolicy(tc.p))
			rt.RoundTrip(tc.req) // creates the host's budget
			assert.Equal(t, float64(want), testing.AllocsPerRun(100, func() { rt.RoundTrip(tc.req) })-bare,
				"%s, opaque %v", tc.name, rt.opaque)
		}
	}
}

func TestGetBodyFailureEndsTheLoopWithTheLastResponse(t *testing.T) {
	up := newUpstream(t, always(http.StatusServiceUnavailable))
	req, _ := http.NewRequest(http.MethodPut, up.URL, strings.NewReader("x"))
	req.GetBody = func() (io.ReadCloser, error) { return nil, errors.New("gone") }
	var rec recorder
	resp, err := New(nil, WithPolicy(fastPolicy(3)), WithObserver(rec.observe)).RoundTrip(req)
	require.NoError(t, err)
	assert.Equal(t, "Service Unavailable", readAll(t, resp))
	assert.EqualValues(t, 1, up.calls.Load())
	assert.Equal(t, ReasonBodyNotReplayable, rec.giveUp(t))
}

func TestResponseWithoutBodyReleasesItsAttemptAtOnce(t *testing.T) {
	var attemptCtx context.Context
	base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		attemptCtx = r.Context()
		return &http.Response{StatusCode: http.StatusNoContent, Body: http.NoBody, Header: http.Header{}}, nil
	})
	p := fastPolicy(2)
	p.PerTryTimeout = time.Minute
	req, _ := http.NewRequest(http.MethodGet, "http://api.example.com/", nil)
	resp, err := New(base, WithPolicy(p)).RoundTrip(req)
	require.NoError(t, err)
	assert.Equal(t, http.NoBody, resp.Body)
	assert.ErrorIs(t, attemptCtx.Err(), context.Canceled, "nothing left to read: released")
}

// A base that breaks the contract with a response and an error together:
// the error is kept and the response closed, retrying on or off.
func TestResponseWithAnErrorKeepsTheError(t *testing.T) {
	for _, n := range []int{0, 2} {
		t.Run(fmt.Sprint("MaxRetries ", n), func(t *testing.T) {
			var bodies []*trackedBody
			base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
				b := newTrackedBody("payload")
				bodies = append(bodies, b)
				return &http.Response{StatusCode: 200, Header: http.Header{}, Body: b, Request: r}, errors.New("broken base")
			})
			req, _ := http.NewRequestWithContext(WithMaxRetries(context.Background(), n), http.MethodGet, "http://h.test/", nil)
			resp, err := New(base, WithPolicy(fastPolicy(2))).RoundTrip(req)
			assert.Nil(t, resp)
			assert.ErrorContains(t, err, "broken base")
			assert.True(t, strings.HasPrefix(err.Error(), "httpretry: "), err.Error())
			assert.Len(t, bodies, n+1)
			for _, b := range bodies {
				assert.EqualValues(t, 1, b.closes.Load())
			}
		})
	}
}

func TestErrorsCarryThePrefixWithRetryingOff(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	ln.Close() // refused
	base := &http.Transport{}
	defer base.CloseIdleConnections()
	req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/", nil)
	_, err = New(base, WithPolicy(Policy{})).RoundTrip(req)
	require.Error(t, err)
	assert.True(t, strings.HasPrefix(err.Error(), "httpretry: "), err.Error())
	var op *net.OpError
	assert.ErrorAs(t, err, &op, "the cause is still found")
}

func TestContentLengthMismatchIsNotRetried(t *testing.T) {
	up := newUpstream(t, always(200))
	var rec recorder
	base := &http.Transport{}
	defer base.CloseIdleConnections()
	req, _ := http.NewRequest(http.MethodPut, up.URL, strings.NewReader("short"))
	req.ContentLength = 10
	_, err := New(base, WithPolicy(fastPolicy(3)), WithObserver(rec.observe)).RoundTrip(req)
	assert.ErrorContains(t, err, "ContentLength=10 with Body length 5")
	assert.LessOrEqual(t, up.calls.Load(), int64(1))
	assert.Equal(t, ReasonNotRetryable, rec.giveUp(t))
}

func TestZeroRetryTransportWorks(t *testing.T) {
	up := newUpstream(t, failFirst(1))
	var rt RetryTransport
	req, _ := http.NewRequest(http.MethodGet, up.URL, nil)
	resp, err := rt.RoundTrip(req)
	require.NoError(t, err)
	assert.Equal(t, "ok", readAll(t, resp))
	assert.EqualValues(t, 2, up.calls.Load(), "DefaultPolicy")
	rt.CloseIdleConnections()
}

// A per-try timeout that ends an attempt while it dials: no connection was
// had, so an unkeyed POST provably never left and is resent.
func TestPostWhoseDialTimedOutIsResent(t *testing.T) {
	up := newUpstream(t, always(http.StatusOK))
	var dials atomic.Int32
	var d net.Dialer
	hung := make(chan struct{})
	released := make(chan struct{})
	defer func() { close(hung); <-released }()
	base := &http.Transport{DisableKeepAlives: true,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			if dials.Add(1) == 1 {
				// A dial that hangs; http.Transport goes on with it for
				// its pool after the attempt gave up on it.
				defer close(released)
				select {
				case <-ctx.Done():
				case <-hung:
				}
				return nil, errors.New("dial gave up")
			}
			return d.DialContext(ctx, network, addr)
		}}
	p := fastPolicy(3)
	// The second attempt, dialled afresh, must beat it: at 50 ms a loaded
	// machine could time it out after it left, and it is not resent then.
	p.PerTryTimeout = ms(500)
	var rec recorder
	req, _ := http.NewRequest(http.MethodPost, up.URL, newTrackedBody("pay 10 EUR"))
	resp, err := New(base, WithPolicy(p), WithObserver(rec.observe)).RoundTrip(req)
	require.NoError(t, err)
	readAll(t, resp)
	assert.EqualValues(t, 2, dials.Load())
	assert.Equal(t, [][]byte{[]byte("pay 10 EUR")}, up.received())
	assert.Equal(t, []EventKind{EventRetry}, rec.kinds())
}

// An upgraded connection works after RoundTrip released the attempt's
// context, which a per-try timeout gave it.
func TestSwitchingProtocolsOverLoopbackReleasesItsContext(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, brw, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		io.WriteString(conn, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n")
		line, _ := brw.ReadString('\n')
		io.WriteString(conn, strings.ToUpper(line))
	}))
	defer srv.Close()
	var attemptCtx context.Context
	base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		attemptCtx = r.Context()
		return http.DefaultTransport.RoundTrip(r)
	})
	p := fastPolicy(2)
	p.PerTryTimeout = time.Second
	req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "echo")
	resp, err := New(base, WithPolicy(p)).RoundTrip(req)
	require.NoError(t, err)
	require.Equal(t, http.StatusSwitchingProtocols, resp.StatusCode)
	assert.Error(t, attemptCtx.Err(), "the attempt's context is released")
	rw, ok := resp.Body.(io.ReadWriteCloser)
	require.True(t, ok, "the body is the connection, untouched")
	defer rw.Close()
	_, err = io.WriteString(rw, "hello\n")
	require.NoError(t, err)
	got := make([]byte, 6)
	_, err = io.ReadFull(rw, got)
	require.NoError(t, err)
	assert.Equal(t, "HELLO\n", string(got))
}

func TestAttemptFromContext(t *testing.T) {
	var seen []int
	base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		seen = append(seen, AttemptFromContext(r.Context()))
		if len(seen) < 3 {
			return fakeResponse(r, 503, nil, "busy"), nil
		}
		return fakeResponse(r, 200, nil, "ok"), nil
	})
	req, _ := http.NewRequest(http.MethodGet, "http://h.test/", nil)
	resp, err := New(base, WithPolicy(fastPolicy(3))).RoundTrip(req)
	require.NoError(t, err)
	readAll(t, resp)
	assert.Equal(t, []int{1, 2, 3}, seen)
	assert.Equal(t, 1, AttemptFromContext(context.Background()))
}

// With httpretry inside httpretry, the outer's policy governs (point 20):
// the inner resends nothing, so four upstream calls are the outer's four
// attempts. An inner that passes them through leaves the outer's numbers;
// one that acts on them (its time bound, its fallbacks) numbers its own.
func TestNestedTransportsReportTheInnermostAttempt(t *testing.T) {
	inner := func(p Policy) Policy { return p }
	tests := []struct {
		name  string
		inner func(Policy) Policy
		body  bool
		want  []int
	}{
		{"fast path", inner, false, []int{1, 2, 3, 4}},
		{"per-try timeout", func(p Policy) Policy { p.PerTryTimeout = time.Minute; return p }, false, []int{1, 1, 1, 1}},
		{"hedged", func(p Policy) Policy { p.Hedge = Hedge{After: time.Minute}; return p }, false, []int{1, 2, 3, 4}},
		{"recorded body", inner, true, []int{1, 2, 3, 4}},
		{"fallback", func(p Policy) Policy { p.MaxRetries = 0; p.Fallbacks = []string{"http://b.test"}; return p }, false, []int{1, 2, 1, 2}},
		{"inner passes through", func(p Policy) Policy { p.MaxRetries = 0; return p }, false, []int{1, 2, 3, 4}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			var seen []int
			base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
				if r.Body != nil {
					io.Copy(io.Discard, r.Body)
					r.Body.Close()
				}
				mu.Lock()
				defer mu.Unlock()
				seen = append(seen, AttemptFromContext(r.Context()))
				if len(seen) < 4 {
					return fakeResponse(r, 503, nil, "busy"), nil
				}
				return fakeResponse(r, 200, nil, "ok"), nil
			})
			in := New(base, WithPolicy(tt.inner(fastPolicy(1))))
			out := New(in, WithPolicy(fastPolicy(3)))
			var body io.Reader
			method := http.MethodGet
			if tt.body {
				method, body = http.MethodPut, io.NopCloser(strings.NewReader("x"))
			}
			req, _ := http.NewRequest(method, "http://h.test/", body)
			resp, err := out.RoundTrip(req)
			require.NoError(t, err)
			assert.Equal(t, "ok", readAll(t, resp))
			assert.Equal(t, tt.want, seen)
		})
	}
}

func TestRetryIfDecidesWhatIsAFailure(t *testing.T) {
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request, n int) {
		switch n {
		case 1:
			w.WriteHeader(http.StatusInternalServerError) // not in RetryOn
		case 2:
			w.WriteHeader(http.StatusServiceUnavailable) // in RetryOn, but RetryIf says no
		}
	})
	p := fastPolicy(3)
	var asked []int
	p.RetryIf = func(resp *http.Response, err error) bool {
		asked = append(asked, resp.StatusCode)
		return resp.StatusCode == http.StatusInternalServerError
	}
	var rec recorder
	req, _ := http.NewRequest(http.MethodGet, up.URL, nil)
	resp, err := New(nil, WithPolicy(p), WithObserver(rec.observe)).RoundTrip(req)
	require.NoError(t, err)
	readAll(t, resp)
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	assert.Equal(t, []int{500, 503}, asked)
	assert.Equal(t, []EventKind{EventRetry}, rec.kinds(), "an outcome RetryIf rejects is returned as it is")

	// The safety checks still apply: an unkeyed POST is not resent.
	req, _ = http.NewRequest(http.MethodPost, up.URL, strings.NewReader("x"))
	up.calls.Store(0)
	rec = recorder{}
	resp, err = New(nil, WithPolicy(p), WithObserver(rec.observe)).RoundTrip(req)
	require.NoError(t, err)
	readAll(t, resp)
	assert.Equal(t, ReasonNotIdempotent, rec.giveUp(t))
	assert.EqualValues(t, 1, up.calls.Load())

	// An error RetryIf rejects is returned, with the prefix, not resent.
	errBase := roundTripFunc(func(*http.Request) (*http.Response, error) { return nil, errors.New("boom") })
	p.RetryIf = func(*http.Response, error) bool { return false }
	req, _ = http.NewRequest(http.MethodGet, "http://h.test/", nil)
	_, err = New(errBase, WithPolicy(p)).RoundTrip(req)
	assert.EqualError(t, err, "httpretry: boom")
}

// A call goes back to its pool only when nothing outside it can see it: a
// base transport that keeps each attempt's context after the request has
// returned (as net/http's does while a body is read) finds each one as it
// was sent, its attempt number unchanged, however many calls were reused
// since. Requests alternate the slow path (a timed first attempt, whose
// context lives in the call) and the fast path's resend (whose call is
// reused).
func TestAPooledCallLeavesNoContextItLentChanged(t *testing.T) {
	type sent struct {
		ctx context.Context
		n   int
	}
	var kept []sent
	fail := true
	base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		kept = append(kept, sent{r.Context(), AttemptFromContext(r.Context())})
		code := http.StatusOK
		if fail = !fail; !fail {
			code = http.StatusServiceUnavailable
		}
		return &http.Response{StatusCode: code, Body: http.NoBody, Request: r}, nil
	})
	fast := fastPolicy(1)
	timed := fastPolicy(1)
	timed.PerTryTimeout = time.Hour
	trs := []*RetryTransport{New(base, WithPolicy(fast)), New(base, WithPolicy(timed))}
	for i := range 200 {
		req, _ := http.NewRequest(http.MethodGet, "http://o.example/", nil)
		resp, err := trs[i%2].RoundTrip(req)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		resp.Body.Close()
	}
	require.Len(t, kept, 400)
	for i, s := range kept {
		assert.Equal(t, s.n, AttemptFromContext(s.ctx), "attempt context %d", i)
		assert.Equal(t, i%2+1, s.n)
	}
}

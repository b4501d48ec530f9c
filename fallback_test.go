package httpretry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// dialLog is a base transport that records every host it dials, refused
// ones included: an upstream call is a dial here (keep-alives are off).
type dialLog struct {
	*http.Transport
	mu    sync.Mutex
	hosts []string
}

func newDialLog() *dialLog {
	d := &dialLog{}
	var dialer net.Dialer
	d.Transport = &http.Transport{DisableKeepAlives: true,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			d.mu.Lock()
			d.hosts = append(d.hosts, addr)
			d.mu.Unlock()
			return dialer.DialContext(ctx, network, addr)
		}}
	return d
}

func (d *dialLog) dialed() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.hosts...)
}

func hostOf(rawURL string) string {
	u, _ := url.Parse(rawURL)
	return u.Host
}

// The bound, over loopback: a primary refusing connections, a second
// origin answering 503, a third 200; then the third answering 503 too.
func TestFallbacksOverLoopbackThreeOrigins(t *testing.T) {
	for _, tc := range []struct {
		name    string
		retries int
		third   int // its status
		order   []int
	}{
		{"each candidate once, MaxRetries 0", 0, 200, []int{0, 1, 2}},
		{"then the pool, round from the primary", 2, 503, []int{0, 1, 2, 0, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			second := newUpstream(t, always(http.StatusServiceUnavailable))
			third := newUpstream(t, always(tc.third))
			hosts := []string{refusedAddr(t), hostOf(second.URL), hostOf(third.URL)}
			var want []string
			for _, k := range tc.order {
				want = append(want, hosts[k])
			}
			base := newDialLog()
			defer base.CloseIdleConnections()
			p := fastPolicy(tc.retries)
			p.Fallbacks = []string{second.URL, third.URL}
			var rec recorder
			req, _ := http.NewRequest(http.MethodGet, "http://"+hosts[0]+"/items?q=1", nil)
			resp, err := New(base, WithPolicy(p), WithObserver(rec.observe)).RoundTrip(req)
			require.NoError(t, err)
			readAll(t, resp)
			assert.Equal(t, tc.third, resp.StatusCode)
			assert.Equal(t, want, base.dialed(), "candidates + MaxRetries calls, in order")
			assert.Equal(t, "/items?q=1", resp.Request.URL.RequestURI(), "path and query unchanged")
			assert.NotEqual(t, hosts[0], resp.Request.URL.Host, "resp.Request is the request that was answered")
			kinds := rec.kinds()
			assert.Equal(t, []EventKind{EventFallback, EventFallback}, kinds[:2])
			assert.Equal(t, "http://"+hosts[1], rec.all()[0].Origin)
			assert.Equal(t, "http://"+hosts[2], rec.all()[1].Origin)
			if tc.retries > 0 {
				assert.Equal(t, []EventKind{EventRetry, EventRetry, EventGiveUp}, kinds[2:])
				assert.Equal(t, "http://"+hosts[0], rec.all()[2].Origin)
				assert.Equal(t, ReasonExhausted, rec.giveUp(t))
			}
		})
	}
}

// scriptedOrigins is a fake base: each origin answers by its own script,
// and every attempt's host is recorded in order.
type scriptedOrigins struct {
	mu      sync.Mutex
	scripts map[string][]string // host -> "200", "503", "refuse", in turn; the last repeats
	calls   map[string]int
	order   []string
}

var errRefused = &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}

func (s *scriptedOrigins) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		io.Copy(io.Discard, r.Body)
		r.Body.Close()
	}
	s.mu.Lock()
	host := r.URL.Host
	s.order = append(s.order, host)
	script := s.scripts[host]
	n := s.calls[host]
	s.calls[host]++
	s.mu.Unlock()
	step := script[min(n, len(script)-1)]
	switch step {
	case "refuse":
		return nil, errRefused
	case "reset":
		return nil, errors.New("read: connection reset by peer")
	case "200":
		return fakeResponse(r, 200, nil, "ok from "+host), nil
	}
	return fakeResponse(r, 503, nil, "busy"), nil
}

// Many random failure patterns: every request stays within candidates +
// MaxRetries calls, and the origins come in the order the design gives:
// each candidate once, then round the candidates from the request's own.
func TestFallbackBoundAndOrderUnderRandomFailures(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	steps := []string{"200", "503", "refuse", "reset"}
	for i := range 2000 {
		n := 1 + r.IntN(4)
		hosts := make([]string, n)
		s := &scriptedOrigins{scripts: map[string][]string{}, calls: map[string]int{}}
		for k := range hosts {
			hosts[k] = fmt.Sprintf("o%d.test", k)
			script := make([]string, 1+r.IntN(4))
			for j := range script {
				script[j] = steps[r.IntN(len(steps))]
			}
			s.scripts[hosts[k]] = script
		}
		retries := r.IntN(5)
		p := fastPolicy(retries)
		for _, h := range hosts[1:] {
			p.Fallbacks = append(p.Fallbacks, "http://"+h)
		}
		req, _ := http.NewRequest(http.MethodGet, "http://"+hosts[0]+"/", nil)
		resp, err := New(s, WithPolicy(p)).RoundTrip(req)
		if resp != nil {
			resp.Body.Close()
		}
		// The expected order, cut at the first 200.
		var want []string
		seen := map[string]int{}
		for k := 0; len(want) < n+retries; k++ {
			h := hosts[k%n]
			want = append(want, h)
			step := s.scripts[h][min(seen[h], len(s.scripts[h])-1)]
			seen[h]++
			if step == "200" {
				break
			}
		}
		require.Equal(t, want, s.order, "case %d: %v, MaxRetries %d", i, s.scripts, retries)
		require.LessOrEqual(t, len(s.order), n+retries)
		if last := s.order[len(s.order)-1]; seen[last] > 0 && s.scripts[last][min(seen[last]-1, len(s.scripts[last])-1)] == "200" {
			require.NoError(t, err)
			require.Equal(t, 200, resp.StatusCode)
		}
	}
}

// An unkeyed POST that reached the primary is never sent to a fallback;
// one whose dial was refused is, with the very same body.
func TestFallbackKeepsPostsSafe(t *testing.T) {
	standby := newUpstream(t, always(http.StatusOK))
	busy := newUpstream(t, always(http.StatusServiceUnavailable))
	for _, tc := range []struct {
		name     string
		primary  string
		getBody  bool
		standbys int64
		reason   Reason
	}{
		{"reached the primary", busy.URL, false, 0, ReasonNotIdempotent},
		{"refused by the primary, recorded body", "http://" + refusedAddr(t), false, 1, 0},
		{"refused by the primary, GetBody", "http://" + refusedAddr(t), true, 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			standby.calls.Store(0)
			busy.calls.Store(0)
			base := &http.Transport{DisableKeepAlives: true}
			defer base.CloseIdleConnections()
			p := fastPolicy(3)
			p.Fallbacks = []string{standby.URL}
			var rec recorder
			payload := strings.Repeat("pay 10 EUR;", 500)
			var body io.Reader = newTrackedBody(payload)
			if tc.getBody {
				body = strings.NewReader(payload)
			}
			req, _ := http.NewRequest(http.MethodPost, tc.primary, body)
			resp, err := New(base, WithPolicy(p), WithObserver(rec.observe)).RoundTrip(req)
			require.NoError(t, err)
			readAll(t, resp)
			assert.Equal(t, tc.standbys, standby.calls.Load())
			assert.Equal(t, tc.reason, rec.giveUp(t))
			if tc.standbys > 0 {
				assert.Equal(t, [][]byte{[]byte(payload)}, standby.received()[len(standby.received())-1:], "byte-identical")
			}
		})
	}
}

func TestFallbackNeverDowngradesAndNeverModifiesTheRequest(t *testing.T) {
	s := &scriptedOrigins{scripts: map[string][]string{
		"primary.test": {"503"}, "plain.test": {"200"}, "secure.test": {"200"}}, calls: map[string]int{}}
	p := fastPolicy(0)
	p.Fallbacks = []string{"http://plain.test", "https://Secure.TEST:443/", "https://secure.test"}
	req, _ := http.NewRequest(http.MethodGet, "https://primary.test/a?b=c", nil)
	req.Header.Set("Authorization", "Bearer t")
	before := req.Clone(context.Background())
	resp, err := New(s, WithPolicy(p)).RoundTrip(req)
	require.NoError(t, err)
	assert.Equal(t, "ok from secure.test", readAll(t, resp))
	assert.Equal(t, []string{"primary.test", "secure.test"}, s.order, "no http, duplicates once")
	assert.Equal(t, before.URL, req.URL)
	assert.Equal(t, before.Host, req.Host)
	assert.Equal(t, before.Header, req.Header)
	assert.Equal(t, "secure.test", resp.Request.URL.Host)
	assert.Equal(t, "", resp.Request.Host, "the Host header is the candidate's")
	assert.Equal(t, "Bearer t", resp.Request.Header.Get("Authorization"))

	// A Host the caller chose is kept.
	s = &scriptedOrigins{scripts: s.scripts, calls: map[string]int{}}
	req, _ = http.NewRequest(http.MethodGet, "https://primary.test/a", nil)
	req.Host = "api.example.com"
	resp, err = New(s, WithPolicy(p)).RoundTrip(req)
	require.NoError(t, err)
	readAll(t, resp)
	assert.Equal(t, "api.example.com", resp.Request.Host)
}

func TestFallbackBudgetsArePerOrigin(t *testing.T) {
	s := &scriptedOrigins{scripts: map[string][]string{"a.test": {"503"}, "b.test": {"503"}}, calls: map[string]int{}}
	bs := NewBudgets()
	p := fastPolicy(3)
	p.Budget = BudgetConfig{MinRetries: 1}
	p.Fallbacks = []string{"http://b.test"}
	var rec recorder
	req, _ := http.NewRequest(http.MethodGet, "http://a.test/", nil)
	resp, err := New(s, WithPolicy(p), WithBudgets(bs), WithObserver(rec.observe)).RoundTrip(req)
	require.NoError(t, err)
	readAll(t, resp)
	// a, b (first attempt: a request in b's budget), a (a's one resend),
	// b (b's one resend); then both budgets refuse.
	assert.Equal(t, []string{"a.test", "b.test", "a.test", "b.test"}, s.order)
	assert.Equal(t, BudgetStats{Requests: 1, Retries: 1}, statsOf(bs, "a.test", p.Budget))
	assert.Equal(t, BudgetStats{Requests: 1, Retries: 1}, statsOf(bs, "b.test", p.Budget))
	assert.Equal(t, ReasonBudget, rec.giveUp(t))
}

func statsOf(bs *Budgets, host string, cfg BudgetConfig) BudgetStats {
	st := bs.For(host, cfg).Stats()
	return BudgetStats{Requests: st.Requests, Retries: st.Retries}
}

// Retry-After is per origin: a long one moves the request on at once; a
// resend to an origin waits at least what that origin last asked.
func TestFallbackRetryAfterIsPerOrigin(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var sent []string
		start := time.Now()
		base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
			mu.Lock()
			sent = append(sent, fmt.Sprintf("%s@%v", r.URL.Host, time.Since(start)))
			n := len(sent)
			mu.Unlock()
			switch {
			case r.URL.Host == "a.test":
				return fakeResponse(r, 503, http.Header{"Retry-After": {"3600"}}, "go away"), nil
			case n == 2:
				return fakeResponse(r, 503, http.Header{"Retry-After": {"2"}}, "later"), nil
			}
			return fakeResponse(r, 200, nil, "ok"), nil
		})
		p := fastPolicy(3)
		p.Fallbacks = []string{"http://b.test"}
		req, _ := http.NewRequest(http.MethodGet, "http://a.test/", nil)
		resp, err := New(base, WithPolicy(p)).RoundTrip(req)
		require.NoError(t, err)
		assert.Equal(t, "ok", readAll(t, resp))
		// a asked too much: passed over; b is resent after its 2 s.
		assert.Equal(t, []string{"a.test@0s", "b.test@0s", "b.test@2s"}, sent)
	})
}

// A hedged copy goes to the next candidate not yet tried.
func TestHedgedCopyGoesToTheNextCandidate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var order []string
		var mu sync.Mutex
		base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
			mu.Lock()
			order = append(order, r.URL.Host)
			mu.Unlock()
			if r.URL.Host == "slow.test" {
				select {
				case <-time.After(time.Minute):
				case <-r.Context().Done():
					return nil, r.Context().Err()
				}
			}
			return fakeResponse(r, 200, nil, "ok from "+r.URL.Host), nil
		})
		p := hedgePolicy(ms(20), 1, 3)
		p.Fallbacks = []string{"http://fast.test"}
		var rec recorder
		req, _ := http.NewRequest(http.MethodGet, "http://slow.test/", nil)
		resp, err := New(base, WithPolicy(p), WithObserver(rec.observe)).RoundTrip(req)
		require.NoError(t, err)
		assert.Equal(t, "ok from fast.test", readAll(t, resp))
		assert.Equal(t, []string{"slow.test", "fast.test"}, order)
		require.Len(t, rec.all(), 1)
		assert.Equal(t, EventHedge, rec.all()[0].Kind)
		assert.Equal(t, "http://fast.test", rec.all()[0].Origin)
	})
}

// An answer beats an error: the primary's 503 comes back when the
// fallback then fails with a transport error.
func TestFallbackAnAnswerBeatsAnError(t *testing.T) {
	s := &scriptedOrigins{scripts: map[string][]string{"a.test": {"503"}, "b.test": {"refuse"}}, calls: map[string]int{}}
	p := fastPolicy(0)
	p.Fallbacks = []string{"http://b.test"}
	var rec recorder
	req, _ := http.NewRequest(http.MethodGet, "http://a.test/", nil)
	resp, err := New(s, WithPolicy(p), WithObserver(rec.observe)).RoundTrip(req)
	require.NoError(t, err)
	assert.Equal(t, 503, resp.StatusCode)
	assert.Equal(t, "busy", readAll(t, resp))
	last := rec.all()[len(rec.all())-1]
	assert.Equal(t, EventGiveUp, last.Kind)
	assert.ErrorIs(t, last.Err, errRefused)
	assert.Equal(t, "http://b.test", last.Origin)
}

func TestWithFallbacksPerRequest(t *testing.T) {
	s := &scriptedOrigins{scripts: map[string][]string{"a.test": {"503"}, "c.test": {"200"}}, calls: map[string]int{}}
	p := fastPolicy(0)
	p.Fallbacks = []string{"http://b.test"}
	rt := New(s, WithPolicy(p))

	req, _ := http.NewRequestWithContext(WithFallbacks(context.Background(), "http://c.test"), http.MethodGet, "http://a.test/", nil)
	resp, err := rt.RoundTrip(req)
	require.NoError(t, err)
	assert.Equal(t, "ok from c.test", readAll(t, resp))

	s.order = nil
	req, _ = http.NewRequestWithContext(WithFallbacks(context.Background()), http.MethodGet, "http://a.test/", nil)
	resp, err = rt.RoundTrip(req)
	require.NoError(t, err)
	readAll(t, resp)
	assert.Equal(t, []string{"a.test"}, s.order, "no fallback: sent exactly once")

	body := newTrackedBody("x")
	req, _ = http.NewRequestWithContext(WithFallbacks(context.Background(), "ftp://c.test", "https://u:secret@d.test"), http.MethodPut, "http://a.test/", body)
	s.order = nil
	_, err = rt.RoundTrip(req)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `"ftp://c.test"`)
	assert.NotContains(t, err.Error(), "secret")
	assert.Empty(t, s.order, "no attempt")
	assert.EqualValues(t, 1, body.closes.Load())
}

// A hedged copy sent to a fallback is charged to that origin; a later
// first attempt that never goes out (the deadline passed during a slow
// observer) must not refund the copy's charge, which was spent.
func TestAFallbackNeverSentDoesNotRefundACopy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
			switch r.URL.Host {
			case "a.test":
				select {
				case <-time.After(ms(50)):
					return nil, errors.New("read: connection reset by peer")
				case <-r.Context().Done():
					return nil, r.Context().Err()
				}
			case "b.test":
				return fakeResponse(r, 503, nil, "busy"), nil
			}
			return fakeResponse(r, 200, nil, "ok"), nil
		})
		p := hedgePolicy(ms(20), 1, 3)
		p.Budget = BudgetConfig{}
		p.Deadline = ms(200)
		p.Fallbacks = []string{"http://b.test", "http://c.test"}
		bs := NewBudgets()
		slow := func(e Event) {
			if e.Kind == EventFallback {
				time.Sleep(ms(300))
			}
		}
		req, _ := http.NewRequest(http.MethodGet, "http://a.test/", nil)
		resp, err := New(base, WithPolicy(p), WithBudgets(bs), WithObserver(slow)).RoundTrip(req)
		require.NoError(t, err, "the deadline passed while observed: the last answer")
		assert.Equal(t, 503, resp.StatusCode)
		resp.Body.Close()
		assert.Equal(t, BudgetStats{Requests: 1, Retries: 0}, statsOf(bs, "b.test", p.Budget), "the copy to b was sent: a request there")
		assert.Equal(t, BudgetStats{Requests: 1, Retries: 1}, statsOf(bs, "a.test", p.Budget), "charged to the request it copies")
	})
}

// A caller who cancels gets its context's error, not an answer kept from
// an earlier origin.
func TestFallbackCancelBeatsAKeptAnswer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
			if r.URL.Host == "a.test" {
				return fakeResponse(r, 503, nil, "busy"), nil
			}
			<-r.Context().Done()
			return nil, r.Context().Err()
		})
		p := fastPolicy(0)
		p.Fallbacks = []string{"http://b.test"}
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(ms(100), cancel)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://a.test/", nil)
		resp, err := New(base, WithPolicy(p)).RoundTrip(req)
		assert.Nil(t, resp)
		assert.ErrorIs(t, err, context.Canceled)
	})
}

package httpretry

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/httpretry/httpretry/internal/latency"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Point 20's rules: features compose. Each test here failed on 224d90d.

// A Go literal means what its JSON means, field by field: every field but
// MaxRetries left zero resolves as a key left out of JSON does.
func TestLiteralMeansItsJSON(t *testing.T) {
	for _, tc := range []struct {
		name string
		lit  Policy
		json string
	}{
		{"maxRetries alone", Policy{MaxRetries: 2}, `{"maxRetries": 2}`},
		{"demotion off", Policy{MaxRetries: 2, Demote: Demote{After: -1}}, `{"maxRetries": 2, "demote": {"after": -1}}`},
		{"demote after 0", Policy{MaxRetries: 1, Demote: Demote{For: 3e9}}, `{"maxRetries": 1, "demote": {"after": 0, "for": "3s"}}`},
		{"strict budget", Policy{MaxRetries: 3, Budget: BudgetConfig{MinRetries: -1}}, `{"budget": {"minRetries": -1}}`},
		{"never record", Policy{MaxRetries: 3, MaxReplayBytes: -1}, `{"maxReplayBytes": -1}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.NoError(t, tc.lit.Validate())
			var p Policy
			require.NoError(t, json.Unmarshal([]byte(tc.json), &p))
			require.NoError(t, p.Validate())
			assert.Equal(t, resolvePolicy(p), resolvePolicy(tc.lit))
		})
	}
	// And DefaultPolicy is the zero policy with MaxRetries 3.
	assert.Equal(t, resolvePolicy(DefaultPolicy()), resolvePolicy(Policy{MaxRetries: 3}))
}

// Wrapping twice never multiplies: the outer's policy governs, and the
// inner makes no resends of its own, but still records its requests.
func TestWrappingTwiceNeverMultiplies(t *testing.T) {
	var calls atomic.Int32
	base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		calls.Add(1)
		return fakeResponse(r, http.StatusServiceUnavailable, nil, "busy"), nil
	})
	get := func(rt http.RoundTripper) int {
		calls.Store(0)
		req, _ := http.NewRequest(http.MethodGet, "http://h.test/", nil)
		resp, err := rt.RoundTrip(req)
		require.NoError(t, err)
		assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
		resp.Body.Close()
		return int(calls.Load())
	}
	t.Run("directly", func(t *testing.T) {
		inner := NewBudgets()
		rt := New(New(base, WithPolicy(fastPolicy(3)), WithBudgets(inner)), WithPolicy(fastPolicy(3)))
		assert.Equal(t, 4, get(rt), "the outer's 1 + 3")
		assert.Equal(t, 4, get(rt))
		rt = New(New(base, WithPolicy(DefaultPolicy()), WithBudgets(inner)),
			WithPolicy(Policy{MaxRetries: 2, Backoff: NoBackoff()}))
		assert.Equal(t, 3, get(rt), "the outer's 1 + 2, whatever the inner's policy")
		assert.Equal(t, 3, inner.For("h.test", BudgetConfig{}).Stats().Requests, "the inner records what it sends")
		assert.Zero(t, inner.For("h.test", BudgetConfig{}).Stats().Retries)
	})
	t.Run("through a middleware", func(t *testing.T) {
		inner := New(base, WithPolicy(fastPolicy(3)))
		var mw http.RoundTripper = roundTripFunc(inner.RoundTrip)
		rt := New(mw, WithPolicy(fastPolicy(3)))
		// The base is opaque: the first request's first attempt is marked
		// too, nothing is learned from a resend.
		assert.Equal(t, 4, get(rt))
		assert.Equal(t, 4, get(rt))
	})
	t.Run("an outer that passes through", func(t *testing.T) {
		// Its policy makes no resend, so the inner makes none either,
		// and the outer, as it passes the request through, tells nothing.
		inner := New(base, WithPolicy(fastPolicy(3)))
		var rec recorder
		for _, rt := range []http.RoundTripper{New(inner, WithObserver(rec.observe), WithPolicy(Policy{})),
			New(forward{inner}, WithObserver(rec.observe), WithPolicy(Policy{}))} {
			assert.Equal(t, 1, get(rt))
		}
		assert.Empty(t, rec.all())
	})
}

// forward is a middleware that only forwards: an opaque base.
type forward struct{ next http.RoundTripper }

func (f forward) RoundTrip(r *http.Request) (*http.Response, error) { return f.next.RoundTrip(r) }

// Wrapping twice never multiplies however early the requests: 50 first
// requests at once through New(middleware(New(nil))) to a host answering
// 503 make the outer's 50 × (1 + 3) calls. On 14966dc the outer had not yet
// learned that an httpretry was inside, so all 50 first attempts went
// unmarked and the inner resent each of them as well: 350 calls.
func TestWrappingThroughAMiddlewareUnderABurst(t *testing.T) {
	const requests = 50
	var calls atomic.Int32
	all := make(chan struct{})
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request, n int) {
		// The first attempts all wait for one another, so that every
		// request is under way before any is resent.
		if c := calls.Add(1); c == requests {
			close(all)
		} else if c < requests {
			select {
			case <-all:
			case <-time.After(10 * time.Second):
			}
		}
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	inner := New(nil, WithPolicy(fastPolicy(3)))
	defer inner.CloseIdleConnections()
	rt := New(forward{inner}, WithPolicy(fastPolicy(3)))
	var wg sync.WaitGroup
	for range requests {
		wg.Go(func() {
			req, _ := http.NewRequest(http.MethodGet, up.URL, nil)
			resp, err := rt.RoundTrip(req)
			if assert.NoError(t, err) {
				assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
				resp.Body.Close()
			}
		})
	}
	wg.Wait()
	assert.EqualValues(t, requests*(1+3), calls.Load())
}

// A body is resumed by one transport of a stack, the outer: through
// New(middleware(New(nil))), a body cut at every response makes
// Resume.Max resume requests, not one Resume.Max per transport (4 on
// 14966dc, where the first attempt went unmarked and the inner resumed
// too).
func TestWrappingThroughAMiddlewareResumesOnce(t *testing.T) {
	o := newObject(300_000, func(int) fault { return fault{cut: 10_000} })
	srv := o.serve(t)
	p := resumePolicy()
	p.Resume.Max = 2
	inner := New(nil, WithPolicy(p))
	defer inner.CloseIdleConnections()
	rt := New(forward{inner}, WithPolicy(p))
	resp := getObject(t, rt, srv.URL)
	got, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.ErrorIs(t, err, io.ErrUnexpectedEOF)
	assert.Equal(t, 30_000, len(got), "three cuts, each after 10,000 more bytes")
	var resumes int
	for _, a := range o.asked() {
		if a.rng != "" {
			resumes++
		}
	}
	assert.Equal(t, p.Resume.Max, resumes)
}

// Time bounds hold whatever MaxRetries is: from the policy, from
// WithMaxRetries, with and without a fallback.
func TestMaxRetriesZeroKeepsTimeBounds(t *testing.T) {
	for _, tc := range []struct {
		name      string
		policy    Policy
		ctx       func(context.Context) context.Context
		fallbacks bool
		want      time.Duration
		sentinel  error
	}{
		{"policy, per try", Policy{PerTryTimeout: 300 * time.Millisecond}, nil, false, 300 * time.Millisecond, ErrAttemptTimeout},
		{"policy, deadline", Policy{Deadline: 200 * time.Millisecond}, nil, false, 200 * time.Millisecond, ErrDeadline},
		{"WithMaxRetries 0, per try", Policy{MaxRetries: 3, PerTryTimeout: 300 * time.Millisecond},
			func(ctx context.Context) context.Context { return WithMaxRetries(ctx, 0) }, false, 300 * time.Millisecond, ErrAttemptTimeout},
		{"fallback, per try each", Policy{PerTryTimeout: 300 * time.Millisecond, Fallbacks: []string{"http://b.test"}},
			nil, true, 600 * time.Millisecond, ErrAttemptTimeout},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var calls atomic.Int32
				base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
					calls.Add(1)
					<-r.Context().Done()
					return nil, r.Context().Err()
				})
				rt := New(base, WithPolicy(tc.policy))
				ctx := context.Background()
				if tc.ctx != nil {
					ctx = tc.ctx(ctx)
				}
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://a.test/", nil)
				start := time.Now()
				resp, err := rt.RoundTrip(req)
				require.Nil(t, resp)
				assert.ErrorIs(t, err, tc.sentinel)
				assert.Equal(t, tc.want, time.Since(start))
				want := int32(1)
				if tc.fallbacks {
					want = 2
				}
				assert.Equal(t, want, calls.Load())
			})
		})
	}
}

// A copy is charged to the request it copies: hedging beside a fallback
// goes on at the rate the primary's budget allows, and the fallback
// records the copies it carries as requests.
func TestHedgingBesideAFallbackGoesOn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var n atomic.Int32
		base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
			if r.URL.Host == "a.test" && r.Header.Get("X-Stall") != "" {
				select {
				case <-time.After(300 * time.Millisecond):
				case <-r.Context().Done():
					return nil, r.Context().Err()
				}
			}
			return fakeResponse(r, http.StatusOK, nil, "ok"), nil
		})
		p := DefaultPolicy()
		p.Hedge = Hedge{After: 20 * time.Millisecond}
		p.Fallbacks = []string{"http://b.test"}
		bs := NewBudgets()
		var rec recorder
		rt := New(base, WithPolicy(p), WithBudgets(bs), WithObserver(rec.observe))
		for block := range 5 {
			if block > 0 {
				time.Sleep(10 * time.Second) // a new window
			}
			rec.events = nil
			for i := range 100 {
				req, _ := http.NewRequest(http.MethodGet, "http://a.test/", nil)
				if i%10 == 0 {
					req.Header.Set("X-Stall", "1")
				}
				resp, err := rt.RoundTrip(req)
				require.NoError(t, err)
				resp.Body.Close()
				n.Add(1)
			}
			var sent, refused int
			for _, e := range rec.all() {
				if e.Kind == EventHedge && e.Reason == 0 {
					sent++
					assert.Equal(t, "http://b.test", e.Origin)
				} else if e.Kind == EventHedge {
					refused++
				}
			}
			assert.Equal(t, 10, sent, "block %d: every stalled request copied", block)
			assert.Zero(t, refused, "block %d", block)
		}
		// The last window: 100 requests and 10 copies at a; 10 requests at b.
		assert.Equal(t, BudgetStats{Requests: 10}, statsOf(bs, "b.test", p.Budget))
		assert.Equal(t, 10, statsOf(bs, "a.test", p.Budget).Retries)
	})
}

// A copy the budget refuses is told as refused, with its Reason, of the
// origin whose budget refused it; the log says it was refused.
func TestARefusedCopyIsToldAsRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
			if r.URL.Host == "a.test" {
				select {
				case <-time.After(300 * time.Millisecond):
				case <-r.Context().Done():
					return nil, r.Context().Err()
				}
			}
			return fakeResponse(r, http.StatusOK, nil, "ok"), nil
		})
		p := DefaultPolicy()
		p.Hedge = Hedge{After: 20 * time.Millisecond}
		p.Budget = BudgetConfig{Percent: 1, MinRetries: -1} // grants nothing to one request
		p.Fallbacks = []string{"http://b.test"}
		var rec recorder
		var log strings.Builder
		logger := slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug}))
		rt := New(base, WithPolicy(p), WithObserver(rec.observe), WithLogger(logger))
		req, _ := http.NewRequest(http.MethodGet, "http://a.test/", nil)
		resp, err := rt.RoundTrip(req)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Contains(t, log.String(), `msg="httpretry hedge refused"`)
		assert.NotContains(t, log.String(), `msg="httpretry hedge"`)
		var hedges []Event
		for _, e := range rec.all() {
			if e.Kind == EventHedge {
				hedges = append(hedges, e)
			}
		}
		require.Len(t, hedges, 1)
		assert.Equal(t, ReasonBudget, hedges[0].Reason)
		assert.Equal(t, "http://a.test", hedges[0].Origin, "the origin whose budget refused")
	})
}

// closeCounting is a response body that counts its Closes.
type closeCounting struct {
	*strings.Reader
	closes atomic.Int32
}

func (b *closeCounting) Close() error { b.closes.Add(1); return nil }

// Verdicts are applied where outcomes are released: an observer that
// panics on any event leaves every response it was told of closed once,
// the caller's body closed and a resend's charge given back.
func TestObserversThatPanicOnAnyEventLeaveNothing(t *testing.T) {
	for _, kind := range []EventKind{EventDemote, EventRestore, EventRetry, EventFallback, EventHedge, EventGiveUp} {
		t.Run(kind.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var (
					mu     sync.Mutex
					bodies []*closeCounting
					fail   atomic.Bool
				)
				fail.Store(true)
				base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
					if r.Body != nil {
						io.Copy(io.Discard, r.Body)
						r.Body.Close()
					}
					code := http.StatusOK
					switch {
					case kind == EventHedge && r.URL.Host == "a.test":
						select {
						case <-time.After(time.Second):
						case <-r.Context().Done():
							return nil, r.Context().Err()
						}
					case fail.Load() || r.URL.Host == "b.test" && kind == EventGiveUp:
						code = http.StatusServiceUnavailable
					}
					b := &closeCounting{Reader: strings.NewReader("page")}
					mu.Lock()
					bodies = append(bodies, b)
					mu.Unlock()
					return &http.Response{StatusCode: code, Header: http.Header{}, Body: b, Request: r, ContentLength: 4}, nil
				})
				p := Policy{MaxRetries: 1, Backoff: NoBackoff(), Demote: Demote{After: 1}}
				if kind == EventFallback || kind == EventDemote || kind == EventRestore || kind == EventGiveUp || kind == EventHedge {
					p.Fallbacks = []string{"http://b.test"}
				}
				if kind == EventHedge {
					p.Hedge = Hedge{After: 20 * time.Millisecond}
					fail.Store(false)
				}
				bs := NewBudgets()
				armed := atomic.Bool{}
				armed.Store(kind != EventRestore)
				rt := New(base, WithPolicy(p), WithBudgets(bs), WithObserver(func(e Event) {
					if e.Kind == kind && armed.Load() {
						panic("boom")
					}
				}))
				if kind == EventRestore {
					// Demote a.test, then let its demotion pass: the next
					// request probes it and is told of its restore.
					req, _ := http.NewRequest(http.MethodGet, "http://a.test/", nil)
					if resp, err := rt.RoundTrip(req); err == nil {
						resp.Body.Close()
					}
					time.Sleep(2 * time.Second)
					fail.Store(false)
					armed.Store(true)
					mu.Lock()
					bodies = nil
					mu.Unlock()
				}
				caller := newTrackedBody("payload")
				req, _ := http.NewRequest(http.MethodPut, "http://a.test/", caller)
				var got *http.Response
				func() {
					defer func() { assert.Equal(t, "boom", recover()) }()
					got, _ = rt.RoundTrip(req)
				}()
				require.Nil(t, got)
				synctest.Wait()
				mu.Lock()
				defer mu.Unlock()
				require.NotEmpty(t, bodies)
				for i, b := range bodies {
					assert.Equal(t, int32(1), b.closes.Load(), "response %d closed once", i)
				}
				assert.Equal(t, int32(1), caller.closes.Load(), "the caller's body")
				if kind == EventRetry {
					assert.Zero(t, bs.For("a.test", BudgetConfig{}).Stats().Retries, "the charge given back")
				}
			})
		})
	}
}

// With a fallback, a failed answer too long to keep in memory is closed
// once, whatever its length says.
func TestALongFailedAnswerIsClosedOnce(t *testing.T) {
	for _, length := range []int64{5000, -1} {
		var bodies []*closeCounting
		base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
			if r.URL.Host == "b.test" {
				return fakeResponse(r, http.StatusOK, nil, "ok"), nil
			}
			b := &closeCounting{Reader: strings.NewReader(strings.Repeat("x", 5000))}
			bodies = append(bodies, b)
			return &http.Response{StatusCode: 503, Header: http.Header{}, Body: b, Request: r, ContentLength: length}, nil
		})
		p := fastPolicy(1)
		p.Fallbacks = []string{"http://b.test"}
		req, _ := http.NewRequest(http.MethodGet, "http://a.test/", nil)
		resp, err := New(base, WithPolicy(p)).RoundTrip(req)
		require.NoError(t, err)
		assert.Equal(t, http.StatusOK, resp.StatusCode)
		resp.Body.Close()
		require.Len(t, bodies, 1)
		assert.Equal(t, int32(1), bodies[0].closes.Load(), "length %d", length)
	}
}

// A black-holed primary under a learned hedge delay, with no
// PerTryTimeout to cut its attempts, is demoted within a few requests: a
// copy to the fallback overtaking its attempt is its failure. And its
// delay does not drift up with the censored samples it leaves.
func TestABlackHoledPrimaryUnderLearnedHedgingIsDemoted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var dead atomic.Bool
		var mu sync.Mutex
		calls := map[string]int{}
		base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
			mu.Lock()
			calls[r.URL.Host]++
			mu.Unlock()
			d := 10 * time.Millisecond
			if r.URL.Host == "a.test" {
				d = 20 * time.Millisecond
				if dead.Load() {
					d = time.Hour
				}
			}
			select {
			case <-time.After(d):
				return fakeResponse(r, http.StatusOK, nil, "ok"), nil
			case <-r.Context().Done():
				return nil, r.Context().Err()
			}
		})
		p := DefaultPolicy()
		p.Hedge = Hedge{Quantile: 0.95, After: 50 * time.Millisecond}
		p.Fallbacks = []string{"http://b.test"}
		bs := NewBudgets()
		var rec recorder
		rt := New(base, WithPolicy(p), WithBudgets(bs), WithObserver(rec.observe))
		get := func() {
			req, _ := http.NewRequest(http.MethodGet, "http://a.test/", nil)
			resp, err := rt.RoundTrip(req)
			require.NoError(t, err)
			resp.Body.Close()
		}
		for range 2 * latency.Every {
			get()
		}
		learned := bs.For("a.test", p.Budget).Stats().HedgeAfter
		require.Equal(t, at(20*time.Millisecond), learned, "warm at the primary's time")

		dead.Store(true)
		mu.Lock()
		calls = map[string]int{}
		mu.Unlock()
		var demotedAt int
		for i := range 320 {
			get()
			if demotedAt == 0 && len(ofKind(rec.all(), EventDemote)) > 0 {
				demotedAt = i + 1
			}
		}
		assert.Equal(t, p.Demote.After, demotedAt, "demoted by its 5th overtaken attempt in a row")
		mu.Lock()
		assert.Less(t, calls["a.test"], 20, "after that, probes alone")
		mu.Unlock()
		assert.Equal(t, learned, bs.For("a.test", p.Budget).Stats().HedgeAfter, "no drift")
		time.Sleep(defaultDemoteMax) // the last probe runs on until its bound cuts it
	})
}

// A give-up the budget caused names the origin whose budget refused, not
// the origin of the last attempt.
func TestAGiveUpNamesTheBudgetThatRefused(t *testing.T) {
	base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		return fakeResponse(r, http.StatusServiceUnavailable, nil, "busy"), nil
	})
	p := fastPolicy(2)
	p.Budget = BudgetConfig{Percent: 1, MinRetries: -1}
	p.Fallbacks = []string{"http://b.test"}
	var rec recorder
	req, _ := http.NewRequest(http.MethodGet, "http://a.test/", nil)
	resp, err := New(base, WithPolicy(p), WithObserver(rec.observe)).RoundTrip(req)
	require.NoError(t, err)
	resp.Body.Close()
	events := rec.all()
	require.Len(t, events, 2)
	assert.Equal(t, EventFallback, events[0].Kind)
	assert.Equal(t, Event{Kind: EventGiveUp, Request: req, Attempt: 2, Status: 503, Reason: ReasonBudget, Origin: "http://a.test"}, events[1])
}

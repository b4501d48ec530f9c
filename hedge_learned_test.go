package httpretry

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/httpretry/httpretry/internal/latency"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The learned hedge delay (DESIGN point 17) as the attempt loop uses it:
// cold start, what is recorded, whose delay a round waits, the cap on
// learned copies. The estimator itself is tested at fixed inputs in
// hedge_delay_test.go.

// apiHost is the origin get sends to, as Budgets keys it.
const apiHost = "api.example.com"

// learnedPolicy hedges after the quantile q of each origin's recent times
// to response headers, with at most copies copies beside an attempt, and
// after the fixed after while the origin is cold. Its budget is off, as
// fastPolicy's is: no window, so no cap on learned copies.
func learnedPolicy(q float64, after time.Duration, copies, retries int) Policy {
	p := fastPolicy(retries)
	p.Hedge = Hedge{After: after, Max: copies, Quantile: q}
	return p
}

// reply is how a scripted attempt ends: after its wait, with err if set,
// else with code (200 if 0). An attempt whose context ends first comes
// back linger later with the context's error, or with its answer if late.
type reply struct {
	after  time.Duration
	code   int
	err    error
	linger time.Duration
	late   bool
}

// replies answers attempt n as script[n] says, and an attempt the script
// does not name at once with 200. The body names the attempt.
func replies(script map[int]reply) func(*http.Request, int) (*http.Response, error) {
	return func(r *http.Request, n int) (*http.Response, error) {
		rp := script[n]
		if rp.after > 0 {
			select {
			case <-time.After(rp.after):
			case <-r.Context().Done():
				time.Sleep(rp.linger)
				if !rp.late {
					return nil, r.Context().Err()
				}
			}
		}
		if rp.err != nil {
			return nil, rp.err
		}
		return fakeResponse(r, cmp.Or(rp.code, http.StatusOK), nil, fmt.Sprint("attempt ", n)), nil
	}
}

// at is d as the estimator keeps it: the upper bound of its bucket, the
// estimate of an estimator warmed on d alone.
func at(d time.Duration) time.Duration {
	var l latency.Estimator
	for range latency.Every {
		l.Record(d, 0.5)
	}
	est, _ := l.Estimate()
	return est
}

// recorded counts the samples host's estimator in bs holds, by the upper
// bound of their bucket; nil when it holds none.
func recorded(bs *Budgets, host string) map[time.Duration]int {
	l := bs.record(host).latencies.Load()
	if l == nil {
		return nil
	}
	var got map[time.Duration]int
	for upper, n := range l.Samples() {
		if got == nil {
			got = map[time.Duration]int{}
		}
		got[upper] += n
	}
	return got
}

// warm records latency.Every samples of d on host's estimator in bs, which
// makes it warm with d's bucket as the estimate of any quantile.
func warm(bs *Budgets, host string, d time.Duration) {
	l := bs.record(host).learned()
	for range latency.Every {
		l.Record(d, 0.95)
	}
}

// hedgeEvents returns the EventHedge events rec saw, without their
// request.
func hedgeEvents(rec *recorder) []Event {
	var out []Event
	for _, e := range rec.all() {
		if e.Kind == EventHedge {
			e.Request = nil
			out = append(out, e)
		}
	}
	return out
}

func TestLearnedHedgeWhileCold(t *testing.T) {
	for _, tc := range []struct {
		name     string
		after    time.Duration
		took     time.Duration
		body     string
		events   []Event
		recorded map[time.Duration]int
	}{
		{"After 0 sends no copy", 0, ms(100), "attempt 1", nil, map[time.Duration]int{at(ms(100)): 1}},
		{"After sends a copy at After", ms(20), ms(20), "attempt 2",
			[]Event{{Kind: EventHedge, Attempt: 2, Origin: "http://api.example.com", Delay: ms(20)}},
			// The copy's answer at once, the first attempt it overtook at its age.
			map[time.Duration]int{at(0): 1, at(ms(20)): 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				base := &concurrentScripted{answer: replies(map[int]reply{1: {after: ms(100)}})}
				bs := NewBudgets()
				var rec recorder
				rt := New(base, WithPolicy(learnedPolicy(0.95, tc.after, 1, 3)), WithBudgets(bs), WithObserver(rec.observe))
				start := time.Now()
				resp, err := get(t, rt, context.Background())
				require.NoError(t, err)
				assert.Equal(t, tc.body, readAll(t, resp))
				assert.Equal(t, tc.took, time.Since(start))
				assert.EqualValues(t, 1+len(tc.events), base.n.Load())
				assert.Equal(t, tc.events, hedgeEvents(&rec))
				assert.Equal(t, tc.recorded, recorded(bs, apiHost))
			})
		})
	}
}

// The 32nd answer warms the origin: until it, a policy with After 0 sends
// no copy and BudgetStats.HedgeAfter is 0; from it, a copy goes at the
// estimate's bucket bound, raised to MinAfter (1 ms when 0).
func TestLearnedHedgeWarmsAt32Answers(t *testing.T) {
	for _, tc := range []struct {
		name     string
		answer   time.Duration
		minAfter time.Duration
		delay    time.Duration
	}{
		{"the estimate", ms(10), 0, 10 << 20}, // 10 ms lies in [9·2^20, 10·2^20) ns
		{"MinAfter above the estimate", ms(10), ms(15), ms(15)},
		{"MinAfter 0 means 1 ms", 100 * time.Microsecond, 0, time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				script := map[int]reply{latency.Every + 1: {after: time.Hour}}
				for n := 1; n <= latency.Every; n++ {
					script[n] = reply{after: tc.answer}
				}
				base := &concurrentScripted{answer: replies(script)}
				p := learnedPolicy(0.95, 0, 1, 3)
				p.Hedge.MinAfter = tc.minAfter
				p.Budget = BudgetConfig{}
				bs := NewBudgets()
				var rec recorder
				rt := New(base, WithPolicy(p), WithBudgets(bs), WithObserver(rec.observe))
				for i := 1; i <= latency.Every; i++ {
					require.Zero(t, bs.For(apiHost, p.Budget).Stats().HedgeAfter, "cold before answer %d", i)
					resp, err := get(t, rt, context.Background())
					require.NoError(t, err)
					resp.Body.Close()
				}
				assert.EqualValues(t, latency.Every, base.n.Load(), "no copy while cold")
				assert.Empty(t, rec.all())
				assert.Equal(t, at(tc.answer), bs.For(apiHost, p.Budget).Stats().HedgeAfter, "the raw estimate")

				start := time.Now()
				resp, err := get(t, rt, context.Background())
				require.NoError(t, err)
				assert.Equal(t, fmt.Sprint("attempt ", latency.Every+2), readAll(t, resp))
				assert.Equal(t, tc.delay, time.Since(start))
				assert.Equal(t, []Event{{Kind: EventHedge, Attempt: 2, Origin: "http://api.example.com", Delay: tc.delay}}, hedgeEvents(&rec))
			})
		})
	}
}

// Each copy of a round waits the learned delay after the one before:
// EventHedge.Delay is how long the round had gone without headers.
func TestLearnedHedgeCopiesFollowEachOther(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := &concurrentScripted{answer: replies(map[int]reply{1: {after: time.Hour}, 2: {after: time.Hour}})}
		bs := NewBudgets()
		warm(bs, apiHost, ms(10))
		var rec recorder
		start := time.Now()
		resp, err := get(t, New(base, WithPolicy(learnedPolicy(0.95, 0, 2, 3)), WithBudgets(bs), WithObserver(rec.observe)), context.Background())
		require.NoError(t, err)
		assert.Equal(t, "attempt 3", readAll(t, resp))
		d := at(ms(10))
		assert.Equal(t, 2*d, time.Since(start))
		assert.Equal(t, []Event{
			{Kind: EventHedge, Attempt: 2, Origin: "http://api.example.com", Delay: d},
			{Kind: EventHedge, Attempt: 3, Origin: "http://api.example.com", Delay: 2 * d},
		}, hedgeEvents(&rec))
	})
}

// Each recording rule of point 17, on one request: what the origin's
// estimator holds after it.
func TestLearnedHedgeRecords(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: &os.SyscallError{Syscall: "connect", Err: syscall.ECONNREFUSED}}
	reset := errors.New("read: connection reset by peer")
	declineAll := func(p *Policy) { p.RetryIf = func(*http.Response, error) bool { return false } }
	for _, tc := range []struct {
		name     string
		after    time.Duration // Hedge.After: the delay while cold
		set      func(*Policy)
		script   map[int]reply
		cancelAt time.Duration // the caller cancels then; 0: never
		status   int           // of the response returned; 0: an error
		err      error         // the error returned wraps it
		want     map[time.Duration]int
	}{
		{
			name:   "an answer at its time",
			script: map[int]reply{1: {after: ms(40)}},
			status: 200, want: map[time.Duration]int{at(ms(40)): 1},
		},
		{
			name:   "an answer not retried, a 404, at its time",
			script: map[int]reply{1: {after: ms(40), code: 404}},
			status: 404, want: map[time.Duration]int{at(ms(40)): 1},
		},
		{
			name:   "a PerTryTimeout cut at the timeout",
			set:    func(p *Policy) { p.PerTryTimeout = ms(50) },
			script: map[int]reply{1: {after: time.Hour}, 2: {after: ms(7)}},
			status: 200, want: map[time.Duration]int{at(ms(50)): 1, at(ms(7)): 1},
		},
		{
			// Inside the delay's bucket, not at its age (25 ms): an age
			// would raise a dead origin's delay for ever.
			name:   "the first attempt overtaken by a copy, at the round's delay",
			after:  ms(20),
			script: map[int]reply{1: {after: time.Hour}, 2: {after: ms(5)}},
			status: 200, want: map[time.Duration]int{at(ms(5)): 1, at(ms(20) - 1): 1},
		},
		{
			name:   "not: a copy canceled because the first attempt won",
			after:  ms(20),
			script: map[int]reply{1: {after: ms(30)}, 2: {after: time.Hour}},
			status: 200, want: map[time.Duration]int{at(ms(30)): 1},
		},
		{
			name:   "not: a fast 503",
			script: map[int]reply{1: {code: 503}, 2: {after: ms(10)}},
			status: 200, want: map[time.Duration]int{at(ms(10)): 1},
		},
		{
			name:   "not: a refused dial",
			script: map[int]reply{1: {after: ms(3), err: refused}, 2: {after: ms(10)}},
			status: 200, want: map[time.Duration]int{at(ms(10)): 1},
		},
		{
			name:     "not: attempts the caller ended",
			after:    ms(20),
			script:   map[int]reply{1: {after: time.Hour}, 2: {after: time.Hour}},
			cancelAt: ms(50), err: context.Canceled,
		},
		{
			// A base that answers though the caller has gone: the answer
			// is returned, and says nothing of the origin.
			name:     "not: an answer after the caller's cancel",
			script:   map[int]reply{1: {after: time.Hour, linger: ms(1), late: true}},
			cancelAt: ms(50), status: 200,
		},
		{
			// The copy's late answer wins the round, but the first attempt
			// was ended by the caller, not overtaken: no censored sample.
			name:     "not: the first attempt the caller ended, a copy answering after",
			after:    ms(20),
			script:   map[int]reply{1: {after: time.Hour, linger: ms(5)}, 2: {after: time.Hour, linger: ms(1), late: true}},
			cancelAt: ms(50), status: 200,
		},
		{
			name:   "not: an attempt the policy's Deadline ended",
			set:    func(p *Policy) { p.Deadline = ms(50) },
			script: map[int]reply{1: {after: time.Hour}},
			err:    ErrDeadline,
		},
		{
			name:   "not: an error RetryIf declines",
			set:    declineAll,
			script: map[int]reply{1: {after: ms(10), err: reset}},
			err:    reset,
		},
		{
			name:   "a response RetryIf declines, at its time",
			set:    declineAll,
			script: map[int]reply{1: {after: ms(10), code: 503}},
			status: 503, want: map[time.Duration]int{at(ms(10)): 1},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				base := &concurrentScripted{answer: replies(tc.script)}
				p := learnedPolicy(0.95, tc.after, 1, 1)
				if tc.set != nil {
					tc.set(&p)
				}
				bs := NewBudgets()
				ctx := context.Background()
				if tc.cancelAt > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithCancel(ctx)
					defer cancel()
					time.AfterFunc(tc.cancelAt, cancel)
				}
				resp, err := get(t, New(base, WithPolicy(p), WithBudgets(bs)), ctx)
				if tc.err != nil {
					assert.Nil(t, resp)
					assert.ErrorIs(t, err, tc.err)
				} else {
					require.NoError(t, err)
					readAll(t, resp)
					assert.Equal(t, tc.status, resp.StatusCode)
				}
				synctest.Wait() // every attempt is back
				assert.Equal(t, tc.want, recorded(bs, apiHost))
			})
		})
	}
}

// hostsSeen records the host of each attempt of a scripted base.
type hostsSeen struct {
	mu    sync.Mutex
	hosts map[int]string
}

func (h *hostsSeen) wrap(answer func(*http.Request, int) (*http.Response, error)) func(*http.Request, int) (*http.Response, error) {
	return func(r *http.Request, n int) (*http.Response, error) {
		h.mu.Lock()
		if h.hosts == nil {
			h.hosts = map[int]string{}
		}
		h.hosts[n] = r.URL.Host
		h.mu.Unlock()
		return answer(r, n)
	}
}

// list returns the hosts in the order the attempts were numbered.
func (h *hostsSeen) list() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]string, len(h.hosts))
	for n, host := range h.hosts {
		out[n-1] = host
	}
	return out
}

// A round waits the delay learned for the origin of its first attempt,
// wherever its copies go, and each attempt is recorded against the
// origin it went to.
func TestLearnedHedgeDelayIsTheFirstOrigins(t *testing.T) {
	const standby = "standby.example.com"
	fast, slow := at(ms(10)), at(ms(80)) // the two origins' learned delays
	for _, tc := range []struct {
		name    string
		script  map[int]reply
		hosts   []string
		copyTo  string
		delay   time.Duration // the round's wait before its copy
		took    time.Duration
		api     map[time.Duration]int // what the round added to each origin
		standby map[time.Duration]int
	}{
		{
			// The copy goes to the fallback after the own origin's delay;
			// the first attempt it overtook is the own origin's sample.
			name:    "the own origin's delay, a copy to the fallback",
			script:  map[int]reply{1: {after: time.Hour}, 2: {after: ms(7)}},
			hosts:   []string{apiHost, standby},
			copyTo:  "http://" + standby,
			delay:   fast,
			took:    fast + ms(7),
			api:     map[time.Duration]int{at(fast - 1): 1},
			standby: map[time.Duration]int{at(ms(7)): 1},
		},
		{
			// The own origin fails at once (not recorded); the next round
			// goes to the fallback and waits its delay before a copy
			// round the candidates, back to the own origin.
			name:    "the fallback's delay, a copy to the own origin",
			script:  map[int]reply{1: {code: 503}, 2: {after: time.Hour}},
			hosts:   []string{apiHost, standby, apiHost},
			copyTo:  "http://" + apiHost,
			delay:   slow,
			took:    slow,
			api:     map[time.Duration]int{at(0): 1},
			standby: map[time.Duration]int{at(slow - 1): 1},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var seen hostsSeen
				base := &concurrentScripted{answer: seen.wrap(replies(tc.script))}
				p := learnedPolicy(0.95, 0, 1, 3)
				p.Fallbacks = []string{"http://" + standby}
				bs := NewBudgets()
				warm(bs, apiHost, ms(10))
				warm(bs, standby, ms(80))
				var rec recorder
				start := time.Now()
				resp, err := get(t, New(base, WithPolicy(p), WithBudgets(bs), WithObserver(rec.observe)), context.Background())
				require.NoError(t, err)
				assert.Equal(t, fmt.Sprint("attempt ", len(tc.hosts)), readAll(t, resp))
				assert.Equal(t, tc.took, time.Since(start))
				assert.Equal(t, tc.hosts, seen.list())
				assert.Equal(t, []Event{{Kind: EventHedge, Attempt: len(tc.hosts), Origin: tc.copyTo, Delay: tc.delay}}, hedgeEvents(&rec))

				tc.api[fast] += latency.Every
				tc.standby[slow] += latency.Every
				assert.Equal(t, tc.api, recorded(bs, apiHost))
				assert.Equal(t, tc.standby, recorded(bs, standby))
			})
		})
	}
}

// With Quantile 0.95, an origin's window of N requests grants at most
// ⌈0.1·N⌉ learned copies, at least 1, cold or warm; the rest are refused
// for the cap (ReasonCopyCap), not the budget, which has room, and the
// window's stats show the copies counted against the cap. With the
// origin's budget off there is no window and no cap.
func TestLearnedCopiesAreCapped(t *testing.T) {
	const requests = 25 // in one window; 28 samples, too few to move the estimate
	var every []int
	for i := 1; i <= requests; i++ {
		every = append(every, i)
	}
	for _, tc := range []struct {
		name     string
		warm     bool
		disabled bool
		granted  []int // the requests whose copy went
	}{
		{"cold", false, false, []int{1, 11, 21}},
		{"warm", true, false, []int{1, 11, 21}},
		{"no cap with the budget off", false, true, every},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				// Every first attempt is slow, every copy answers at once.
				base := &concurrentScripted{answer: func(r *http.Request, n int) (*http.Response, error) {
					hold := ms(100)
					if AttemptFromContext(r.Context()) > 1 {
						hold = 0
					}
					return replies(map[int]reply{n: {after: hold}})(r, n)
				}}
				p := learnedPolicy(0.95, ms(20), 1, 3)
				p.Budget = BudgetConfig{Percent: 1000, Disabled: tc.disabled} // the share never refuses
				bs := NewBudgets()
				if tc.warm {
					warm(bs, apiHost, ms(10))
				}
				var rec recorder
				rt := New(base, WithPolicy(p), WithBudgets(bs), WithObserver(rec.observe))
				var granted []int
				for i := 1; i <= requests; i++ {
					before := len(hedgeEvents(&rec))
					resp, err := get(t, rt, context.Background())
					require.NoError(t, err)
					resp.Body.Close()
					events := hedgeEvents(&rec)[before:]
					require.Len(t, events, 1, "request %d wants one copy", i)
					switch events[0].Reason {
					case 0:
						granted = append(granted, i)
					case ReasonCopyCap:
						assert.Equal(t, "http://"+apiHost, events[0].Origin, "request %d: the cap of the round's origin", i)
					default:
						t.Fatalf("request %d: copy refused for %v", i, events[0].Reason)
					}
				}
				assert.Equal(t, tc.granted, granted)
				assert.EqualValues(t, requests+len(tc.granted), base.n.Load())
				if !tc.disabled {
					s := bs.For(apiHost, p.Budget).Stats()
					assert.Equal(t, BudgetStats{Requests: requests, Retries: 3, Allowance: 250, Credit: 10, Copies: 3},
						BudgetStats{Requests: s.Requests, Retries: s.Retries, Allowance: s.Allowance, Credit: s.Credit, Copies: s.Copies})
				}
			})
		})
	}
}

// An estimate in the histogram's last bucket or past its top says the
// origin is slower than a copy can help: no copy, not even at After.
func TestLearnedDelayPastTheTopSendsNoCopy(t *testing.T) {
	for _, d := range []time.Duration{2*time.Minute + 10*time.Second, 3 * time.Minute} {
		t.Run(d.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				// It answers after the histogram's top: a copy at the top would go.
				base := &concurrentScripted{answer: replies(map[int]reply{1: {after: 5 * time.Minute}})}
				p := learnedPolicy(0.95, ms(20), 1, 3)
				p.Budget = BudgetConfig{}
				bs := NewBudgets()
				warm(bs, apiHost, d)
				var rec recorder
				start := time.Now()
				resp, err := get(t, New(base, WithPolicy(p), WithBudgets(bs), WithObserver(rec.observe)), context.Background())
				require.NoError(t, err)
				assert.Equal(t, "attempt 1", readAll(t, resp))
				assert.Equal(t, 5*time.Minute, time.Since(start))
				assert.EqualValues(t, 1, base.n.Load())
				assert.Empty(t, rec.all())
				assert.Equal(t, latency.Top, bs.For(apiHost, p.Budget).Stats().HedgeAfter)
			})
		})
	}
}

// Eight clients with their own transports hedge requests to one origin
// through one Budgets, recording and reading its estimator and its cap
// together, while a reader polls its stats: clean under -race.
func TestLearnedHedgeManyClients(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const clients, requests = 8, 64
		base := &concurrentScripted{answer: func(r *http.Request, n int) (*http.Response, error) {
			hold := ms(1 + n%7)
			if n%13 == 0 {
				hold = ms(200)
			}
			return replies(map[int]reply{n: {after: hold}})(r, n)
		}}
		p := learnedPolicy(0.9, ms(5), 2, 3)
		p.Budget = BudgetConfig{}
		bs := NewBudgets()
		var answered, reads atomic.Int32
		var wg sync.WaitGroup
		for range clients {
			rt := New(base, WithPolicy(p), WithBudgets(bs))
			wg.Go(func() {
				for range requests {
					resp, err := get(t, rt, context.Background())
					if assert.NoError(t, err) {
						if resp.StatusCode == http.StatusOK {
							answered.Add(1)
						}
						resp.Body.Close()
					}
				}
			})
		}
		done := make(chan struct{})
		var reader sync.WaitGroup
		reader.Go(func() {
			for {
				select {
				case <-done:
					return
				case <-time.After(ms(1)):
				}
				_ = bs.For(apiHost, p.Budget).Stats().HedgeAfter
				_ = bs.String()
				reads.Add(1)
			}
		})
		wg.Wait()
		close(done)
		reader.Wait()

		assert.EqualValues(t, clients*requests, answered.Load())
		assert.Positive(t, reads.Load())
		l := bs.record(apiHost).latencies.Load()
		require.NotNil(t, l)
		est, warm := l.Estimate()
		assert.True(t, warm)
		assert.Greater(t, est, time.Duration(0))
		assert.Less(t, est, latency.Top)
		// Every request recorded its winner's answer at least, 512 in all:
		// the estimator holds the latest 256 to 512, give or take one
		// sample for each of the up to 2·clients attempts then settling.
		held := 0
		for _, n := range l.Samples() {
			held += n
		}
		assert.GreaterOrEqual(t, held, 256-2*clients)
		assert.LessOrEqual(t, held, 2*256+2*clients)
	})
}

// A request that is never hedged costs under a learned delay what it
// costs under a fixed one, and a hedged request whose first attempt
// answers allocates nothing more to learn.
func TestLearningAllocatesNothingMore(t *testing.T) {
	resp := &http.Response{StatusCode: http.StatusOK, Body: http.NoBody}
	base := roundTripFunc(func(*http.Request) (*http.Response, error) { return resp, nil })
	allocs := func(h Hedge, r *http.Request) float64 {
		p := DefaultPolicy()
		p.Hedge = h
		rt := New(base, WithPolicy(p))
		rt.RoundTrip(r) // makes the host's budget and estimator
		return testing.AllocsPerRun(100, func() { rt.RoundTrip(r) })
	}
	fixed, learned := Hedge{After: ms(50)}, Hedge{Quantile: 0.95}
	post, _ := http.NewRequest(http.MethodPost, "http://api.example.com/items", strings.NewReader("x"))
	req, _ := http.NewRequest(http.MethodGet, "http://api.example.com/items", nil)
	assert.Equal(t, allocs(fixed, post), allocs(learned, post), "unkeyed POST, never hedged")
	assert.Equal(t, allocs(fixed, req), allocs(learned, req), "hedged GET")
}

// An attempt cut by PerTryTimeout whose error RetryIf declines is not
// learned (point 17): such an error is an answer of the caller's choosing,
// not a time the origin took.
func TestADeclinedTimeoutIsNotLearned(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
			<-r.Context().Done()
			return nil, r.Context().Err()
		})
		p := DefaultPolicy()
		p.PerTryTimeout = 50 * time.Millisecond
		p.Hedge = Hedge{Quantile: 0.95}
		p.RetryIf = func(resp *http.Response, err error) bool { return err == nil && resp.StatusCode >= 500 }
		bs := NewBudgets()
		rt := New(base, WithPolicy(p), WithBudgets(bs))
		for range 2 * latency.Every {
			req, _ := http.NewRequest(http.MethodGet, "http://a.test/", nil)
			_, err := rt.RoundTrip(req)
			require.ErrorIs(t, err, ErrAttemptTimeout)
		}
		assert.Zero(t, bs.For("a.test", p.Budget).Stats().HedgeAfter, "still cold: nothing recorded")
	})
}

package chaos

import (
	"cmp"
	"context"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/httpretry/httpretry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// requestIDKey carries a logical request's id in its context down to the
// dialer, which sees the context's values but not the request.
type requestIDKey struct{}

// dialRecord is one dial the base transport made for a request.
type dialRecord struct {
	addr string
	err  error
}

// originBase is the base transport of the fallback scenario. Keep-alives
// are off, so every attempt dials a connection of its own and net/http
// never retries one internally (it does so only on reused connections):
// per logical request, the attempts it records, the dials and the calls
// the servers count are three independent tallies of one thing.
type originBase struct {
	tr *http.Transport

	mu    sync.Mutex
	hosts map[string][]string          // per request id, the host of each attempt in order
	dials map[string][]dialRecord      // per request id, every dial, refused ones included
	seen  map[string][]httpretry.Event // per request id, what the observer saw
}

func newOriginBase() *originBase {
	b := &originBase{
		hosts: map[string][]string{},
		dials: map[string][]dialRecord{},
		seen:  map[string][]httpretry.Event{},
	}
	dialer := &net.Dialer{Timeout: 5 * time.Second}
	b.tr = &http.Transport{
		DisableKeepAlives: true,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			conn, err := dialer.DialContext(ctx, network, addr)
			id, _ := ctx.Value(requestIDKey{}).(string)
			b.mu.Lock()
			b.dials[id] = append(b.dials[id], dialRecord{addr, err})
			b.mu.Unlock()
			return conn, err
		},
	}
	return b
}

// RoundTrip records the attempt's host and forwards it.
func (b *originBase) RoundTrip(r *http.Request) (*http.Response, error) {
	id := r.Header.Get(hdrID)
	b.mu.Lock()
	b.hosts[id] = append(b.hosts[id], r.URL.Host)
	b.mu.Unlock()
	return b.tr.RoundTrip(r)
}

// CloseIdleConnections forwards to the transport.
func (b *originBase) CloseIdleConnections() { b.tr.CloseIdleConnections() }

// observe keeps the events of each logical request.
func (b *originBase) observe(e httpretry.Event) {
	id := e.Request.Header.Get(hdrID)
	b.mu.Lock()
	b.seen[id] = append(b.seen[id], e)
	b.mu.Unlock()
}

// fallbackRig is a primary upstream behind a fault proxy and a standby
// upstream reached directly, named as the request's only fallback.
type fallbackRig struct {
	t                *testing.T
	primary, standby *upstream
	proxy            *faultProxy
	base             *originBase
	rt               *httpretry.RetryTransport
	policy           httpretry.Policy
	tally            tally
	// candidates is the request's own origin (the proxy) and the standby,
	// as hosts.
	candidates []string
}

func newFallbackRig(t *testing.T, p httpretry.Policy) *fallbackRig {
	primary, standby := newUpstream(t), newUpstream(t)
	proxy := newFaultProxy(t, primary.addr())
	base := newOriginBase()
	p.Fallbacks = []string{standby.srv.URL}
	r := &fallbackRig{
		t: t, primary: primary, standby: standby, proxy: proxy, base: base, policy: p,
		candidates: []string{proxy.addr, standby.addr()},
	}
	r.rt = newRetrying(t, base, p, httpretry.WithObserver(base.observe))
	return r
}

// drive sends specs from workers goroutines. Every other request names the
// standby with WithFallbacks, in place of the policy's identical list, so
// that both ways of giving fallbacks are driven.
func (r *fallbackRig) drive(specs []spec, workers int) {
	jobs := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				s := specs[i]
				ctx := context.WithValue(context.Background(), requestIDKey{}, s.id)
				if i%2 == 0 {
					ctx = httpretry.WithFallbacks(ctx, r.standby.srv.URL)
				}
				ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				r.tally.add(send(ctx, r.rt, r.proxy.URL(), s))
				cancel()
			}
		}()
	}
	for i := range specs {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
}

// bound is what one request may cost: candidates + MaxRetries.
func (r *fallbackRig) bound() int { return len(r.candidates) + r.policy.MaxRetries }

// ring is the order attempts go in: each candidate once, then round the
// candidates again from the request's own, n hosts long.
func (r *fallbackRig) ring(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = r.candidates[i%len(r.candidates)]
	}
	return out
}

// fallbackFigures is what one case cost, as RELIABILITY.md reports it.
type fallbackFigures struct {
	attempts, dials, refused, primaryCalls, standbyCalls, fallbacks int
	most                                                            int // the most upstream calls one request made, by any tally
}

// checkFallbackInvariants asserts, for every logical request: the bound
// at the base, at the dials and at the servers; attempts in ring order,
// announced by events whose Origin is where the next attempt went; an
// unkeyed POST served by at most one origin and connected to at most one;
// and, for the run, byte-identical request bodies at both origins, every
// request body closed and no connection left open.
func (r *fallbackRig) checkFallbackInvariants() fallbackFigures {
	t := r.t
	t.Helper()
	var f fallbackFigures
	assert.Empty(t, r.tally.violations(), "calls that broke an invariant")
	r.base.mu.Lock()
	r.primary.mu.Lock()
	r.standby.mu.Lock()
	for _, c := range r.tally.calls {
		hosts := r.base.hosts[c.id]
		dials := r.base.dials[c.id]
		served := r.primary.perID[c.id] + r.standby.perID[c.id]
		connected := 0
		var dialed []string
		for _, d := range dials {
			dialed = append(dialed, d.addr)
			if d.err == nil {
				connected++
			} else {
				f.refused++
			}
		}
		f.attempts += len(hosts)
		f.dials += len(dials)
		f.most = max(f.most, len(hosts), len(dials), served)
		assert.LessOrEqual(t, len(hosts), r.bound(), "%s: attempts beyond candidates + MaxRetries: %v", c.id, hosts)
		assert.LessOrEqual(t, len(dials), r.bound(), "%s: dials beyond candidates + MaxRetries", c.id)
		assert.LessOrEqual(t, served, r.bound(), "%s: upstream calls beyond candidates + MaxRetries", c.id)
		assert.Equal(t, r.ring(len(hosts)), hosts, "%s: attempts out of the candidates' order", c.id)
		assert.Equal(t, hosts, dialed, "%s: one dial per attempt, to its origin", c.id)
		// Each attempt after the first was announced with its origin.
		announced := []string{}
		for _, e := range r.base.seen[c.id] {
			switch e.Kind {
			case httpretry.EventFallback:
				f.fallbacks++
				fallthrough
			case httpretry.EventRetry:
				announced = append(announced, strings.TrimPrefix(e.Origin, "http://"))
			}
		}
		if len(hosts) > 0 {
			assert.Equal(t, hosts[1:], announced, "%s: events' Origin differs from where the attempts went", c.id)
		}
		if c.kind == kindUnkeyedPost {
			assert.False(t, r.primary.perID[c.id] > 0 && r.standby.perID[c.id] > 0, "%s: an unkeyed POST reached both origins", c.id)
			assert.LessOrEqual(t, connected, 1, "%s: an unkeyed POST connected to two origins", c.id)
		}
	}
	f.primaryCalls = int(r.primary.calls())
	f.standbyCalls = int(r.standby.calls())
	r.standby.mu.Unlock()
	r.primary.mu.Unlock()
	r.base.mu.Unlock()

	assert.Zero(t, r.primary.badBodies.Load(), "a complete request body at the primary differed from the original")
	assert.Zero(t, r.standby.badBodies.Load(), "a complete request body at the standby differed from the original")
	assert.Zero(t, r.standby.cutBodies.Load(), "the standby received a cut body")
	r.rt.CloseIdleConnections()
	assert.Eventually(t, func() bool { return len(r.tally.unclosedBodies()) == 0 },
		2*time.Second, 10*time.Millisecond, "request bodies never closed: %v", r.tally.unclosedBodies())
	assert.Eventually(t, func() bool { return r.primary.srv.Open() == 0 && r.standby.srv.Open() == 0 },
		5*time.Second, 10*time.Millisecond, "connections still open: primary %d, standby %d", r.primary.srv.Open(), r.standby.srv.Open())
	return f
}

// giveUpOf is the Reason of request id's EventGiveUp, 0 if none.
func (r *fallbackRig) giveUpOf(id string) httpretry.Reason {
	r.base.mu.Lock()
	defer r.base.mu.Unlock()
	for _, e := range r.base.seen[id] {
		if e.Kind == httpretry.EventGiveUp {
			return e.Reason
		}
	}
	return 0
}

// hostsOf is the hosts the attempts of request id went to.
func (r *fallbackRig) hostsOf(id string) []string {
	r.base.mu.Lock()
	defer r.base.mu.Unlock()
	return slices.Clone(r.base.hosts[id])
}

// TestFallbackUnderNetworkFaults puts each fault in front of the primary,
// with a healthy standby behind it (unhealthy in the last case, to reach
// the bound exactly), and drives GETs, keyed POSTs and unkeyed POSTs, with
// GetBody and recorded bodies, from six workers. Every case asserts the
// bound per request at three places, the order of origins, byte-identical
// bodies and that no unkeyed POST reached two origins; each then says what
// the caller must see.
func TestFallbackUnderNetworkFaults(t *testing.T) {
	cases := []struct {
		name     string
		toxics   []toxic
		disabled bool  // the primary refuses connections
		standby  int32 // share of the standby's answers that are 503, in percent
		noBudget bool
		// perTry is the per-try timeout where a case needs one to move on;
		// 0 means generousPerTry, which no attempt that is answered meets.
		perTry time.Duration
		// check says what each request's caller saw and where it went.
		check func(t *testing.T, r *fallbackRig, c *call, hosts []string)
	}{
		{
			name: "primary refused", disabled: true,
			check: func(t *testing.T, r *fallbackRig, c *call, hosts []string) {
				// Even an unkeyed POST: its dial was refused, it never left.
				assert.True(t, c.ok(), "%s: %s", c.id, statusOf(c))
				assert.Equal(t, r.candidates, hosts, c.id)
			},
		},
		{
			name:   "primary resets (reset_peer down)",
			toxics: []toxic{{Type: "reset_peer", Attributes: map[string]any{"timeout": 0}}},
			check:  failsOverUnlessUnkeyed,
		},
		{
			name:   "primary cuts the request body (limit_data up 600 B)",
			toxics: []toxic{{Type: "limit_data", Stream: "upstream", Attributes: map[string]any{"bytes": 600}}},
			check: func(t *testing.T, r *fallbackRig, c *call, hosts []string) {
				switch {
				case c.kind == kindGet:
					// A GET fits in 600 B: the primary answers it.
					assert.True(t, c.ok(), "%s: %s", c.id, statusOf(c))
					assert.Equal(t, r.candidates[:1], hosts, c.id)
				case c.kind == kindKeyedPost:
					assert.True(t, c.ok(), "%s: %s", c.id, statusOf(c))
				default:
					// Cut on the wire (or, if tiny, answered): never moved.
					assert.Equal(t, r.candidates[:1], hosts, c.id)
				}
			},
		},
		{
			name:   "primary cuts the response mid-body (limit_data down 2 KiB)",
			toxics: []toxic{{Type: "limit_data", Attributes: map[string]any{"bytes": 2048}}},
			check: func(t *testing.T, r *fallbackRig, c *call, hosts []string) {
				// A body of known length within Prefetch, to a request that
				// may be resent, is read whole before RoundTrip returns
				// (point 24): its cut is a failed attempt, and the call
				// fails over to the standby, whole. Any other body cut
				// after the headers is the caller's read error, as before.
				assert.NoError(t, c.err, c.id)
				assert.Equal(t, http.StatusOK, c.status, c.id)
				if c.kind != kindUnkeyedPost && c.ok() {
					assert.Contains(t, [][]string{r.candidates[:1], r.candidates[:2]}, hosts, c.id)
					return
				}
				assert.Equal(t, r.candidates[:1], hosts, c.id)
			},
		},
		{
			// Upstream: a response would close the connection (keep-alives
			// are off), which the toxic passes on as an EOF.
			// A second; at 250 ms a loaded machine's standby could miss it
			// twice in one call and end it with the primary's timeout.
			name:   "primary black hole (timeout up), PerTryTimeout 1s",
			toxics: []toxic{{Type: "timeout", Stream: "upstream", Attributes: map[string]any{"timeout": 0}}},
			perTry: time.Second,
			check: func(t *testing.T, r *fallbackRig, c *call, hosts []string) {
				failsOverUnlessUnkeyed(t, r, c, hosts)
				if c.kind == kindUnkeyedPost {
					assert.ErrorIs(t, c.err, httpretry.ErrAttemptTimeout, c.id)
				}
			},
		},
		{
			name: "primary refused, standby 503 (no budget: the bound exactly)", disabled: true, standby: 100, noBudget: true,
			check: func(t *testing.T, r *fallbackRig, c *call, hosts []string) {
				// An answer beats an error: the standby's last 503, not the
				// primary's refusal.
				assert.NoError(t, c.err, c.id)
				assert.Equal(t, http.StatusServiceUnavailable, c.status, c.id)
				if c.kind == kindUnkeyedPost {
					assert.Equal(t, r.candidates, hosts, "%s: refused, then the standby once", c.id)
				} else {
					assert.Equal(t, r.ring(r.bound()), hosts, "%s: candidates + MaxRetries", c.id)
				}
			},
		},
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := chaosPolicy()
			// These cases assert point 13's candidate order under a
			// primary that keeps failing: no demotion (point 18, in
			// demote_test.go) may reorder it.
			p.Demote = httpretry.Demote{After: -1}
			p.Budget.Disabled = tc.noBudget
			p.PerTryTimeout = cmp.Or(tc.perTry, generousPerTry)
			r := newFallbackRig(t, p)
			for _, tx := range tc.toxics {
				r.proxy.add(tx)
			}
			if tc.disabled {
				r.proxy.disable()
			}
			r.standby.failPct.Store(tc.standby)
			// Only the spec generator of the single-origin rig is used.
			gen := &rig{rnd: rand.New(rand.NewPCG(seed, 9))}
			start := time.Now()
			r.drive(gen.specs(12), 6)
			took := time.Since(start)

			for _, c := range r.tally.calls {
				tc.check(t, r, c, r.hostsOf(c.id))
			}
			f := r.checkFallbackInvariants()
			ok, rtErr, status, readErr := r.tally.counts()
			t.Logf("%s: requests=%d ok=%d rt-errors=%d non-200=%d body-read-errors=%d attempts=%d dials=%d (refused %d) primary-calls=%d standby-calls=%d fallbacks=%d most-per-request=%d bound=%d slowest=%s run=%s",
				tc.name, len(r.tally.calls), ok, rtErr, status, readErr, f.attempts, f.dials, f.refused,
				f.primaryCalls, f.standbyCalls, f.fallbacks, f.most, r.bound(),
				r.tally.slowest().Round(time.Millisecond), took.Round(time.Millisecond))
			if tc.noBudget {
				assert.Equal(t, r.bound(), f.most, "the bound is reached")
			}
		})
	}
}

// failsOverUnlessUnkeyed is what a fault on a connection that was
// obtained does: a GET or keyed POST fails over to the standby, which
// answers; an unkeyed POST may have reached the primary, so it ends there
// with an error.
func failsOverUnlessUnkeyed(t *testing.T, r *fallbackRig, c *call, hosts []string) {
	if c.kind == kindUnkeyedPost {
		assert.Error(t, c.err, c.id)
		assert.Equal(t, r.candidates[:1], hosts, c.id)
		assert.Equal(t, httpretry.ReasonNotIdempotent, r.giveUpOf(c.id), c.id)
		return
	}
	assert.True(t, c.ok(), "%s: %s", c.id, statusOf(c))
	// Usually exactly the two candidates; a standby slower than the
	// per-try timeout on a very loaded machine costs a resend, in ring
	// order.
	require.GreaterOrEqual(t, len(hosts), 2, c.id)
	assert.Equal(t, r.candidates, hosts[:2], c.id)
}

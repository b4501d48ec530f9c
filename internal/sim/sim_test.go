package sim_test

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/httpretry/httpretry"
)

// The simulator (issue 20): one seed draws one run of httpretry over the
// whole feature space, inside synctest so that time is virtual, with
// in-memory origins behind the base RoundTripper (sim_origin_test.go);
// every invariant the contract states is checked after each request and
// at the end of the run (sim_check_test.go). A failure prints the seed,
// the violations, a trace of the run in virtual time and the command that
// replays it (sim_trace_test.go).
//
// Dimensions (sim_draw_test.go, sim_scenario_test.go): MaxRetries 0-5 in
// the policy and per request; every backoff kind with or without a wait
// budget; RetryOn (with a status that is no failure now and then);
// PerTryTimeout, Deadline, MaxRetryAfter, MaxReplayBytes; budgets
// default, strict, tiny or disabled, shared by two transports or not, and
// when shared under two windows (the second's Window half or twice the
// first's, so that each switch between them reloads the window under
// load: every request counted exactly, learned copies counted against
// their cap and a refusal by it told as copy-cap);
// hedging off, fixed or learned with Max 1-3, its copies kept at the
// request's own origin (SameOrigin) or not; 0-3 fallbacks in the policy
// and per request; demotion by default (a zero Demote), set or turned off
// (After -1); RetryIf; AutoIdempotencyKey; WithIdempotent; httpretry
// inside httpretry, directly or through an opaque middleware; a plain
// base (an *http.Transport) or an opaque one; bursts of 8-32 first
// requests at once; observers that panic or sleep on some kinds; every
// policy given as its Go literal or, on half the seeds, as ParseConfig
// reads back its JSON, the checks reading the literal, and its Budget,
// Hedge, Demote and Resume and a Config of it written and read alone too;
// a hedge under MaxRetries 0 now and then, which Validate and ParseConfig
// must refuse. Origins change
// over virtual time: answers, 500/502/503/504, 429, Retry-After as
// seconds, dates, garbage or huge, refused and hung dials, resets before
// and after the body, slow and black-holed attempts, early answers to an
// upload still going on, bodies cut mid-stream. Requests
// come from several goroutines: GET, HEAD, PUT, DELETE, keyed and unkeyed
// POST and PATCH, GETs that ask to switch protocols (Connection:
// upgrade), bodies with and without GetBody around MaxReplayBytes,
// callers that cancel. Resumable bodies (point 21): Resume zero, Max
// 1-3 or off, with or without Idle, MinBytes small or the default; GETs
// of objects around MinBytes with a strong, weak, date-only or no
// validator, gzip, Accept-Ranges: none or no length, or a body that runs
// past its Content-Length; bodies cut at any offset by an unexpected EOF,
// a reset, an early EOF or a stall, the last bytes with the break or
// before it; resume requests answered exactly, with Range ignored, a
// wrong Content-Range, 416, the object replaced (If-Range honoured, or
// ignored: a 206 of the new version under its ETag or Last-Modified), a
// 206 that names no version, a 206 whose body runs past its range or
// stops short of it (its Content-Length the body's, the range's or none),
// 503 or a transport error; callers that read to the end with Reads of
// any size, close early, close from another goroutine (also just after
// an EventResume) or cancel. Three liveness scenarios run on fixed seeds
// (sim_scenario_test.go): hedging beside a fallback over five budget
// windows, a primary that black-holes once its hedge delay is learned,
// a demoted primary that comes back, and one that comes back on a cold
// connection, its probe slower than the hedge delay beside a warm
// standby.
//
// A quarter of the seeds (seed % 4 == 2) run the outage scenario of point
// 22 instead (sim_outage_draw_test.go): clients in an open loop or a
// closed loop of 1 to 64 workers send GETs through an outage of the
// primary (refused dials, resets, 503s, black holes, hung dials, blips,
// brownouts, flapping), with deadlines of the policy, the context, both
// or none, under Hold -1, the default, 1 or 3 and a HoldFor the default
// or shorter. Mixed runs draw Hold and HoldFor too, from a stream of
// their own. A quiescent sampler reads every origin's BudgetStats at the
// end of each instant something happens (sim_sample_test.go), and the sim
// counts each origin's streak itself (sim_streak_test.go), for point 22's
// invariants (sim_hold_check_test.go).
//
// Runs are exact in virtual time, but not every draw is the seed's: the
// jittered waits and demotion lengths come from the package's shared
// random source, which the public API does not let a test seed, and
// goroutines ready at the same virtual instant run in any order. The
// checks hold whatever those give; a replay shows the same run in all but
// such details.

var (
	simSeed  = flag.Uint64("sim.seed", 0, "simulator: run this one seed and print its trace")
	simSeeds = flag.Int("sim.seeds", 0, "simulator: how many seeds to run (0: 1500 with -short, else 20000)")
	simFirst = flag.Uint64("sim.first", 1, "simulator: the first seed of -sim.seeds")
)

// simRun is one seed's run: what was drawn, what the base saw, what the
// callers got.
type simRun struct {
	seed uint64
	cfg  *runConfig
	t0   time.Time

	mu          sync.Mutex
	attempts    []*simAttempt
	bodies      []*simBody
	occurrences map[attemptKey]int
	reqs        []*simReq
	trace       []traceLine
	violations  []violation
	registries  []*httpretry.Budgets  // one per distinct Budgets
	regOf       []int                 // transport -> registries index
	unknown     []string              // origins the base was sent to that the run has not
	objects     map[[2]int]*simObject // by request and origin
	tally       map[string]int        // what the run covered, summed over seeds
	// The quiescent sampler's (sim_sample_test.go): the requests inside
	// RoundTrip now, and every origin's BudgetStats at the end of each
	// instant something happened.
	smp     *sampler
	live    map[*simReq]bool
	samples []budgetSample
	shown   map[sampleKey][2]int // the streak and parked last traced
	// engagedRegs are the registries where the hold may have acted.
	engagedRegs map[int]bool
}

// simReq is one caller's request and what became of it.
type simReq struct {
	idx        int
	client     int
	tr         int
	plan       reqPlan
	pol        httpretry.Policy
	own        *simOrigin
	url        string
	req        *http.Request
	snap       reqSnapshot
	ctx        context.Context
	unkeyed    bool // POST or PATCH that nothing makes resendable
	maxRetries int
	cands      []*simOrigin
	start, end time.Time
	deadline   time.Time // the policy's, zero: none
	ctxDL      time.Time // the caller's context deadline
	cancelAt   time.Time // zero: no cancel
	status     int       // of the response returned; 0: none
	respBody   int       // X-Sim-Body of the response returned; -1: none
	err        error
	panicVal   any
	respData   []byte
	respErr    error
	callerBody *reqBody
	getBodies  []*reqBody
	events     []simEvent
	attempts   []*simAttempt // as the base saw them, in arrival order
	slept      time.Duration // observers' sleeps on this request
	panicked   bool          // an observer panicked on it
	learned    time.Duration // with sampleLearned, the first origin's HedgeAfter after it
	// The body the caller reads (point 21): the resume requests the base
	// saw, the bytes read so far, the breaks of the bodies under it in
	// order (sim_origin_test.go's noteBreak), and how reading ended.
	returned    bool // RoundTrip has returned
	resumeAtts  []*simAttempt
	delivered   int64
	breaks      []error
	readEOF     bool // the caller read to io.EOF
	closedEarly bool // the caller closed the body before its end
	closedAside bool // the caller closed it from another goroutine while reading
	bodyPanic   any  // a Read panicked (an observer's panic)
	ctxEnded    bool // the caller's context had ended when reading stopped
	closedAt    time.Time
	readEnd     time.Time
	closeAside  func() // closes the body from another goroutine; nil before the body is read
	asideArmed  bool   // closeOnResume's timer is set
	// atReturn is sr as RoundTrip left it (asReturned), for the checks
	// that wait for the run's end to know whether the hold may have acted
	// on it: touched (point 22, markTouched).
	atReturn *simReq
	touched  bool
}

func (sr *simReq) id() int {
	if sr == nil {
		return -1
	}
	return sr.idx
}

// drawID seeds the origins' draws for sr's attempts: its draw key, or
// its index.
func (sr *simReq) drawID() int {
	if sr != nil && sr.plan.drawKey != 0 {
		return sr.plan.drawKey
	}
	return sr.id()
}

type simEvent struct {
	at   time.Time
	body bool // told after RoundTrip returned: of the body
	httpretry.Event
}

type reqSnapshot struct {
	method, url, host string
	header            http.Header
	contentLength     int64
	body              io.ReadCloser
	getBody           bool
}

func snapshot(r *http.Request) reqSnapshot {
	return reqSnapshot{method: r.Method, url: r.URL.String(), host: r.Host, header: r.Header.Clone(),
		contentLength: r.ContentLength, body: r.Body, getBody: r.GetBody != nil}
}

type traceLine struct {
	at   time.Duration
	req  int
	text string
}

type violation struct {
	inv string // the invariant
	req int    // -1: the run's
	msg string
}

func (run *simRun) logf(sr *simReq, format string, args ...any) {
	run.mu.Lock()
	defer run.mu.Unlock()
	run.trace = append(run.trace, traceLine{at: time.Since(run.t0), req: sr.id(), text: fmt.Sprintf(format, args...)})
}

// violate records a broken invariant, which fails the seed.
func (run *simRun) violate(sr *simReq, inv, format string, args ...any) {
	run.mu.Lock()
	defer run.mu.Unlock()
	run.violations = append(run.violations, violation{inv: inv, req: sr.id(), msg: fmt.Sprintf(format, args...)})
}

func (run *simRun) originFor(scheme, host string) *simOrigin {
	u := scheme + "://" + host
	for _, o := range run.cfg.origins {
		if o.url == u {
			return o
		}
	}
	run.mu.Lock()
	run.unknown = append(run.unknown, u)
	run.mu.Unlock()
	return &simOrigin{idx: 99, url: u, key: host, scheme: scheme, phases: []phase{{}}}
}

type simPanic struct{ kind httpretry.EventKind }

// simMiddleware only forwards: an opaque base, which hides the httpretry
// inside it from the outer.
type simMiddleware struct{ next http.RoundTripper }

func (m simMiddleware) RoundTrip(r *http.Request) (*http.Response, error) { return m.next.RoundTrip(r) }

// build makes the run's transports.
func (run *simRun) build() []http.RoundTripper {
	cfg := run.cfg
	var rts []http.RoundTripper
	for i := range cfg.policies {
		cfg.policies[i] = run.checkHedgeRetries(run.checkRetryOn(cfg.policies[i]))
	}
	inner := cfg.inner
	if cfg.nested {
		cfg.inner = run.checkHedgeRetries(run.checkRetryOn(cfg.inner))
		inner = run.form(cfg.inner)
	}
	if cfg.readingRetryIf {
		for i := range cfg.policies {
			if cfg.policies[i].RetryIf != nil {
				cfg.policies[i].RetryIf = run.readingRetryIf
			}
		}
	}
	for i, lit := range cfg.policies {
		// The checks read the literal; the transport may run its JSON.
		pol := run.form(lit)
		var b *httpretry.Budgets
		if i > 0 && cfg.sharedBudgets {
			b = run.registries[0]
			run.regOf = append(run.regOf, 0)
		} else {
			b = httpretry.NewBudgets()
			run.registries = append(run.registries, b)
			run.regOf = append(run.regOf, len(run.registries)-1)
		}
		var base http.RoundTripper = &simBase{run: run}
		run.tallyStack(i)
		switch {
		case cfg.plainBase:
			// No HTTP/2: it would register https itself.
			plain := &http.Transport{TLSNextProto: map[string]func(string, *tls.Conn) http.RoundTripper{}}
			plain.RegisterProtocol("http", base)
			plain.RegisterProtocol("https", base)
			base = plain
		case cfg.nested:
			base = httpretry.New(base, httpretry.WithPolicy(inner), httpretry.WithBudgets(httpretry.NewBudgets()))
			if cfg.viaMiddleware {
				base = simMiddleware{base}
			}
		}
		opts := []httpretry.Option{httpretry.WithPolicy(pol), httpretry.WithBudgets(b),
			httpretry.WithObserver(run.record)}
		if cfg.panicOn != nil {
			opts = append(opts, httpretry.WithObserver(func(e httpretry.Event) {
				sr := reqOf(e.Request)
				if cfg.panicOn[e.Kind] && sr != nil && sr.idx%cfg.panicEvery == 0 {
					run.mu.Lock()
					sr.panicked = true
					run.mu.Unlock()
					panic(simPanic{e.Kind})
				}
			}))
		}
		if cfg.sleepOn != nil {
			opts = append(opts, httpretry.WithObserver(func(e httpretry.Event) {
				if cfg.sleepOn[e.Kind] {
					if sr := reqOf(e.Request); sr != nil {
						run.mu.Lock()
						sr.slept += cfg.sleepFor
						run.mu.Unlock()
					}
					time.Sleep(cfg.sleepFor)
				}
			}))
		}
		rts = append(rts, httpretry.New(base, opts...))
	}
	return rts
}

// tallyStack counts, once a run, how its transports are stacked.
func (run *simRun) tallyStack(i int) {
	cfg := run.cfg
	if i > 0 {
		return
	}
	for name, on := range map[string]bool{"runs nested through a middleware": cfg.viaMiddleware,
		"runs over a plain base": cfg.plainBase, "runs with a burst of first requests": cfg.burst,
		"bursts through a middleware": cfg.burst && cfg.viaMiddleware} {
		if on {
			run.tally[name]++
		}
	}
}

// form is the policy a transport of the run is given for the literal p:
// p itself, or with viaJSON what ParseConfig reads from p's JSON (RetryIf,
// which JSON does not hold, set again). The two must mean one policy
// (point 20), so the checks, which read p, hold for either; and the JSON
// read back must write itself again, and so must its parts (checkAlone).
func (run *simRun) form(p httpretry.Policy) httpretry.Policy {
	if !run.cfg.viaJSON {
		return p
	}
	read := func(p httpretry.Policy) (httpretry.Policy, []byte, bool) {
		j, err := json.Marshal(p)
		if err != nil {
			run.violate(nil, "json-form", "json.Marshal: %v", err)
			return p, nil, false
		}
		c, err := httpretry.ParseConfig([]byte(`{"default": ` + string(j) + `}`))
		if err != nil {
			run.violate(nil, "json-form", "ParseConfig refuses what json.Marshal wrote: %v\n%s", err, j)
			return p, j, false
		}
		return c.Default, j, true
	}
	q, j, ok := read(p)
	if !ok {
		return p
	}
	run.checkAlone(q, j)
	if again, j, ok := read(q); ok {
		if k, _ := json.Marshal(again); string(j) != string(k) {
			run.violate(nil, "json-form", "a policy read from JSON writes %s, read again %s", j, k)
		}
	}
	q.RetryIf = p.RetryIf
	return q
}

func reqOf(r *http.Request) *simReq {
	if r == nil {
		return nil
	}
	sr, _ := r.Context().Value(simReqKey{}).(*simReq)
	return sr
}

// record is the first observer of every transport: it keeps each event
// with its request.
func (run *simRun) record(e httpretry.Event) {
	sr := reqOf(e.Request)
	if sr == nil {
		run.violate(nil, "event-request", "%s event without the caller's request", e.Kind)
		return
	}
	if e.Request != sr.req {
		run.violate(sr, "event-request", "%s event carries a request that is not the caller's", e.Kind)
	}
	run.mu.Lock()
	returned, delivered := sr.returned, sr.delivered
	sr.events = append(sr.events, simEvent{at: time.Now(), body: returned, Event: e})
	run.mu.Unlock()
	// The body's events come from the caller's Read, between two of
	// readBody's: what it has read is what was delivered.
	if returned && (e.Kind == httpretry.EventResume || e.Kind == httpretry.EventGiveUp) && e.Offset != delivered {
		run.violate(sr, "resume-offset", "%s event with Offset %d, %d bytes delivered", e.Kind, e.Offset, delivered)
	}
	if d := sr.plan.closeOnResume; returned && e.Kind == httpretry.EventResume && d >= 0 {
		// Close while the resume is waited for or in flight.
		run.mu.Lock()
		aside, armed := sr.closeAside, sr.asideArmed
		sr.asideArmed = true
		run.mu.Unlock()
		if aside != nil && !armed {
			time.AfterFunc(d, aside)
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "event %s attempt %d origin %s", e.Kind, e.Attempt, e.Origin)
	if e.Offset != 0 {
		fmt.Fprintf(&b, " offset %d", e.Offset)
	}
	if e.Status != 0 {
		fmt.Fprintf(&b, " status %d", e.Status)
	}
	if e.Err != nil {
		fmt.Fprintf(&b, " err %q", e.Err)
	}
	if e.Delay != 0 {
		fmt.Fprintf(&b, " delay %v", e.Delay)
	}
	if e.Reason != 0 {
		fmt.Fprintf(&b, " reason %s", e.Reason)
	}
	run.logf(sr, "%s", b.String())
}

// newRun draws the run of seed.
func newRun(seed uint64) *simRun {
	run := &simRun{seed: seed, occurrences: map[attemptKey]int{}, objects: map[[2]int]*simObject{},
		tally: map[string]int{}, live: map[*simReq]bool{}, shown: map[sampleKey][2]int{}}
	switch seed % 256 {
	case 7:
		run.cfg = drawHedgeFallback(seed)
	case 71:
		run.cfg = drawBlackHoleDemote(seed)
	case 135:
		run.cfg = drawDemoteReturn(seed)
	case 199:
		run.cfg = drawProbeCold(seed)
	default:
		if seed%4 == 2 {
			run.cfg = drawOutage(seed) // a quarter of the seeds (point 22)
		} else {
			run.cfg = drawMixed(seed)
		}
	}
	// Half the seeds run every policy from its JSON, the scenarios' (on
	// fixed seeds modulo 256) every other block of 256.
	run.cfg.viaJSON = (seed^seed>>8)&1 == 1
	return run
}

// play runs the run inside the current synctest bubble.
func (run *simRun) play() {
	run.t0 = time.Now()
	rts := run.build()
	run.startSampler()
	var wg sync.WaitGroup
	for ci, cp := range run.cfg.clients {
		wg.Go(func() {
			if cp.loop != nil {
				run.playLoop(rts[cp.transport], ci, cp, &wg)
				return
			}
			for _, q := range cp.reqs {
				if q.gapBefore > 0 {
					time.Sleep(q.gapBefore)
				}
				run.send(rts[cp.transport], ci, cp.transport, q)
			}
		})
	}
	wg.Wait()
	run.stopSampler()
	run.logf(nil, "all requests done")
	synctest.Wait() // every attempt sent has reached the base
	run.markTouched()
	run.checkBudgets()
	// Uploads that go on after an early answer, and bodies still being
	// discarded, end within this.
	time.Sleep(time.Minute)
	synctest.Wait()
	for _, rt := range rts {
		rt.(*httpretry.RetryTransport).CloseIdleConnections()
	}
	run.checkEnd()
	run.checkHold()
	run.checkSweep()
}

// send makes one request of client ci through rt and checks what came
// back.
func (run *simRun) send(rt http.RoundTripper, ci, tr int, q reqPlan) {
	o := run.cfg.origins[q.origin]
	run.mu.Lock()
	sr := &simReq{idx: len(run.reqs), client: ci, tr: tr, plan: q, pol: run.cfg.policies[tr], own: o,
		url: o.url + q.path, respBody: -1}
	run.reqs = append(run.reqs, sr)
	run.mu.Unlock()

	ctx := context.WithValue(context.Background(), simReqKey{}, sr)
	if q.timeout > 0 {
		var cancelTimeout context.CancelFunc
		ctx, cancelTimeout = context.WithTimeout(ctx, q.timeout)
		defer cancelTimeout()
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if q.overrides {
		ctx = httpretry.WithMaxRetries(ctx, q.override)
	}
	var fallbacks []string
	if q.setFallbacks {
		for _, i := range q.fallbacks {
			fallbacks = append(fallbacks, run.cfg.origins[i].url)
		}
		ctx = httpretry.WithFallbacks(ctx, fallbacks...)
	} else {
		fallbacks = sr.pol.Fallbacks
	}
	if q.idem {
		ctx = httpretry.WithIdempotent(ctx)
	}
	sr.ctx = ctx
	var body io.Reader
	if q.hasBody {
		sr.callerBody = &reqBody{data: q.body, mu: &run.mu}
		body = sr.callerBody
	}
	req, err := http.NewRequestWithContext(ctx, q.method, sr.url, body)
	if err != nil {
		panic(err)
	}
	req.Header.Set("X-Sim-Req", strconv.Itoa(sr.idx))
	req.Header.Set("Accept", "text/plain")
	if q.keyed {
		req.Header.Set("Idempotency-Key", "key-"+strconv.Itoa(sr.idx))
	}
	if q.upgrade {
		req.Header.Set("Connection", "Upgrade")
		req.Header.Set("Upgrade", "sim")
	}
	if q.hasBody {
		if q.knownLen {
			req.ContentLength = int64(len(q.body))
		}
		if q.getBody {
			req.GetBody = func() (io.ReadCloser, error) {
				b := &reqBody{data: q.body, mu: &run.mu}
				run.mu.Lock()
				sr.getBodies = append(sr.getBodies, b)
				run.mu.Unlock()
				return b, nil
			}
		}
	}
	sr.req = req
	sr.snap = snapshot(req)
	run.setExpectations(sr, fallbacks)

	sr.start = time.Now()
	if p := sr.pol.Deadline; p > 0 {
		sr.deadline = sr.start.Add(p)
	}
	sr.ctxDL, _ = ctx.Deadline()
	if q.cancelAfter > 0 {
		sr.cancelAt = sr.start.Add(q.cancelAfter)
		t := time.AfterFunc(q.cancelAfter, func() { cancel(errSimCanceled) })
		defer t.Stop()
	}
	run.logf(sr, "send %s %s (client %d, transport %d, maxRetries %d, candidates %d%s)", q.method, sr.url,
		ci, tr, sr.maxRetries, len(sr.cands), reqNotes(sr))
	var resp *http.Response
	run.mu.Lock()
	run.live[sr] = true // its first attempt's start samples it
	run.mu.Unlock()
	func() {
		defer func() {
			if v := recover(); v != nil {
				sr.panicVal = v
			}
		}()
		resp, sr.err = rt.RoundTrip(req)
	}()
	sr.end = time.Now()
	run.mu.Lock()
	sr.returned = true
	delete(run.live, sr)
	run.mu.Unlock()
	run.kickSampler()
	switch {
	case sr.panicVal != nil:
		run.logf(sr, "panic: %v", sr.panicVal)
	case resp != nil:
		sr.status = resp.StatusCode
		if id, err := strconv.Atoi(resp.Header.Get("X-Sim-Body")); err == nil {
			run.mu.Lock()
			sr.respBody = id
			run.mu.Unlock()
		}
		run.logf(sr, "return %d (body %d)", resp.StatusCode, sr.respBody)
	default:
		run.logf(sr, "return error: %v", sr.err)
	}
	run.checkReturn(sr, resp)
	if run.cfg.sampleLearned {
		run.registries[run.regOf[tr]].Range(func(host string, s httpretry.BudgetStats) bool {
			if host == run.cfg.origins[0].key {
				sr.learned = s.HedgeAfter
				run.logf(sr, "learned delay of %s: %v", host, s.HedgeAfter)
			}
			return true
		})
	}
	if resp != nil {
		run.readBody(sr, resp.Body)
	}
}

// readBody reads body as sr's caller does: to its end, or to closeAfter
// bytes, a Read of at most readMax bytes at a time, with a Close from
// another goroutine at closeAt; it closes body once.
func (run *simRun) readBody(sr *simReq, body io.ReadCloser) {
	q := sr.plan
	var once sync.Once
	closeBody := func() { once.Do(func() { body.Close() }) }
	defer closeBody()
	if !q.readResp {
		return
	}
	// A Close from another goroutine while the caller still reads.
	aside := func() {
		run.mu.Lock()
		if !sr.readEnd.IsZero() || sr.closedAside {
			run.mu.Unlock()
			return
		}
		sr.closedAside, sr.closedAt = true, time.Now()
		run.mu.Unlock()
		run.logf(sr, "the caller closes the body from another goroutine")
		closeBody()
	}
	run.mu.Lock()
	sr.closeAside = aside
	run.mu.Unlock()
	if q.closeAt > 0 {
		t := time.AfterFunc(q.closeAt, aside)
		defer t.Stop()
	}
	defer func() {
		if v := recover(); v != nil {
			sr.bodyPanic = v
			run.logf(sr, "read panicked: %v", v)
		}
		sr.ctxEnded = sr.ctx.Err() != nil
		run.mu.Lock()
		sr.readEnd = time.Now()
		run.mu.Unlock()
	}()
	r := rand.New(rand.NewPCG(run.seed, uint64(sr.idx)))
	buf := make([]byte, q.readMax)
	for {
		if q.closeAfter >= 0 && len(sr.respData) >= q.closeAfter {
			sr.closedEarly = true
			run.logf(sr, "the caller closes the body after %d bytes", len(sr.respData))
			return
		}
		n, err := body.Read(buf[:1+r.IntN(len(buf))])
		run.mu.Lock()
		sr.respData = append(sr.respData, buf[:n]...)
		sr.delivered = int64(len(sr.respData))
		run.mu.Unlock()
		if err == io.EOF {
			sr.readEOF = true
			run.logf(sr, "read %d bytes to EOF", len(sr.respData))
			return
		}
		if err != nil {
			sr.respErr = err
			run.logf(sr, "read %d bytes, then: %v", len(sr.respData), err)
			return
		}
	}
}

func reqNotes(sr *simReq) string {
	var s []string
	q := sr.plan
	if q.hasBody {
		s = append(s, fmt.Sprintf("body %d", len(q.body)))
		if q.getBody {
			s = append(s, "GetBody")
		}
	}
	if q.keyed {
		s = append(s, "keyed")
	}
	if q.idem {
		s = append(s, "WithIdempotent")
	}
	if sr.unkeyed {
		s = append(s, "unkeyed")
	}
	if q.cancelAfter > 0 {
		s = append(s, fmt.Sprintf("cancel after %v", q.cancelAfter))
	}
	if q.timeout == 0 {
		s = append(s, "no context deadline")
	}
	if q.upgrade {
		s = append(s, "upgrade")
	}
	if len(s) == 0 {
		return ""
	}
	return ", " + strings.Join(s, ", ")
}

// setExpectations computes what the contract promises of sr: its
// candidates (point 13) and its pool of resends.
func (run *simRun) setExpectations(sr *simReq, fallbacks []string) {
	sr.maxRetries = sr.pol.MaxRetries
	if sr.plan.overrides {
		sr.maxRetries = min(max(sr.plan.override, 0), httpretry.MaxRetriesLimit)
	}
	sr.cands = []*simOrigin{sr.own}
	for _, f := range fallbacks {
		o := run.originFor(strings.SplitN(f, "://", 2)[0], strings.SplitN(f, "://", 2)[1])
		dup := false
		for _, c := range sr.cands {
			dup = dup || c.url == o.url
		}
		if dup || sr.own.scheme == "https" && o.scheme == "http" {
			continue
		}
		sr.cands = append(sr.cands, o)
	}
	m := sr.plan.method
	sr.unkeyed = (m == "POST" || m == "PATCH") && !sr.plan.keyed && !sr.plan.idem && !sr.pol.AutoIdempotencyKey
}

// TestSimulate runs the simulator: -sim.seeds seeds from -sim.first,
// spread over parallel shards, or the one -sim.seed with its trace.
func TestSimulate(t *testing.T) {
	sum := &simSummary{byInv: map[string][]uint64{}, tally: map[string]int{}}
	setHoldChecks(t)
	start := time.Now()
	if *simSeed != 0 {
		sum.runSeed(t, *simSeed, true)
		sum.log(t, 1, *simSeed, time.Since(start))
		return
	}
	n := *simSeeds
	if n == 0 {
		n = 20000
		if testing.Short() {
			n = 1500 // about 40 s under -race on a busy 2-core machine
		}
	}
	shards := max(min(runtime.GOMAXPROCS(0), 4), 1)
	t.Run("seeds", func(t *testing.T) {
		for k := range shards {
			t.Run(strconv.Itoa(k), func(t *testing.T) {
				t.Parallel()
				for seed := *simFirst + uint64(k); seed < *simFirst+uint64(n); seed += uint64(shards) {
					sum.runSeed(t, seed, false)
				}
			})
		}
	})
	sum.log(t, n, *simFirst, time.Since(start))
}

// simSummary gathers what the shards found.
type simSummary struct {
	mu     sync.Mutex
	byInv  map[string][]uint64 // failing invariant -> seeds
	failed int
	tally  map[string]int
}

// runSeed plays seed in a bubble of its own; any violation fails t, the
// first three seeds' with their trace.
func (sum *simSummary) runSeed(t *testing.T, seed uint64, verbose bool) {
	run := newRun(seed)
	synctest.Test(t, func(t *testing.T) { run.play() })
	sum.mu.Lock()
	defer sum.mu.Unlock()
	for k, n := range run.tally {
		sum.tally[k] += n
	}
	for _, v := range run.violations {
		sum.byInv[v.inv] = append(sum.byInv[v.inv], seed)
	}
	if verbose {
		t.Log(run.report(run.violations, true))
	}
	if len(run.violations) > 0 {
		sum.failed++
		if sum.failed <= 3 && !verbose {
			t.Error(run.report(run.violations, false))
		} else {
			t.Fail()
		}
	}
}

func (sum *simSummary) log(t *testing.T, n int, first uint64, el time.Duration) {
	t.Logf("simulator: %d seeds from %d in %v (%.0f seeds/s), %d failed", n, first, el.Round(time.Millisecond),
		float64(n)/el.Seconds(), sum.failed)
	covered := make([]string, 0, len(sum.tally))
	for k, n := range sum.tally {
		covered = append(covered, fmt.Sprintf("%s %d", k, n))
	}
	sort.Strings(covered)
	t.Logf("covered: %s", strings.Join(covered, ", "))
	names := make([]string, 0, len(sum.byInv))
	for d := range sum.byInv {
		names = append(names, d)
	}
	sort.Strings(names)
	for _, d := range names {
		seeds := append([]uint64(nil), sum.byInv[d]...)
		sort.Slice(seeds, func(i, j int) bool { return seeds[i] < seeds[j] })
		seeds = uniq(seeds)
		t.Logf("failing invariant %s: %d seeds, e.g. %v", d, len(seeds), seeds[:min(len(seeds), 6)])
	}
	if sum.failed > 3 {
		t.Errorf("simulator: %d seeds failed; the first 3 are shown", sum.failed)
	}
}

func uniq(xs []uint64) []uint64 {
	var out []uint64
	for i, x := range xs {
		if i == 0 || x != xs[i-1] {
			out = append(out, x)
		}
	}
	return out
}

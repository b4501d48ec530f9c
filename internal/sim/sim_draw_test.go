package sim_test

import (
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/httpretry/httpretry"
)

// Drawing a run from its seed: the origins and how they behave over
// virtual time, the policies and transports, the observers, and the
// requests of each client goroutine. Every draw comes from one PCG seeded
// with the seed, so that a seed names one run.

// runConfig is everything a seed decides before the run starts.
type runConfig struct {
	scenario string // "mixed", or a liveness scenario (see sim_check_test.go)
	origins  []*simOrigin
	// policies are the transports' policies; transports beyond the first
	// share the first's Budgets when sharedBudgets (a reload, or a second
	// client of the same upstreams).
	policies      []httpretry.Policy
	sharedBudgets bool
	// twoWindows gives the second transport sharing the Budgets another
	// budget Window than the first's: two windows over one origin, each
	// request of one after one of the other a reload of the window under
	// load (point 23).
	twoWindows bool
	// nested wraps each transport around an inner httpretry with the
	// policy inner (which has no fallbacks of its own), through an opaque
	// middleware between them when viaMiddleware.
	nested        bool
	viaMiddleware bool
	inner         httpretry.Policy
	// plainBase puts the sim's base behind an *http.Transport, a plain
	// base whose first attempts go unmarked (point 20); never nested.
	plainBase bool
	// burst adds clients whose one request each goes at the run's first
	// instant: many first requests at once.
	burst bool
	// viaJSON gives the transports their policies as ParseConfig reads
	// them from json.Marshal's text, in place of the Go literals.
	viaJSON bool
	// sampleLearned reads the first origin's learned hedge delay after
	// each request (BudgetStats.HedgeAfter).
	sampleLearned bool
	// Observers: one that panics on the kinds in panicOn, for requests
	// whose id is a multiple of panicEvery; one that sleeps sleepFor on
	// the kinds in sleepOn.
	panicOn    map[httpretry.EventKind]bool
	panicEvery int
	sleepOn    map[httpretry.EventKind]bool
	sleepFor   time.Duration
	clients    []clientPlan
	// readingRetryIf gives policies with RetryIf one that reads the bodies
	// read whole; smallCuts cuts and stalls small answers as objects are
	// (point 24, drawPrefetch).
	readingRetryIf, smallCuts bool
	// outage is the outage scenario's plan (sim_outage_draw_test.go); nil
	// in other runs.
	outage *outagePlan
}

// clientPlan is one client goroutine: its requests in turn, or with loop
// its one request sent again and again.
type clientPlan struct {
	transport int
	reqs      []reqPlan
	loop      *loopPlan
}

type reqPlan struct {
	method    string
	origin    int
	path      string
	keyed     bool // a POST or PATCH carries Idempotency-Key
	idem      bool // WithIdempotent
	body      []byte
	hasBody   bool
	getBody   bool
	knownLen  bool
	override  int  // WithMaxRetries(n), when overrides
	overrides bool //
	// fallbacks, when setFallbacks, are WithFallbacks' origins (indexes).
	fallbacks    []int
	setFallbacks bool
	cancelAfter  time.Duration // 0: the caller never cancels
	timeout      time.Duration // the caller's context deadline; 0: none (outage runs only)
	readResp     bool          // read the response body before closing it
	gapBefore    time.Duration // the client's pause before sending it
	// A GET of an object (path /obj): its size, and how its validator and
	// coding are served (objKind). The caller reads at most readMax bytes
	// a Read, closes the body after closeAfter bytes (-1: never) or, from
	// another goroutine, closeAt after RoundTrip returned (0: never).
	object     bool
	objSize    int
	objKind    objKind
	readMax    int
	closeAfter int
	closeAt    time.Duration
	// closeOnResume, when not negative, is how long after the first
	// EventResume the caller closes the body from another goroutine.
	closeOnResume time.Duration
	// upgrade makes a GET ask to switch protocols (Connection: upgrade,
	// Upgrade: sim): never hedged, never resent after an answer.
	upgrade bool
	// drawKey, when not 0, seeds the origins' draws for the request in
	// place of its index, which a loop's concurrent sends number in any
	// order.
	drawKey int
}

// originURLs are the run's upstreams; https ones make a request to them
// skip http fallbacks, and distinct names keep their budget keys apart.
var originURLs = []struct{ url, key, scheme string }{
	{"http://o0.sim", "o0.sim", "http"},
	{"http://o1.sim:8080", "o1.sim:8080", "http"},
	{"https://o2.sim", "o2.sim", "https"},
	{"https://o3.sim:8443", "o3.sim:8443", "https"},
	{"http://o4.sim", "o4.sim", "http"},
}

// profiles are the behaviour mixes a phase of an origin draws from.
var profiles = []map[behaviour]int{
	{bOK: 20, bSlow: 1},
	{bOK: 10, b503: 3, b502: 1, b504: 1, b429: 1, bRefuse: 1, bResetBefore: 1, bResetAfter: 1, bCut: 1,
		b500: 1, bEarly503: 1},
	{bRefuse: 5, b503: 2, bEarly503: 1},
	{bBlackHole: 5, bDialHang: 1, bOK: 1},
	{bSlow: 5, bOK: 5},
	{b503: 4, b429: 2, bOK: 2},
	{bEarly503: 3, bOK: 1},
}

// resumeProfiles are the mixes an origin draws its answers to resume
// requests from.
var resumeProfiles = []map[resumeBeh]int{
	{rHonour: 1},
	{rHonour: 6, rIgnore: 2, rWrongRange: 1, r416: 1, rReplace: 1, rReplace206: 1, r503: 2, rRefuse: 1,
		rReset: 1, rBlackHole: 1, rLonger: 1, rShorter: 1, rBare: 1},
	{rIgnore: 1},
	{rHonour: 2, r503: 3, rReset: 1},
	{rReplace: 1, rHonour: 1},
	{rWrongRange: 1, r416: 1, rHonour: 2},
	{rReplace206: 2, rLonger: 1, rShorter: 2, rBare: 1, rHonour: 2},
}

func weights8(m map[resumeBeh]int) (w [numResumeBehs]int) {
	for b, n := range m {
		w[b] = n
	}
	return w
}

func weights(m map[behaviour]int) (w [numBehaviours]int) {
	for b, n := range m {
		w[b] = n
	}
	return w
}

func pick[T any](r *rand.Rand, xs ...T) T { return xs[r.IntN(len(xs))] }

func drawOrigins(r *rand.Rand) []*simOrigin {
	var os []*simOrigin
	for i, u := range originURLs {
		o := &simOrigin{idx: i, url: u.url, key: u.key, scheme: u.scheme}
		var until time.Duration
		for n := 1 + r.IntN(3); n > 0; n-- {
			until += time.Duration(r.IntN(3000)) * time.Millisecond
			o.phases = append(o.phases, phase{until: until, weights: weights(profiles[r.IntN(len(profiles))])})
		}
		for k := r.IntN(4); k > 0; k-- {
			o.raKinds = append(o.raKinds, raForms[r.IntN(len(raForms))])
		}
		o.cutPct = pick(r, 0, 20, 50, 50, 80)
		o.resumes = weights8(resumeProfiles[r.IntN(len(resumeProfiles))])
		os = append(os, o)
	}
	return os
}

func drawBackoff(r *rand.Rand) httpretry.Backoff {
	d := pick(r, time.Millisecond, 10*time.Millisecond, 100*time.Millisecond)
	var b httpretry.Backoff
	switch r.IntN(5) {
	case 0:
		return httpretry.NoBackoff()
	case 1:
		b = httpretry.Fixed(d)
	case 2:
		b = httpretry.Exponential(d, 4*d)
	case 3:
		b = httpretry.ExponentialJitter(d, 8*d)
	default:
		return httpretry.Backoff{} // the default
	}
	switch r.IntN(4) {
	case 0:
		b = b.WithWaitBudget(pick(r, 0, 5*time.Millisecond, 50*time.Millisecond, time.Second))
	case 1:
		b = b.Unbudgeted()
	}
	return b
}

func drawBudget(r *rand.Rand) httpretry.BudgetConfig {
	var c httpretry.BudgetConfig
	switch r.IntN(4) {
	case 1:
		c.MinRetries = -1 // strict
	case 2:
		c.Percent, c.MinRetries = 1, 1 // tiny
	case 3:
		c.Disabled = true
	}
	c.Window = pick(r, 0, time.Minute, 10*time.Minute)
	return c
}

// drawPolicy draws a valid policy from the whole space; budget is the
// BudgetConfig of every policy of the run, so that transports sharing
// Budgets agree on it.
func drawPolicy(r *rand.Rand, budget httpretry.BudgetConfig) httpretry.Policy {
	p := httpretry.Policy{
		MaxRetries: r.IntN(6),
		Backoff:    drawBackoff(r),
		Budget:     budget,
	}
	switch r.IntN(4) {
	case 1:
		p.RetryOn = []int{502, 503, 504}
	case 2:
		p.RetryOn = []int{429, 500, 503}
	}
	if r.IntN(16) == 0 {
		// Not a failure: Validate must refuse it (point 20), and build
		// takes it out again.
		p.RetryOn = append(p.RetryOn, pick(r, 101, 200, 204, 304))
	}
	if r.IntN(3) == 0 {
		p.PerTryTimeout = pick(r, 50*time.Millisecond, 200*time.Millisecond, time.Second)
	}
	if r.IntN(3) == 0 {
		p.Deadline = pick(r, 100*time.Millisecond, 500*time.Millisecond, 2*time.Second, 5*time.Second)
	}
	p.MaxRetryAfter = pick(r, 0, time.Second, 2*time.Second, 5*time.Second)
	p.MaxReplayBytes = pick[int64](r, 0, 64, 4096, -1)
	p.AutoIdempotencyKey = r.IntN(4) == 0
	switch r.IntN(3) {
	case 1:
		p.Hedge = httpretry.Hedge{After: pick[time.Duration](r, 5, 20, 50) * time.Millisecond, Max: 1 + r.IntN(3)}
	case 2:
		p.Hedge = httpretry.Hedge{Quantile: pick(r, 0.5, 0.9, 0.95, 0.99), After: pick(r, 0, 20*time.Millisecond),
			Max: 1 + r.IntN(3), MinAfter: pick(r, 0, time.Millisecond)}
	}
	if p.Hedge != (httpretry.Hedge{}) && p.MaxRetries == 0 && r.IntN(16) != 0 {
		// A copy is a resend (point 23): a hedge comes with resends, but
		// now and then without, which Validate must refuse and build
		// takes out again.
		p.MaxRetries = 1 + r.IntN(5)
	}
	if p.Hedge != (httpretry.Hedge{}) {
		p.Hedge.SameOrigin = r.IntN(3) == 0 // copies stay home (point 23)
	}
	for k := r.IntN(4); k > 0; k-- {
		p.Fallbacks = append(p.Fallbacks, originURLs[r.IntN(len(originURLs))].url)
	}
	// A zero Demote is DefaultPolicy's, After 5 (point 20); a negative
	// After turns demotion off whatever For and Max hold.
	switch r.IntN(4) {
	case 1:
		p.Demote = httpretry.Demote{After: -1, For: pick(r, 0, time.Second), Max: pick(r, 0, 2*time.Second)}
	case 2, 3:
		p.Demote = httpretry.Demote{After: 1 + r.IntN(5), For: pick(r, 0, 100*time.Millisecond, time.Second)}
	}
	if r.IntN(6) == 0 {
		p.RetryIf = simRetryIf
	}
	p.Resume = drawResume(r)
	return p
}

// drawResume draws Policy.Resume: zero (DefaultPolicy's Max 3), Max 1-3,
// or off (a negative Max); with or without Idle; MinBytes the default
// (64 KiB) or smaller, so that most objects stay small.
func drawResume(r *rand.Rand) httpretry.Resume {
	var rs httpretry.Resume
	switch r.IntN(6) {
	case 0:
		return rs
	case 1:
		rs.Max = pick(r, -1, -3)
	default:
		rs.Max = 1 + r.IntN(3)
	}
	if r.IntN(3) == 0 {
		rs.Idle = pick(r, 50*time.Millisecond, 300*time.Millisecond)
	}
	rs.MinBytes = pick[int64](r, 0, 1, 1000, 1000, 4096, 4096, 20000)
	return rs
}

// minBytes is the shortest body rs resumes.
func minBytes(rs httpretry.Resume) int {
	if rs.MinBytes == 0 {
		return 64 << 10
	}
	return int(rs.MinBytes)
}

// simRetryIf retries every error and the statuses 502 and 503 only.
func simRetryIf(resp *http.Response, err error) bool {
	if err != nil {
		return true
	}
	return resp.StatusCode == 502 || resp.StatusCode == 503
}

var methods = []string{"GET", "GET", "GET", "HEAD", "PUT", "DELETE", "POST", "POST", "PATCH"}

func drawRequest(r *rand.Rand, pol httpretry.Policy) reqPlan {
	maxReplay := pol.MaxReplayBytes
	q := reqPlan{method: methods[r.IntN(len(methods))], origin: pick(r, 0, 0, 0, 2, 2, 1, 3), path: "/p",
		closeAfter: -1, readMax: 512, closeOnResume: -1}
	if r.IntN(3) == 0 {
		q.path = "/p?q=1"
	}
	switch q.method {
	case "POST", "PATCH":
		q.keyed = r.IntN(2) == 0
		q.hasBody = true
	case "PUT":
		q.hasBody = true
	}
	q.idem = r.IntN(8) == 0
	if q.hasBody {
		limit := maxReplay
		if limit <= 0 {
			limit = 4096
		}
		n := pick[int64](r, 0, 1, limit-1, limit, limit+1, 3000, 5000)
		n = max(n, 0)
		q.body = make([]byte, n)
		for i := range q.body {
			q.body[i] = byte(r.IntN(256))
		}
		q.getBody = r.IntN(3) == 0
		q.knownLen = r.IntN(2) == 0
	}
	if r.IntN(4) == 0 {
		q.overrides, q.override = true, r.IntN(6)
	}
	if r.IntN(6) == 0 {
		q.setFallbacks = true
		for k := r.IntN(4); k > 0; k-- {
			q.fallbacks = append(q.fallbacks, r.IntN(len(originURLs)))
		}
	}
	if r.IntN(8) == 0 {
		q.cancelAfter = time.Duration(1+r.IntN(500))*time.Millisecond + 51*time.Microsecond
	}
	q.timeout = pick(r, time.Second, 3*time.Second, 5*time.Second) + 23*time.Microsecond
	q.readResp = r.IntN(4) != 0
	if r.IntN(2) == 0 {
		q.gapBefore = time.Duration(r.IntN(50)) * time.Millisecond
	}
	if q.method == "GET" && r.IntN(3) != 0 {
		drawObject(r, &q, minBytes(pol.Resume))
	}
	q.upgrade = q.method == "GET" && !q.object && r.IntN(6) == 0
	return q
}

// drawObject makes q a GET of an object of a size around least, the
// shortest body the policy resumes, read to its end by most callers.
func drawObject(r *rand.Rand, q *reqPlan, least int) {
	q.object, q.path = true, "/obj"
	if r.IntN(3) == 0 {
		q.path = "/obj?q=1"
	}
	q.objSize = max(0, pick(r, least-1, least, least+1, least+r.IntN(2*least+1), 2*least, r.IntN(5000)))
	q.objKind = pick(r, okETag, okETag, okETag, okETag, okETag, okETag, okLMOld, okLMOld, okWeak, okWeakLM,
		okLMRecent, okNone, okGzip, okNoRanges, okNoLength, okIdentity, okLonger)
	q.readResp = r.IntN(8) != 0
	q.readMax = pick(r, 64, 1000, 4096, 32<<10)
	if r.IntN(10) == 0 {
		q.closeAfter = r.IntN(q.objSize + 1)
	}
	switch r.IntN(12) {
	case 0, 1:
		q.closeAt = time.Duration(1+r.IntN(2000))*time.Millisecond + 71*time.Microsecond
	case 2:
		q.closeOnResume = pick(r, 0, time.Millisecond, 10*time.Millisecond, 500*time.Millisecond)
	}
	if r.IntN(8) == 0 {
		// A cancel late enough to fall in the body, as often as not.
		q.cancelAfter = time.Duration(1+r.IntN(3000))*time.Millisecond + 51*time.Microsecond
	}
}

// drawMixed draws a run of the whole space: a few clients of one or two
// transports sending a handful of requests each.
func drawMixed(seed uint64) *runConfig {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	cfg := &runConfig{scenario: "mixed", origins: drawOrigins(r)}
	budget := drawBudget(r)
	cfg.policies = []httpretry.Policy{drawPolicy(r, budget)}
	if r.IntN(4) == 0 {
		cfg.policies = append(cfg.policies, drawPolicy(r, budget))
		cfg.sharedBudgets = r.IntN(2) == 0
	}
	if r.IntN(8) == 0 {
		cfg.nested = true
		cfg.inner = drawPolicy(r, budget)
		cfg.inner.Fallbacks = nil
	}
	if r.IntN(6) == 0 {
		cfg.panicEvery = 1 + r.IntN(3)
		cfg.panicOn = map[httpretry.EventKind]bool{}
		for _, k := range []httpretry.EventKind{httpretry.EventRetry, httpretry.EventHedge, httpretry.EventGiveUp,
			httpretry.EventFallback, httpretry.EventDemote, httpretry.EventRestore, httpretry.EventResume} {
			if r.IntN(3) == 0 {
				cfg.panicOn[k] = true
			}
		}
	}
	if r.IntN(4) == 0 {
		cfg.sleepFor = pick(r, time.Millisecond, 100*time.Millisecond)
		cfg.sleepOn = map[httpretry.EventKind]bool{pick(r, httpretry.EventRetry, httpretry.EventFallback,
			httpretry.EventHedge, httpretry.EventGiveUp, httpretry.EventResume): true}
	}
	for c := 1 + r.IntN(4); c > 0; c-- {
		cp := clientPlan{transport: r.IntN(len(cfg.policies))}
		for n := 1 + r.IntN(6); n > 0; n-- {
			q := drawRequest(r, cfg.policies[cp.transport])
			if cfg.nested {
				// Context values reach the inner transport too: its
				// bounds are then the outer's business.
				q.overrides, q.setFallbacks = false, false
			}
			cp.reqs = append(cp.reqs, q)
		}
		cfg.clients = append(cfg.clients, cp)
	}
	if cfg.sharedBudgets && r.IntN(2) == 0 {
		w := budget.Window
		if w == 0 {
			w = 10 * time.Second
		}
		cfg.twoWindows = true
		cfg.policies[1].Budget.Window = pick(r, w/2, 2*w)
	}
	drawStack(seed, cfg)
	drawHold(seed, cfg)
	drawPrefetch(seed, cfg)
	return cfg
}

// drawHold draws the hold of every policy of a mixed run (point 22), from
// a stream of its own so that the rest of the run stays as it was: Hold
// among -1 (never: the rules before), the default (2), 1 and 3, and
// HoldFor the default or shorter. Policies that share Budgets agree.
func drawHold(seed uint64, cfg *runConfig) {
	r := rand.New(rand.NewPCG(seed, 0x401d))
	hold := pick(r, -1, 0, 1, 3)
	holdFor := pick[time.Duration](r, 0, 0, 50*time.Millisecond+3*time.Microsecond, 300*time.Millisecond)
	for i := range cfg.policies {
		cfg.policies[i].Budget.Hold, cfg.policies[i].Budget.HoldFor = hold, holdFor
	}
	if cfg.nested {
		cfg.inner.Budget.Hold, cfg.inner.Budget.HoldFor = hold, holdFor
	}
}

// drawStack draws how the transports are stacked (point 20), from a
// stream of its own so that the rest of a seed's run stays as it was: an
// inner httpretry reached through an opaque middleware, a plain base, and
// a burst of first requests at once, half the time through such a stack.
func drawStack(seed uint64, cfg *runConfig) {
	r := rand.New(rand.NewPCG(seed, 0x57ac))
	cfg.viaMiddleware = cfg.nested && r.IntN(2) == 0
	cfg.plainBase = !cfg.nested && r.IntN(2) == 0
	if r.IntN(16) != 0 {
		return
	}
	cfg.burst = true
	if !cfg.nested && r.IntN(2) == 0 {
		cfg.nested, cfg.viaMiddleware, cfg.plainBase = true, true, false
		cfg.inner = drawPolicy(r, cfg.policies[0].Budget)
		cfg.inner.Fallbacks = nil
	}
	for c := 8 + r.IntN(25); c > 0; c-- {
		cp := clientPlan{transport: r.IntN(len(cfg.policies))}
		q := drawRequest(r, cfg.policies[cp.transport])
		q.gapBefore = 0
		cp.reqs = []reqPlan{q}
		cfg.clients = append(cfg.clients, cp)
	}
	if cfg.nested {
		for i := range cfg.clients {
			for j := range cfg.clients[i].reqs {
				// As drawMixed: context values would reach the inner too.
				cfg.clients[i].reqs[j].overrides, cfg.clients[i].reqs[j].setFallbacks = false, false
			}
		}
	}
}

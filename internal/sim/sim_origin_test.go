package sim_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptrace"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/httpretry/httpretry"
	"github.com/httpretry/httpretry/internal/fakeorigin"
)

// The simulator's upstreams: in-memory origins behind one base
// RoundTripper that plays http.Transport's part (it closes every request
// body it is given, reports a refused dial as a *net.OpError with Op
// "dial", tells the request's httptrace of the connection) without a
// socket, so that synctest's virtual clock governs every wait. What an
// attempt meets is drawn here; the bodies, cut or stalled, and the
// errors of refused dials and resets are internal/fakeorigin's, the one
// fake upstream of every test.

// behaviour is what one attempt meets at an origin.
type behaviour uint8

const (
	bOK          behaviour = iota // 200 after a short delay
	bSlow                         // 200 after a long delay
	b500                          // an answer the default policy does not retry
	b502                          // a retried status
	b503                          // a retried status, maybe with Retry-After
	b504                          // a retried status
	b429                          // a retried status, maybe with Retry-After
	bRefuse                       // the dial is refused: nothing left
	bDialHang                     // the dial hangs until the attempt ends: nothing left
	bBlackHole                    // connected, the request sent, no answer until the attempt ends
	bResetBefore                  // connected, reset before the body was read
	bResetAfter                   // connected, the body read, then reset
	bEarly503                     // a 503 sent before the body was read, the upload going on
	bCut                          // a 200 whose body breaks mid-stream
	numBehaviours
)

var behaviourNames = [numBehaviours]string{
	"ok", "slow", "500", "502", "503", "504", "429", "refuse", "dial-hang", "black-hole",
	"reset-before", "reset-after", "early-503", "cut",
}

func (b behaviour) String() string { return behaviourNames[b] }

// phase is a stretch of virtual time in which an origin draws each
// attempt's behaviour from weights.
type phase struct {
	until   time.Duration // since the run's start; the last phase lasts for ever
	weights [numBehaviours]int
}

// simOrigin is one upstream: "scheme://host[:port]" and how it behaves over
// time.
type simOrigin struct {
	idx    int
	url    string // scheme://host[:port] as requests spell it
	key    string // its budget key, as Budgets.Range shows it
	scheme string
	phases []phase
	// raKinds are the Retry-After forms its 503 and 429 answers draw from.
	raKinds []string
	// script, when set, decides an attempt's behaviour in place of the
	// phases (the liveness scenarios); okDelay and slowDelay, when set,
	// fix the delays of bOK and bSlow.
	script             func(sr *simReq, n int) behaviour
	okDelay, slowDelay time.Duration
	// cutPct is the percentage of its object bodies it cuts, and resumes
	// the weights of its answers to resume requests.
	cutPct  int
	resumes [numResumeBehs]int
}

// resumeAt draws the answer to one resume request.
func (o *simOrigin) resumeAt(r *rand.Rand) resumeBeh {
	total := 0
	for _, w := range o.resumes {
		total += w
	}
	if total == 0 {
		return rHonour
	}
	x := r.IntN(total)
	for b, w := range o.resumes {
		if x < w {
			return resumeBeh(b)
		}
		x -= w
	}
	return rHonour
}

func (o *simOrigin) behaviourAt(since time.Duration, r *rand.Rand) behaviour {
	ph := o.phases[len(o.phases)-1]
	for _, p := range o.phases {
		if since < p.until {
			ph = p
			break
		}
	}
	total := 0
	for _, w := range ph.weights {
		total += w
	}
	if total == 0 {
		return bOK
	}
	x := r.IntN(total)
	for b, w := range ph.weights {
		if x < w {
			return behaviour(b)
		}
		x -= w
	}
	return bOK
}

// resumeBeh is how an origin answers one resume request (a request with
// Range the caller did not set).
type resumeBeh uint8

const (
	rHonour     resumeBeh = iota // Range and If-Range exactly: a 206 of the rest, or all of a new version
	rIgnore                      // Range ignored: a 200 of the whole object
	rWrongRange                  // a 206 whose Content-Range is not the one asked for
	r416                         // 416, whatever was asked
	rReplace                     // the object is replaced, then answered exactly (a 200 of the new one)
	rReplace206                  // the object is replaced, If-Range ignored: a 206 of the new bytes under the new validator
	r503                         // a retried status, maybe with Retry-After
	rRefuse                      // the dial is refused
	rReset                       // connected, reset before an answer
	rBlackHole                   // no answer until the attempt ends
	rLonger                      // honoured, but the 206's body runs past the range it names
	rShorter                     // honoured, but the 206's body stops short of the range it names
	rBare                        // honoured, a 206 that names no version: neither ETag nor Last-Modified
	numResumeBehs
)

var resumeBehNames = [numResumeBehs]string{"honour", "ignore-range", "wrong-range", "416", "replace",
	"replace-206", "503", "refuse", "reset", "black-hole", "longer", "shorter", "bare"}

func (b resumeBeh) String() string { return resumeBehNames[b] }

// objKind is how an object is served: its validator, coding and length.
type objKind uint8

const (
	okETag     objKind = iota // a strong ETag and an old Last-Modified
	okIdentity                // a strong ETag, Content-Encoding: identity, Accept-Ranges: bytes
	okLMOld                   // no ETag, a Last-Modified an hour before Date: strong
	okWeak                    // a weak ETag
	okWeakLM                  // a weak ETag beside an old Last-Modified
	okLMRecent                // a Last-Modified 10 s before Date: weak
	okNone                    // no validator
	okGzip                    // a strong ETag, Content-Encoding: gzip
	okNoRanges                // a strong ETag, Accept-Ranges: none
	okNoLength                // a strong ETag, no Content-Length
	okLonger                  // a strong ETag; a 200's body runs past its Content-Length
)

var objKindNames = []string{"etag", "identity", "lm-old", "weak", "weak+lm", "lm-recent", "none", "gzip",
	"no-ranges", "no-length", "longer"}

func (k objKind) String() string { return objKindNames[k] }

// simObject is what one origin serves at a request's /obj: versions of
// one size, the last the current one.
type simObject struct {
	req, origin int
	kind        objKind
	versions    [][]byte
}

// object is sr's object at o, made at its first request there.
func (run *simRun) object(sr *simReq, o *simOrigin) *simObject {
	run.mu.Lock()
	defer run.mu.Unlock()
	k := [2]int{sr.id(), o.idx}
	ob := run.objects[k]
	if ob == nil {
		ob = &simObject{req: sr.id(), origin: o.idx, kind: sr.plan.objKind}
		ob.versions = [][]byte{run.objectBytes(ob, 0, sr.plan.objSize)}
		run.objects[k] = ob
	}
	return ob
}

// objectBytes are version v of ob: random, so that no byte of another
// version or another offset passes for it.
func (run *simRun) objectBytes(ob *simObject, v, size int) []byte {
	r := rand.New(rand.NewPCG(run.seed, uint64(ob.req)<<24|uint64(ob.origin)<<16|uint64(v)))
	b := make([]byte, size)
	for i := 0; i < size; i += 8 {
		x := r.Uint64()
		for j := i; j < min(i+8, size); j++ {
			b[j], x = byte(x), x>>8
		}
	}
	return b
}

// replace makes a new version of ob the current one.
func (run *simRun) replace(ob *simObject) int {
	run.mu.Lock()
	defer run.mu.Unlock()
	v := len(ob.versions)
	ob.versions = append(ob.versions, run.objectBytes(ob, v, len(ob.versions[0])))
	return v
}

func (run *simRun) current(ob *simObject) (int, []byte) {
	run.mu.Lock()
	defer run.mu.Unlock()
	return len(ob.versions) - 1, ob.versions[len(ob.versions)-1]
}

// header is what ob's version v is served with at now.
func (run *simRun) objectHeader(ob *simObject, v int, now time.Time) http.Header {
	h := http.Header{"Content-Type": {"application/octet-stream"}, "Date": {now.UTC().Format(http.TimeFormat)}}
	tag := `"r` + strconv.Itoa(ob.req) + "o" + strconv.Itoa(ob.origin) + "v" + strconv.Itoa(v) + `"`
	lm := run.t0.Add(-time.Hour + time.Duration(v)*time.Second).UTC().Format(http.TimeFormat)
	switch ob.kind {
	case okETag, okLonger:
		h.Set("Etag", tag)
		h.Set("Last-Modified", lm)
	case okIdentity:
		h.Set("Etag", tag)
		h.Set("Content-Encoding", "identity")
		h.Set("Accept-Ranges", "bytes")
	case okLMOld:
		h.Set("Last-Modified", lm)
	case okWeak:
		h.Set("Etag", "W/"+tag)
	case okWeakLM:
		h.Set("Etag", "W/"+tag)
		h.Set("Last-Modified", lm)
	case okLMRecent:
		h.Set("Last-Modified", now.Add(-10*time.Second).UTC().Format(http.TimeFormat))
	case okGzip:
		h.Set("Etag", tag)
		h.Set("Content-Encoding", "gzip")
	case okNoRanges, okNoLength:
		h.Set("Etag", tag)
		if ob.kind == okNoRanges {
			h.Set("Accept-Ranges", "none")
		}
	}
	return h
}

// simAttempt is what the base saw of one attempt.
type simAttempt struct {
	req     *simReq
	seq     int // order of arrival at the base, over the run
	n       int // AttemptFromContext
	origin  *simOrigin
	url     string // as sent: scheme://host/path?query
	start   time.Time
	settled time.Time // when its outcome was known: the base returned, or its answer was read whole (point 24)
	headers time.Time // when the base returned
	beh     behaviour
	reached bool // the request left: a connection was had
	status  int
	ra      string // the Retry-After sent, "" for none
	resp    *simBody
	err     error
	ctxDone bool // the attempt's context had ended when the base returned
	header  http.Header
	method  string
	// What the origin read of the request body, and how reading ended.
	got     []byte
	gotEOF  bool
	readErr error
	hadBody bool
	// A resume request: its Range and If-Range, the answer drawn, and
	// whether that answer is another version, or a range not asked for,
	// of which nothing may be delivered.
	resume    bool
	delivered int64 // the bytes the caller had read when it came
	rangeHdr  string
	ifRange   string
	rbeh      resumeBeh
	changed   bool
	// The response's header and Content-Length.
	respHeader http.Header
	respCL     int64
	// pre says httpretry reads its answer whole before judging it (point
	// 24), by the sim's reading; broke, that the answer cannot arrive
	// whole, so that the attempt is a transport error.
	pre, broke bool
	// back says the base has returned, with the fields above set, and an
	// answer read whole was let go of; under run.mu (see asReturned).
	back bool
}

// simBody is a response body the base made (a fakeorigin.Body: whole,
// or cut at Cut by its Break), counted as it is closed; an object's body
// is version ver of obj.
type simBody struct {
	*fakeorigin.Body
	id  int
	att *simAttempt
	obj *simObject
	ver int
	run *simRun
	ctx context.Context // the attempt's
}

// newBody is a body of data for attempt a, its breaks noted.
func (run *simRun) newBody(r *http.Request, a *simAttempt, data []byte) *simBody {
	b := &simBody{Body: fakeorigin.NewBody(r.Context(), data), att: a, run: run, ctx: r.Context()}
	b.OnBreak = func(err error) {
		run.mu.Lock()
		b.noteBreak(err)
		run.mu.Unlock()
	}
	run.mu.Lock()
	b.id = len(run.bodies)
	run.bodies = append(run.bodies, b)
	run.mu.Unlock()
	return b
}

// noteBreak records err as the latest break of the body its request's
// caller reads: the one returned, or one a resume request got. run.mu is
// held.
func (b *simBody) noteBreak(err error) {
	if sr := b.att.req; b.obj != nil && sr != nil && (b.att.resume || sr.respBody == b.id) {
		sr.breaks = append(sr.breaks, err)
	}
}

// reqBody is a caller's request body without GetBody (or one GetBody
// made), counted as it is read and closed.
type reqBody struct {
	data   []byte
	pos    int
	closes int
	mu     *sync.Mutex
}

func (b *reqBody) Read(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closes > 0 {
		return 0, errors.New("sim: read on closed request body")
	}
	if b.pos >= len(b.data) {
		return 0, io.EOF
	}
	n := copy(p, b.data[b.pos:])
	b.pos += n
	return n, nil
}

func (b *reqBody) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closes++
	return nil
}

type simReqKey struct{}

// simBase is the base RoundTripper of every transport of a run.
type simBase struct {
	run *simRun
}

// uploadChunk and uploadStep pace an upload that goes on after an early
// answer, so that the answer provably comes while the body is still being
// read.
const (
	uploadChunk = 1 << 10
	uploadStep  = time.Millisecond
)

func (s *simBase) RoundTrip(r *http.Request) (*http.Response, error) {
	run := s.run
	ctx := r.Context()
	sr, _ := ctx.Value(simReqKey{}).(*simReq)
	now := time.Now()
	a := &simAttempt{req: sr, n: httpretry.AttemptFromContext(ctx), start: now, method: r.Method,
		url: r.URL.String(), header: r.Header.Clone(), hadBody: r.Body != nil && r.Body != http.NoBody}
	// No caller sets Range: a request with one is a resume request.
	a.rangeHdr, a.ifRange = r.Header.Get("Range"), r.Header.Get("If-Range")
	a.resume = sr != nil && r.Header["Range"] != nil
	o := run.originFor(r.URL.Scheme, r.URL.Host)
	a.origin = o
	run.mu.Lock()
	a.seq = len(run.attempts)
	run.attempts = append(run.attempts, a)
	switch {
	case a.resume:
		sr.resumeAtts = append(sr.resumeAtts, a)
		a.delivered = sr.delivered
	case sr != nil:
		sr.attempts = append(sr.attempts, a)
	}
	occurrence := run.occurrences[attemptKey{sr.id(), a.n, o.idx}]
	run.occurrences[attemptKey{sr.id(), a.n, o.idx}]++
	run.mu.Unlock()
	run.kickSampler()
	rng := rand.New(rand.NewPCG(run.seed, uint64(sr.drawID())<<32|uint64(a.n)<<16|uint64(o.idx)<<8|uint64(occurrence)))
	var resp *http.Response
	var err error
	if a.resume {
		a.rbeh = o.resumeAt(rng)
		run.logf(sr, "resume attempt %d -> %s Range %q If-Range %q (%d bytes delivered): %s", a.n, a.url,
			a.rangeHdr, a.ifRange, a.delivered, a.rbeh)
		resp, err = s.serveResume(r, a, o, rng)
	} else {
		if o.script != nil {
			a.beh = o.script(sr, a.n)
		} else {
			a.beh = o.behaviourAt(now.Sub(run.t0), rng)
		}
		run.logf(sr, "attempt %d -> %s: %s", a.n, a.url, a.beh)
		resp, err = s.serve(r, a, o, rng)
	}
	a.settled = time.Now()
	a.headers = a.settled
	a.ctxDone = ctx.Err() != nil
	a.err = err
	if resp != nil {
		a.status = resp.StatusCode
		a.respHeader, a.respCL = resp.Header.Clone(), resp.ContentLength
		if a.pre = run.readsWhole(sr, a, resp); a.pre {
			a.broke = !arrivesWhole(a.resp.Body, a.respCL)
		}
		run.logf(sr, "attempt %d <- %d%s%s body %d%s", a.n, resp.StatusCode, raNote(a.ra), objNote(a), len(a.resp.Data),
			cutNote(a.resp))
	} else {
		run.logf(sr, "attempt %d <- error: %v", a.n, err)
	}
	run.mu.Lock()
	a.back = !a.pre // an answer read whole comes back when it is let go of (simBody.Close)
	run.mu.Unlock()
	run.kickSampler()
	return resp, err
}

func raNote(ra string) string {
	if ra == "" {
		return ""
	}
	return " Retry-After " + strconv.Quote(ra)
}

func cutNote(b *simBody) string {
	switch {
	case b.Cut < 0:
		return ""
	case b.Break == fakeorigin.Stall:
		return " stalls at " + strconv.Itoa(b.Cut)
	}
	return " cut at " + strconv.Itoa(b.Cut) + " (" + b.BreakErr().Error() + ")"
}

func objNote(a *simAttempt) string {
	b := a.resp
	if b == nil || b.obj == nil {
		return ""
	}
	s := " object " + b.obj.kind.String() + " v" + strconv.Itoa(b.ver)
	if cr := a.respHeader["Content-Range"]; cr != nil {
		s += " Content-Range " + strconv.Quote(strings.Join(cr, ", "))
	}
	if a.changed {
		s += " (changed)"
	}
	return s
}

// serve plays the origin's part for attempt a.
func (s *simBase) serve(r *http.Request, a *simAttempt, o *simOrigin, rng *rand.Rand) (*http.Response, error) {
	ctx := r.Context()
	trace := httptrace.ContextClientTrace(ctx)
	if trace != nil && trace.GetConn != nil {
		trace.GetConn(r.URL.Host)
	}
	fail := func(err error) (*http.Response, error) {
		closeReq(r)
		return nil, err
	}
	switch a.beh {
	case bRefuse:
		return fail(fakeorigin.RefusedError())
	case bDialHang:
		<-ctx.Done()
		return fail(&net.OpError{Op: "dial", Net: "tcp", Err: ctx.Err()})
	}
	if trace != nil && trace.GotConn != nil {
		trace.GotConn(httptrace.GotConnInfo{})
	}
	a.reached = true
	switch a.beh {
	case bResetBefore:
		return fail(fakeorigin.ResetError("write"))
	case bBlackHole:
		s.readAll(r, a)
		<-ctx.Done()
		return nil, ctx.Err()
	case bEarly503:
		resp := s.answer(r, a, o, rng, http.StatusServiceUnavailable)
		go s.upload(r, a)
		return resp, nil
	}
	if !s.readAll(r, a) {
		return fail(&net.OpError{Op: "write", Net: "tcp", Err: syscall.EPIPE})
	}
	delay := time.Duration(1+rng.IntN(30))*time.Millisecond + 137*time.Microsecond
	if a.beh == bSlow {
		delay = time.Duration(200+rng.IntN(1800))*time.Millisecond + 137*time.Microsecond
	}
	switch {
	case a.beh == bSlow && o.slowDelay > 0:
		delay = o.slowDelay
	case a.beh != bSlow && o.okDelay > 0:
		delay = o.okDelay
	}
	t := time.NewTimer(delay)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-t.C:
	}
	switch a.beh {
	case bResetAfter:
		return nil, fakeorigin.ResetError("read")
	case b500:
		return s.answer(r, a, o, rng, 500), nil
	case b502:
		return s.answer(r, a, o, rng, 502), nil
	case b503:
		return s.answer(r, a, o, rng, 503), nil
	case b504:
		return s.answer(r, a, o, rng, 504), nil
	case b429:
		return s.answer(r, a, o, rng, 429), nil
	}
	if a.req != nil && a.req.plan.object {
		return s.objectAnswer(r, a, o, rng), nil
	}
	return s.answer(r, a, o, rng, 200), nil
}

// objectAnswer is a 200 of the current version of the request's object,
// whole or cut.
func (s *simBase) objectAnswer(r *http.Request, a *simAttempt, o *simOrigin, rng *rand.Rand) *http.Response {
	ob := s.run.object(a.req, o)
	v, data := s.run.current(ob)
	cl := int64(len(data))
	switch ob.kind {
	case okNoLength:
		cl = -1
	case okLonger:
		data = append(bytes.Clone(data), junk(rng, 1+rng.IntN(1000))...)
	}
	resp := s.objectResp(r, a, ob, v, 200, data, s.run.objectHeader(ob, v, time.Now()), cl)
	drawCut(rng, o, a.resp, a.beh == bCut)
	return resp
}

// objectResp makes a response of ob's version v with status and body
// data, counted as answer's are.
func (s *simBase) objectResp(r *http.Request, a *simAttempt, ob *simObject, v, status int, data []byte,
	h http.Header, cl int64) *http.Response {
	body := s.run.newBody(r, a, data)
	body.obj, body.ver = ob, v
	h.Set("X-Sim-Body", strconv.Itoa(body.id))
	if cl >= 0 {
		h.Set("Content-Length", strconv.FormatInt(cl, 10))
	}
	a.resp = body
	return fakeorigin.Response(r, status, h, body, cl)
}

// drawCut cuts b, as o cuts its object bodies, or always with force: at a
// random offset, the end included, with an unexpected EOF, a reset, an
// early io.EOF or a stall.
func drawCut(rng *rand.Rand, o *simOrigin, b *simBody, force bool) {
	if !force && rng.IntN(100) >= o.cutPct {
		return
	}
	b.Cut = rng.IntN(len(b.Data) + 1)
	b.Joined = rng.IntN(2) == 0
	b.Break = [...]fakeorigin.Break{fakeorigin.Abort, fakeorigin.ResetBody, fakeorigin.EarlyEOF,
		fakeorigin.Stall}[rng.IntN(4)]
}

// serveResume plays the origin's part for a resume request: the answer
// a.rbeh, to the Range asked.
func (s *simBase) serveResume(r *http.Request, a *simAttempt, o *simOrigin, rng *rand.Rand) (*http.Response, error) {
	run := s.run
	ctx := r.Context()
	trace := httptrace.ContextClientTrace(ctx)
	if trace != nil && trace.GetConn != nil {
		trace.GetConn(r.URL.Host)
	}
	if a.rbeh == rRefuse {
		return nil, fakeorigin.RefusedError()
	}
	if trace != nil && trace.GotConn != nil {
		trace.GotConn(httptrace.GotConnInfo{})
	}
	a.reached = true
	switch a.rbeh {
	case rReset:
		return nil, fakeorigin.ResetError("write")
	case rBlackHole:
		<-ctx.Done()
		return nil, ctx.Err()
	}
	t := time.NewTimer(time.Duration(1+rng.IntN(30))*time.Millisecond + 137*time.Microsecond)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-t.C:
	}
	if a.rbeh == r503 {
		return s.answer(r, a, o, rng, 503), nil
	}
	ob := run.object(a.req, o)
	began := -1 // the version the caller's body began with
	run.mu.Lock()
	if id := a.req.respBody; id >= 0 && run.bodies[id].obj == ob {
		began = run.bodies[id].ver
	}
	run.mu.Unlock()
	if a.rbeh == rReplace || a.rbeh == rReplace206 {
		run.logf(a.req, "object of request %d at %s replaced: v%d", ob.req, o.url, run.replace(ob))
	}
	v, data := run.current(ob)
	size := len(data)
	h := run.objectHeader(ob, v, time.Now())
	first, last, ok := parseSimRange(a.rangeHdr, size)
	contentRange := func(first, last, size int) string {
		return "bytes " + strconv.Itoa(first) + "-" + strconv.Itoa(last) + "/" + strconv.Itoa(size)
	}
	partial := func(data []byte) *http.Response {
		cl := int64(len(data))
		if rng.IntN(3) == 0 {
			cl = -1
		}
		return s.objectResp(r, a, ob, v, http.StatusPartialContent, data, h, cl)
	}
	switch {
	case a.rbeh == r416 || !ok:
		a.changed = true
		h.Set("Content-Range", "bytes */"+strconv.Itoa(size))
		return s.objectResp(r, a, ob, v, http.StatusRequestedRangeNotSatisfiable, nil, h, 0), nil
	case a.rbeh == rWrongRange:
		a.changed = true
		switch k := rng.IntN(6); {
		case k == 0 && first < last:
			h.Set("Content-Range", contentRange(first+1, last, size))
			return partial(data[first+1 : last+1]), nil
		case k == 1 && first > 0:
			h.Set("Content-Range", contentRange(first-1, last, size)) // bytes delivered again
			return partial(data[first-1 : last+1]), nil
		case k == 2:
			h.Set("Content-Range", contentRange(first, last, size+1))
		case k == 3:
			h.Set("Content-Range", "bytes */"+strconv.Itoa(size))
		case k == 4:
			h["Content-Range"] = []string{contentRange(first, last, size), contentRange(first, last, size)}
		}
		return partial(data[first : last+1]), nil // k == 5: none at all
	case a.rbeh == rReplace206 && simValidator(h) != "":
		// A server that honours Range and ignores If-Range: the new bytes,
		// under their validator (an ETag, or a Last-Modified alone).
		a.changed = true
		h.Set("Content-Range", contentRange(first, last, size))
		return partial(data[first : last+1]), nil
	}
	a.changed = v != began
	var resp *http.Response
	if a.rbeh != rIgnore && a.ifRange != "" && a.ifRange == simValidator(h) {
		h.Set("Content-Range", contentRange(first, last, size))
		switch a.rbeh {
		case rLonger, rShorter:
			return s.misfit(r, a, ob, v, h, data[first:last+1], rng), nil
		case rBare:
			h.Del("Etag")
			h.Del("Last-Modified")
		}
		resp = partial(data[first : last+1])
	} else {
		// Range ignored, or If-Range naming another version: all of it.
		cl := int64(size)
		if rng.IntN(3) == 0 {
			cl = -1
		}
		resp = s.objectResp(r, a, ob, v, http.StatusOK, data, h, cl)
	}
	if !a.changed {
		drawCut(rng, o, a.resp, false)
	}
	return resp, nil
}

// misfit is a 206 of the range asked, rest, whose body is not that range:
// longer (bytes past the object's end) or shorter, its Content-Length the
// body's, the range's or none. A body shorter than a length it does not
// declare as its own is cut, and resumed again; any other is not the rest,
// and no byte of it past the range may reach the caller.
func (s *simBase) misfit(r *http.Request, a *simAttempt, ob *simObject, v int, h http.Header, rest []byte,
	rng *rand.Rand) *http.Response {
	n := int64(len(rest))
	if a.rbeh == rLonger {
		a.changed = true
		body := append(bytes.Clone(rest), junk(rng, 1+rng.IntN(1000))...)
		return s.objectResp(r, a, ob, v, http.StatusPartialContent, body, h, pick(rng, int64(len(body)), n, -1))
	}
	short := n - 1 - rng.Int64N(n)
	if rng.IntN(2) == 0 {
		a.changed = true
		return s.objectResp(r, a, ob, v, http.StatusPartialContent, rest[:short], h, short)
	}
	resp := s.objectResp(r, a, ob, v, http.StatusPartialContent, rest, h, pick(rng, n, -1))
	a.resp.Cut, a.resp.Break, a.resp.Joined = int(short), fakeorigin.EarlyEOF, rng.IntN(2) == 0
	return resp
}

// junk is n random bytes, which no version of an object holds at their
// offset but by chance.
func junk(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

// parseSimRange reads "bytes=N-" or "bytes=N-E" within size.
func parseSimRange(v string, size int) (first, last int, ok bool) {
	s, found := strings.CutPrefix(v, "bytes=")
	a, b, found2 := strings.Cut(s, "-")
	if !found || !found2 {
		return 0, 0, false
	}
	first, err := strconv.Atoi(a)
	if err != nil {
		return 0, 0, false
	}
	last = size - 1
	if b != "" {
		if last, err = strconv.Atoi(b); err != nil {
			return 0, 0, false
		}
	}
	return first, last, first >= 0 && first <= last && last < size
}

// simValidator is the validator the contract pins a resume to, by the
// sim's own reading of h: a strong ETag, else a Last-Modified at least
// 60 s before Date; "" for none.
func simValidator(h http.Header) string {
	if et := h["Etag"]; len(et) > 0 {
		if v := et[0]; len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
			return v
		}
		return ""
	}
	lm, errLM := http.ParseTime(h.Get("Last-Modified"))
	date, errDate := http.ParseTime(h.Get("Date"))
	if errLM != nil || errDate != nil || lm.After(date.Add(-time.Minute)) {
		return ""
	}
	return h.Get("Last-Modified")
}

// readAll reads the request body to its end and closes it, as a transport
// that wrote the request does; it reports false if reading failed.
func (s *simBase) readAll(r *http.Request, a *simAttempt) bool {
	if r.Body == nil {
		return true
	}
	defer r.Body.Close()
	b, err := io.ReadAll(r.Body)
	s.run.mu.Lock()
	a.got, a.gotEOF, a.readErr = b, err == nil, err
	s.run.mu.Unlock()
	return err == nil
}

// upload reads the rest of a body after an early answer, a chunk per
// step, until its end, a read error or the attempt's end.
func (s *simBase) upload(r *http.Request, a *simAttempt) {
	if r.Body == nil {
		return
	}
	defer r.Body.Close()
	buf := make([]byte, uploadChunk)
	for {
		t := time.NewTimer(uploadStep)
		select {
		case <-r.Context().Done():
			t.Stop()
			s.run.mu.Lock()
			a.readErr = r.Context().Err()
			s.run.mu.Unlock()
			return
		case <-t.C:
		}
		n, err := r.Body.Read(buf)
		s.run.mu.Lock()
		a.got = append(a.got, buf[:n]...)
		if err != nil {
			a.gotEOF, a.readErr = err == io.EOF, err
			if err == io.EOF {
				a.readErr = nil
			}
		}
		s.run.mu.Unlock()
		if err != nil {
			return
		}
	}
}

var raForms = []string{"", "0", "1", "2", "3", "100000", "99999999999999999999", "date+1", "date+2",
	"date-5", "soon", "-1", "1.5"}

// answer makes a response with status, its body drawn and counted.
func (s *simBase) answer(r *http.Request, a *simAttempt, o *simOrigin, rng *rand.Rand, status int) *http.Response {
	run := s.run
	sizes := []int{0, 17, 300, 4096, 4097, 6000}
	size := sizes[rng.IntN(len(sizes))]
	if a.beh == bEarly503 && rng.IntN(2) == 0 {
		size = 4097 + rng.IntN(3000)
	}
	data := make([]byte, size)
	for i := range data {
		data[i] = byte('a' + (i+a.seq)%26)
	}
	body := run.newBody(r, a, data)
	if a.beh == bCut && size > 0 {
		body.Cut, body.Break = rng.IntN(size), fakeorigin.Abort
	}
	h := http.Header{"Content-Type": {"text/plain"}}
	if (status == 503 || status == 429) && len(o.raKinds) > 0 {
		ra := o.raKinds[rng.IntN(len(o.raKinds))]
		now := time.Now()
		switch ra {
		case "date+1":
			ra = now.Add(time.Second).UTC().Format(http.TimeFormat)
		case "date+2":
			ra = now.Add(2 * time.Second).UTC().Format(http.TimeFormat)
		case "date-5":
			ra = now.Add(-5 * time.Second).UTC().Format(http.TimeFormat)
		}
		if ra != "" {
			h.Set("Retry-After", ra)
		}
		a.ra = ra
	}
	cl := int64(size)
	if rng.IntN(3) == 0 {
		cl = -1 // unknown length, as a chunked answer has
	}
	h.Set("X-Sim-Body", strconv.Itoa(body.id))
	a.resp = body
	if run.cfg.smallCuts && size > 0 && a.beh != bCut && !a.resume {
		drawCut(rng, o, body, false) // small answers cut and stalled too (point 24)
	}
	return fakeorigin.Response(r, status, h, body, cl)
}

func closeReq(r *http.Request) {
	if r.Body != nil {
		r.Body.Close()
	}
}

// attemptKey names an attempt for its behaviour's draw, independently of
// the order in which concurrent attempts reach the base.
type attemptKey struct{ req, n, origin int }

// errSimCanceled is the cause of a caller's cancel.
var errSimCanceled = errors.New("sim: the caller canceled")

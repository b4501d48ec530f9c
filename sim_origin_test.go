package httpretry_test

import (
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptrace"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/httpretry/httpretry"
)

// The simulator's upstreams: in-memory origins behind one base
// RoundTripper that plays http.Transport's part (it closes every request
// body it is given, reports a refused dial as a *net.OpError with Op
// "dial", tells the request's httptrace of the connection) without a
// socket, so that synctest's virtual clock governs every wait.

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

// simAttempt is what the base saw of one attempt.
type simAttempt struct {
	req     *simReq
	seq     int // order of arrival at the base, over the run
	n       int // AttemptFromContext
	origin  *simOrigin
	url     string // as sent: scheme://host/path?query
	start   time.Time
	settled time.Time // when the base returned
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
}

// simBody is a response body the base made, counted as it is closed.
type simBody struct {
	id     int
	data   []byte
	cutAt  int // -1: whole
	pos    int
	closes int
	att    *simAttempt
	mu     *sync.Mutex
}

func (b *simBody) Read(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closes > 0 {
		return 0, errors.New("sim: read on closed body")
	}
	end := len(b.data)
	if b.cutAt >= 0 {
		end = b.cutAt
	}
	if b.pos >= end {
		if b.cutAt >= 0 {
			return 0, io.ErrUnexpectedEOF
		}
		return 0, io.EOF
	}
	n := copy(p, b.data[b.pos:end])
	b.pos += n
	return n, nil
}

func (b *simBody) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closes++
	return nil
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
	o := run.originFor(r.URL.Scheme, r.URL.Host)
	a.origin = o
	run.mu.Lock()
	a.seq = len(run.attempts)
	run.attempts = append(run.attempts, a)
	if sr != nil {
		sr.attempts = append(sr.attempts, a)
	}
	occurrence := run.occurrences[attemptKey{sr.id(), a.n, o.idx}]
	run.occurrences[attemptKey{sr.id(), a.n, o.idx}]++
	run.mu.Unlock()
	rng := rand.New(rand.NewPCG(run.seed, uint64(sr.id())<<32|uint64(a.n)<<16|uint64(o.idx)<<8|uint64(occurrence)))
	if o.script != nil {
		a.beh = o.script(sr, a.n)
	} else {
		a.beh = o.behaviourAt(now.Sub(run.t0), rng)
	}
	run.logf(sr, "attempt %d -> %s: %s", a.n, a.url, a.beh)

	resp, err := s.serve(r, a, o, rng)
	a.settled = time.Now()
	a.ctxDone = ctx.Err() != nil
	a.err = err
	if resp != nil {
		a.status = resp.StatusCode
		run.logf(sr, "attempt %d <- %d%s body %d%s", a.n, resp.StatusCode, raNote(a.ra), len(a.resp.data), cutNote(a.resp))
	} else {
		run.logf(sr, "attempt %d <- error: %v", a.n, err)
	}
	return resp, err
}

func raNote(ra string) string {
	if ra == "" {
		return ""
	}
	return " Retry-After " + strconv.Quote(ra)
}

func cutNote(b *simBody) string {
	if b.cutAt < 0 {
		return ""
	}
	return " cut at " + strconv.Itoa(b.cutAt)
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
		return fail(&net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED})
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
		return fail(&net.OpError{Op: "write", Net: "tcp", Err: syscall.ECONNRESET})
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
		return nil, &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}
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
	return s.answer(r, a, o, rng, 200), nil
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
	body := &simBody{data: make([]byte, size), cutAt: -1, att: a, mu: &run.mu}
	for i := range body.data {
		body.data[i] = byte('a' + (i+a.seq)%26)
	}
	if a.beh == bCut && size > 0 {
		body.cutAt = rng.IntN(size)
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
	run.mu.Lock()
	body.id = len(run.bodies)
	run.bodies = append(run.bodies, body)
	run.mu.Unlock()
	h.Set("X-Sim-Body", strconv.Itoa(body.id))
	a.resp = body
	return &http.Response{StatusCode: status, Status: strconv.Itoa(status) + " " + http.StatusText(status),
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Header: h, Body: body, ContentLength: cl, Request: r}
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

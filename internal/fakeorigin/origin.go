package fakeorigin

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Script decides the answer to one request.
type Script func(q *Request) Answer

// Always is a Script that gives every request a.
func Always(a Answer) Script { return func(*Request) Answer { return a } }

// Sequence is a Script that gives the n-th request answers[n-1], and the
// last answer to every request after it.
func Sequence(answers ...Answer) Script {
	return func(q *Request) Answer {
		if len(answers) == 0 {
			return Answer{}
		}
		return answers[min(q.N, len(answers))-1]
	}
}

// Request is a request as a Script sees it.
type Request struct {
	*http.Request
	// N is the request's number at its Origin: 1 for the first.
	N int

	read bool
	body []byte
	err  error
}

// ReadBody reads the request's body to its end, once, and closes it.
func (q *Request) ReadBody() ([]byte, error) {
	if !q.read {
		q.read = true
		if q.Request.Body != nil {
			q.body, q.err = io.ReadAll(q.Request.Body)
			q.Request.Body.Close()
		}
	}
	return q.body, q.err
}

// Attempt is what an Origin received of one request.
type Attempt struct {
	N      int
	Method string
	URL    string // as URL.String writes it; over loopback, the path
	Header http.Header
	Body   []byte // as far as it was read
	// BodyErr is why reading the body stopped, nil at its end.
	BodyErr error
	At      time.Time
}

// Origin is a fake upstream that answers from a Script and records every
// request: in memory as an http.RoundTripper, over loopback as the
// http.Handler of a Server. It is safe for concurrent use.
type Origin struct {
	script Script
	quiet  bool
	n      atomic.Int64
	served atomic.Int64 // body bytes sent

	mu       sync.Mutex
	attempts []Attempt
}

// New returns an Origin that answers from script; a nil script answers
// every request with a 200 and an empty body.
func New(script Script) *Origin {
	if script == nil {
		script = Always(Answer{})
	}
	return &Origin{script: script}
}

// Quiet makes o keep no Attempts, only its counts, so that a long run
// (a load, a soak) does not grow the heap it measures; it returns o.
// Call it before o serves.
func (o *Origin) Quiet() *Origin {
	o.quiet = true
	return o
}

// Requests returns how many requests arrived.
func (o *Origin) Requests() int { return int(o.n.Load()) }

// Served returns how many response body bytes the Origin sent.
func (o *Origin) Served() int64 { return o.served.Load() }

// Attempts returns a copy of the requests received so far, in the order
// they arrived.
func (o *Origin) Attempts() []Attempt {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]Attempt(nil), o.attempts...)
}

// begin numbers r and asks the script.
func (o *Origin) begin(r *http.Request) (*Request, Answer) {
	q := &Request{Request: r, N: int(o.n.Add(1))}
	return q, o.script(q)
}

// record keeps what arrived of q, its body read to its end first.
func (o *Origin) record(q *Request) {
	body, err := q.ReadBody()
	if o.quiet {
		return
	}
	a := Attempt{N: q.N, Method: q.Method, URL: q.URL.String(), Header: q.Header.Clone(), Body: body,
		BodyErr: err, At: time.Now()}
	o.mu.Lock()
	o.attempts = append(o.attempts, a)
	o.mu.Unlock()
}

// RoundTrip answers r in memory, as http.Transport would have: it closes
// r's body, reports a refused dial as a *net.OpError with Op "dial", and
// tells r's httptrace of the connection.
func (o *Origin) RoundTrip(r *http.Request) (*http.Response, error) {
	ctx := r.Context()
	if err := ctx.Err(); err != nil {
		// http.Transport sends nothing for a request already over.
		if r.Body != nil {
			r.Body.Close()
		}
		return nil, err
	}
	q, a := o.begin(r)
	trace := httptrace.ContextClientTrace(ctx)
	if trace != nil && trace.GetConn != nil {
		trace.GetConn(r.URL.Host)
	}
	if a.Fault == Refuse || a.Fault == DialHang {
		return nil, o.noConn(ctx, r, q, a.Fault)
	}
	if trace != nil && trace.GotConn != nil {
		trace.GotConn(httptrace.GotConnInfo{})
	}
	o.record(q)
	if err := sleep(ctx, a.After); err != nil {
		return nil, err
	}
	switch a.Fault {
	case Reset:
		return nil, ResetError("read")
	case BlackHole:
		<-ctx.Done()
		return nil, ctx.Err()
	}
	status, h, data := a.render(q)
	b := &Body{Data: data, Cut: -1, ctx: ctx, closed: make(chan struct{})}
	if a.Break != Whole && a.Cut < len(data) {
		b.Cut, b.Break = max(a.Cut, 0), a.Break
	}
	o.served.Add(int64(b.sent()))
	cl := int64(len(data))
	if v := h.Get("Content-Length"); v != "" {
		cl, _ = strconv.ParseInt(v, 10, 64)
	}
	return Response(r, status, h, b, cl), nil
}

// noConn records q, a request that never got a connection, and returns
// the dial's error: at once for Refuse, when ctx ends for DialHang.
func (o *Origin) noConn(ctx context.Context, r *http.Request, q *Request, f Fault) error {
	if r.Body != nil {
		r.Body.Close()
	}
	q.read = true
	o.record(q)
	if f == Refuse {
		return RefusedError()
	}
	<-ctx.Done()
	return &net.OpError{Op: "dial", Net: "tcp", Err: ctx.Err()}
}

var errClosed = errors.New("fakeorigin: read on closed body")

// ErrStalled is what a Body tells OnBreak of a stall; Read never
// returns it.
var ErrStalled = errors.New("fakeorigin: the body stalled")

// Body is a response body of the in-memory origin: Data, or its first
// Cut bytes and then a Break. It counts its Closes.
type Body struct {
	Data  []byte
	Cut   int // -1: whole
	Break Break
	// Joined, for a break that fails, returns the error with the last
	// bytes before the cut, in one Read.
	Joined bool
	// OnBreak, when set, is told of the break each time a Read meets it,
	// with no lock of the Body held: the error Read returns, the same
	// value, or io.ErrUnexpectedEOF for an early EOF, or ErrStalled.
	OnBreak func(error)

	ctx    context.Context
	mu     sync.Mutex
	pos    int
	closes int
	closed chan struct{}
}

// NewBody is a Body of data for a request whose context is ctx: a stall
// ends when it does.
func NewBody(ctx context.Context, data []byte) *Body {
	return &Body{Data: data, Cut: -1, ctx: ctx, closed: make(chan struct{})}
}

// sent is how many bytes the body delivers.
func (b *Body) sent() int {
	if b.Cut >= 0 {
		return b.Cut
	}
	return len(b.Data)
}

// Whole reports whether the body delivers all of Data and then io.EOF:
// no cut, or an early EOF that comes at the very end.
func (b *Body) Whole() bool {
	return b.Cut < 0 || b.Break == EarlyEOF && b.Cut == len(b.Data)
}

// Closes returns how many times the body was closed.
func (b *Body) Closes() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.closes
}

// BreakErr is the error a Read meets at the cut: nil for a stall.
func (b *Body) BreakErr() error {
	switch b.Break {
	case Abort:
		return io.ErrUnexpectedEOF
	case ResetBody:
		return ResetError("read")
	case EarlyEOF:
		return io.EOF
	}
	return nil
}

func (b *Body) Read(p []byte) (int, error) {
	b.mu.Lock()
	if b.closes > 0 {
		b.mu.Unlock()
		return 0, errClosed
	}
	end := b.sent()
	if b.pos >= end {
		b.mu.Unlock()
		if b.Whole() {
			return 0, io.EOF
		}
		return 0, b.broken()
	}
	n := copy(p, b.Data[b.pos:end])
	b.pos += n
	joined := b.pos == end && b.Joined && !b.Whole() && b.Break != Stall
	b.mu.Unlock()
	if joined {
		return n, b.broken()
	}
	return n, nil
}

// broken is the error of a Read at the cut; a stall waits first.
func (b *Body) broken() error {
	err := b.BreakErr()
	if b.OnBreak != nil {
		switch noted := err; noted {
		case nil:
			b.OnBreak(ErrStalled)
		case io.EOF:
			b.OnBreak(io.ErrUnexpectedEOF) // before the declared length
		default:
			b.OnBreak(noted)
		}
	}
	if b.Break != Stall {
		return err
	}
	select {
	case <-b.closed:
		return errClosed
	case <-b.ctx.Done():
		return b.ctx.Err()
	}
}

func (b *Body) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closes++
	if b.closes == 1 {
		close(b.closed)
	}
	return nil
}

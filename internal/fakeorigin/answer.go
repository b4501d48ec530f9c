// Package fakeorigin is the one fake upstream of httpretry's own tests,
// benchmarks and simulator, as connect-go shares internal/memhttp. An
// Origin answers each request from a script of Answers: a status, headers
// and a body, Retry-After, latency, a refused or hung dial, a reset, a
// black hole, a body cut or stalled mid-stream, or an object served with
// Range and validators for a resume. It answers in memory, as a base
// http.RoundTripper whose every wait is a timer (so testing/synctest runs
// it in virtual time), or over a real loopback connection, as the
// http.Handler of a Server. A new fault is added here once, for both.
package fakeorigin

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"syscall"
	"time"
)

// Fault is what goes wrong with a request before it is answered.
type Fault uint8

const (
	// NoFault answers.
	NoFault Fault = iota
	// Refuse fails the dial: the request provably never left. Over
	// loopback the connection is already open, so it is reset unread.
	Refuse
	// DialHang holds the dial until the request's context ends. Over
	// loopback the request is held unread.
	DialHang
	// Reset reads the request, then resets the connection unanswered.
	Reset
	// BlackHole reads the request and answers nothing until the client
	// goes.
	BlackHole
)

// Break is how a response body ends at Answer.Cut.
type Break uint8

const (
	// Whole sends the whole body.
	Whole Break = iota
	// Abort ends the body at the cut: in memory, a Read fails with
	// io.ErrUnexpectedEOF; over loopback, the connection is aborted.
	Abort
	// ResetBody resets the connection at the cut: a Read fails with
	// ECONNRESET.
	ResetBody
	// EarlyEOF ends the body at the cut with io.EOF, before the length
	// it declares. Over loopback it aborts, as net/http reports it.
	EarlyEOF
	// Stall sends nothing more until the client goes, or, with
	// Answer.Resume, for that long before the rest.
	Stall
)

// Answer is how an Origin answers one request. The zero Answer is a 200
// with an empty body.
type Answer struct {
	Status int // 0: 200
	Header http.Header
	Body   []byte
	// Content serves Body as http.ServeContent does, under the ETag and
	// Last-Modified of Header: a 200 with Accept-Ranges, or the 206 a
	// Range (and If-Range) asks for. It is the origin of a resume.
	Content bool
	// After delays the answer, or the fault: latency.
	After time.Duration
	Fault Fault
	// Break, unless Whole, ends the body after Cut bytes of it; a Stall
	// lasts Resume, or until the client goes if Resume is 0 (loopback
	// only: in memory a stalled body never goes on).
	Break  Break
	Cut    int
	Resume time.Duration
	// Serve, when set, answers in place of all the above but After and
	// Fault, for what an Answer cannot say (a hijack, a trailer, a raw
	// header): it gets the request with its body as the origin read it,
	// and the connection's own ResponseWriter; in memory, a recorder.
	Serve http.HandlerFunc
}

// Status is an Answer of status code with its text as the body.
func Status(code int) Answer {
	return Answer{Status: code, Header: http.Header{"Content-Type": {"text/plain"}},
		Body: []byte(http.StatusText(code))}
}

// RetryAfter returns a copy of a that sends Retry-After: v.
func (a Answer) RetryAfter(v string) Answer {
	a.Header = a.Header.Clone()
	if a.Header == nil {
		a.Header = http.Header{}
	}
	a.Header.Set("Retry-After", v)
	return a
}

// RefusedError is the error of a refused dial, as net/http returns it:
// a *net.OpError with Op "dial" wrapping ECONNREFUSED.
func RefusedError() error {
	return &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
}

// ResetError is the error of a connection reset while op ("read" or
// "write") ran: a *net.OpError wrapping ECONNRESET.
func ResetError(op string) error {
	return &net.OpError{Op: op, Net: "tcp", Err: os.NewSyscallError(op, syscall.ECONNRESET)}
}

// Response is a response to r as the in-memory origin builds it: HTTP/1.1,
// length cl (-1: unknown), r its Request.
func Response(r *http.Request, status int, h http.Header, body io.ReadCloser, cl int64) *http.Response {
	if h == nil {
		h = http.Header{}
	}
	return &http.Response{Status: strconv.Itoa(status) + " " + http.StatusText(status), StatusCode: status,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Header: h, Body: body, ContentLength: cl, Request: r}
}

// render is what a says to q in memory: status, headers and body, before
// any break. ServeContent and Serve write into a recorder.
func (a Answer) render(q *Request) (int, http.Header, []byte) {
	r := q.Request
	if !a.Content && a.Serve == nil {
		status := a.Status
		if status == 0 {
			status = http.StatusOK
		}
		h := a.Header.Clone()
		if h == nil {
			h = http.Header{}
		}
		return status, h, a.Body
	}
	rec := &recorder{header: a.Header.Clone()}
	if rec.header == nil {
		rec.header = http.Header{}
	}
	if a.Serve != nil {
		// The handler reads the body again, from a copy of the request.
		body, _ := q.ReadBody()
		r2 := *r
		r2.Body = io.NopCloser(bytes.NewReader(body))
		a.Serve(rec, &r2)
	} else {
		a.serveContent(rec, r)
	}
	if rec.code == 0 {
		rec.code = http.StatusOK
	}
	return rec.code, rec.header, rec.body.Bytes()
}

// serveContent serves a.Body with http.ServeContent, its modification
// time read from Last-Modified so that a date in If-Range is judged.
func (a Answer) serveContent(w http.ResponseWriter, r *http.Request) {
	mod, _ := http.ParseTime(w.Header().Get("Last-Modified"))
	http.ServeContent(w, r, "", mod, bytes.NewReader(a.Body))
}

// recorder is the ResponseWriter of an answer rendered in memory.
type recorder struct {
	header http.Header
	code   int
	body   bytes.Buffer
}

func (w *recorder) Header() http.Header { return w.header }

func (w *recorder) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
}

func (w *recorder) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.body.Write(p)
}

// sleep waits d, or until ctx ends, then with its error.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

package httpretry

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
)

// The per-request overrides a caller sets on a request's context
// (WithMaxRetries, WithFallbacks, WithIdempotent) and the attempt number
// httpretry sets on each attempt's (AttemptFromContext).
//
// Each override has a flag set when it is first used: until then no
// context can hold it, and RoundTrip skips the lookup, which walks the
// whole context chain. Measured: a lookup costs 3 ns on
// context.Background and 50 ns on a chain of eight contexts, as a server
// handler's request has, against 1 ns for the flag's load, on a request
// whose whole happy path costs about 400 ns (BenchmarkGET).

type maxRetriesKey struct{}

// maxRetriesUsed is set once WithMaxRetries has been called.
var maxRetriesUsed atomic.Bool

// WithMaxRetries returns a context that makes the requests sent with it allow n
// resends, whatever their policy's MaxRetries. n is capped at MaxRetriesLimit
// (16). 0 or less turns retrying off for those requests. Each fallback origin
// still gets its one attempt, though. To send a request exactly once, take its
// fallbacks away too with WithFallbacks(ctx).
func WithMaxRetries(ctx context.Context, n int) context.Context {
	maxRetriesUsed.Store(true)
	return context.WithValue(ctx, maxRetriesKey{}, min(max(n, 0), MaxRetriesLimit))
}

func maxRetriesFrom(ctx context.Context) (int, bool) {
	if !maxRetriesUsed.Load() {
		return 0, false
	}
	n, ok := ctx.Value(maxRetriesKey{}).(int)
	return n, ok
}

type idempotentKey struct{}

// idempotentUsed is set once WithIdempotent has been called.
var idempotentUsed atomic.Bool

// WithIdempotent returns a context that marks every request sent with it as
// safe to send more than once, whatever its method. It is for operations known
// to be idempotent that a client sends as POST. S3's CompleteMultipartUpload
// and DeleteObjects are such. Never use it for an operation whose repetition
// has an effect, such as S3's CreateMultipartUpload.
func WithIdempotent(ctx context.Context) context.Context {
	idempotentUsed.Store(true)
	return context.WithValue(ctx, idempotentKey{}, true)
}

func idempotentFrom(ctx context.Context) bool {
	if !idempotentUsed.Load() {
		return false
	}
	marked, _ := ctx.Value(idempotentKey{}).(bool)
	return marked
}

type fallbacksKey struct{}

// fallbacksUsed is set once WithFallbacks has been called.
var fallbacksUsed atomic.Bool

// requestFallbacks is what WithFallbacks stores: the origins parsed once,
// or why they could not be.
type requestFallbacks struct {
	origins []origin
	err     error
}

// WithFallbacks returns a context that gives the requests sent with it these
// fallback origins. They are tried in order after the request's own, in place
// of their policy's Fallbacks. With no origins, those requests have no
// fallback. So with MaxRetries 0 they are sent exactly once.
//
// An origin is "http://" or "https://" and a host with an optional port. A
// malformed one makes RoundTrip fail before any attempt, with an error that
// names it.
func WithFallbacks(ctx context.Context, origins ...string) context.Context {
	fallbacksUsed.Store(true)
	f := &requestFallbacks{}
	var errs []error
	for _, s := range origins {
		o, err := parseOrigin(s)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		f.origins = append(f.origins, o)
	}
	f.err = errors.Join(errs...)
	return context.WithValue(ctx, fallbacksKey{}, f)
}

// fallbacksFor returns the fallback origins of r, from its context or its
// policy, and an error for a malformed per-request list.
func fallbacksFor(r *http.Request, p *hostPolicy) ([]origin, error) {
	if fallbacksUsed.Load() {
		if f, ok := r.Context().Value(fallbacksKey{}).(*requestFallbacks); ok {
			return f.origins, f.err
		}
	}
	return p.fallbacks, nil
}

// attemptContext carries an attempt's number to the middlewares inside
// httpretry, and tells an httpretry inside it that the request is an
// attempt of another.
type attemptContext struct {
	context.Context
	n int
}

type attemptKey struct{}

func (c *attemptContext) Value(key any) any {
	if _, ok := key.(attemptKey); ok {
		return c
	}
	return c.Context.Value(key)
}

// AttemptFromContext reports which attempt of a request ctx belongs to. It is 1
// for the first, 2 for the first resend or hedged copy, and so on. A context
// that did not come from httpretry is a first attempt.
//
// It is meant for tracing and logging middlewares placed inside httpretry, as
// its base. Such a middleware may set http.request.resend_count to the attempt
// less one.
//
// Over an *http.Transport, the first attempt of a request is usually the
// caller's own request, untouched. AttemptFromContext then walks the context
// chain and finds nothing, which costs httpretry nothing. Over any other base,
// every attempt carries its number, the first too.
//
// With httpretry inside httpretry, it reports the innermost one's attempt.
func AttemptFromContext(ctx context.Context) int {
	if ac, ok := ctx.Value(attemptKey{}).(*attemptContext); ok {
		return ac.n
	}
	return 1
}

// opaqueBuilt is set once New has built a transport with an opaque base:
// until then no httpretry can be inside another, and no request can be an
// outer's attempt.
var opaqueBuilt atomic.Bool

// fromOuterAttempt reports whether r is an attempt of an outer httpretry,
// whose policy then governs it (point 20: wrapping twice never
// multiplies). The outer's base is opaque, so every attempt of it carries
// the mark, its first too.
func fromOuterAttempt(r *http.Request) bool {
	if !opaqueBuilt.Load() {
		return false
	}
	_, ok := r.Context().Value(attemptKey{}).(*attemptContext)
	return ok
}

// markedRequest is an opaque base's first attempt sent by the fast path:
// the caller's request with a context that marks it, in one allocation.
type markedRequest struct {
	ctx attemptContext
	req http.Request
}

// markFirst returns req marked as attempt 1, for an opaque base.
func markFirst(req *http.Request) *http.Request {
	m := &markedRequest{ctx: attemptContext{req.Context(), 1}}
	m.req = *req.WithContext(&m.ctx) // copied out of a clone that stays on the stack
	return &m.req
}

package httpretry

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/httpretry/httpretry/internal/bodyrec"
)

// Errors of RetryTransport's own making. An error RoundTrip returns wraps
// its cause, so errors.Is finds it (for example context.Canceled).
//
// An Event's error (Event.Err) is the failure itself. It is the base's
// error as it came, or one of httpretry's own without the "httpretry: "
// prefix. The event is httpretry's already, and the error RoundTrip or a
// body's Read returns wraps it behind one prefix. So no Event's error
// starts with the prefix, and no returned error repeats it.
var (
	// ErrAttemptTimeout ends an attempt that got no response headers within
	// PerTryTimeout. It is retried like a network failure. The error also
	// wraps context.DeadlineExceeded.
	ErrAttemptTimeout = errors.New("httpretry: attempt timed out waiting for response headers")
	// ErrDeadline ends an attempt still waiting for headers at the policy's
	// Deadline. The error also wraps context.DeadlineExceeded.
	ErrDeadline = errors.New("httpretry: request deadline exceeded")

	// The unexported errors that can be an attempt's failure, or a
	// response body's break, are written without the prefix. The sentinels
	// a caller may match keep it, and attemptTimeout leaves it out of its
	// text.
	errNilRequest  = errors.New("httpretry: nil request")
	errNilURL      = errors.New("httpretry: nil request URL")
	errNilResponse = errors.New("base RoundTripper returned neither a response nor an error")
)

// ErrBodyChanged ends a response body that broke and could not be resumed
// because the resource changed meanwhile (Policy.Resume). It also ends one
// whose resume request was answered with other than the rest it named. No
// byte of the new version, nor past the end, is delivered. The error also
// wraps the original read error.
var ErrBodyChanged = errors.New("httpretry: the response body changed before the rest could be read")

// errBodyIdle is the read error of a response body that delivered no byte
// for Resume.Idle.
var errBodyIdle = errors.New("response body delivered no byte for Resume.Idle")

// errPastEnd ends a resumable response body that goes on past the last
// byte its headers declare (Policy.Resume): the bytes beyond are not
// delivered.
var errPastEnd = errors.New("httpretry: response body runs past the end its headers declare")

// errReadOnClosedBody is returned by a Read of a resumable response body
// after Close, as net/http's own bodies do.
var errReadOnClosedBody = errors.New("httpretry: read on closed response body")

// ErrInvalidPolicy is wrapped by the error Policy.Validate returns.
var ErrInvalidPolicy = errors.New("httpretry: invalid policy")

// errOvertaken is the failure of a hedged round's first attempt that a
// copy to another origin overtook (see tellOvertaken).
var errOvertaken = errors.New("no response headers before a copy to another origin answered")

// errBodyGone is returned to an attempt whose next body bytes were read by
// another attempt and could not be kept, because the body outgrew
// MaxReplayBytes.
var errBodyGone = bodyrec.ErrGone

// errAnswerLost is the error of a failed answer that a held or parked
// request kept (see hold) and whose body broke or stalled meanwhile.
var errAnswerLost = errors.New("the failed answer's body broke while the request waited")

// errBodyClosed is returned by a Read after Close.
var errBodyClosed = bodyrec.ErrClosed

// errBodyRevoked is returned to an attempt that was discarded while its
// transport was still sending the body, once a resend has taken it over.
var errBodyRevoked = bodyrec.ErrRevoked

// errBackoffSyntax says what a Backoff's text may be.
var errBackoffSyntax = errors.New("want none, fixed(d), exponential(initial, max) or exponentialJitter(initial, max), " +
	"optionally followed by .WithWaitBudget(total) or .Unbudgeted()")

// attemptTimeout ends an attempt that its timer cut before response
// headers: its text is the sentinel's (ErrAttemptTimeout or ErrDeadline)
// without the package prefix, which the error that wraps it already has,
// and it matches both the sentinel and context.DeadlineExceeded.
type attemptTimeout struct {
	sentinel error
	after    time.Duration // 0: not said
}

func (e *attemptTimeout) Error() string {
	var b strings.Builder
	b.WriteString(strings.TrimPrefix(e.sentinel.Error(), "httpretry: "))
	if e.after > 0 {
		b.WriteString(" (" + e.after.String() + ")")
	}
	b.WriteString(": " + context.DeadlineExceeded.Error())
	return b.String()
}

func (e *attemptTimeout) Unwrap() []error { return []error{e.sentinel, context.DeadlineExceeded} }

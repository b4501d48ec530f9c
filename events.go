package httpretry

import (
	"context"
	"fmt"
	"net/http"
	"time"
)

// EventKind says what an Event reports.
type EventKind uint8

const (
	// EventRetry: an attempt failed and a resend will be sent after Delay.
	EventRetry EventKind = iota + 1
	// EventHedge: an attempt went without response headers for the round's
	// delay, and copy number Attempt was sent. With Reason set, the copy was
	// not sent. The delay is Hedge.After, or the origin's learned delay under
	// Hedge.Quantile.
	EventHedge
	// EventGiveUp: the last attempt failed, and no further attempt will be
	// made. It failed with a status in RetryOn, a transport error, or an
	// outcome Policy.RetryIf accepted. Reason says why: ReasonNotRetryable for
	// a permanent transport error.
	EventGiveUp
	// EventFallback: an attempt failed and the next one is the first
	// attempt on another origin, Origin.
	EventFallback
	// EventDemote: Origin failed Policy.Demote.After times in a row (or
	// failed its probe) and goes behind the other candidates for Delay;
	// Status or Err is the failure that tipped it.
	EventDemote
	// EventRestore: a demoted Origin answered (its probe, or a request
	// sent to it while every candidate was demoted) and takes its
	// configured place again.
	EventRestore
	// EventResume: the response body of attempt Attempt broke (Err) after
	// Offset bytes had been delivered. A resume request for the rest will be
	// sent to Origin after Delay (Policy.Resume).
	EventResume
)

// String returns the kind as a lower-case word: "retry", "hedge",
// "give-up", "fallback", "demote", "restore" or "resume".
func (k EventKind) String() string {
	switch k {
	case EventRetry:
		return "retry"
	case EventHedge:
		return "hedge"
	case EventGiveUp:
		return "give-up"
	case EventFallback:
		return "fallback"
	case EventDemote:
		return "demote"
	case EventRestore:
		return "restore"
	case EventResume:
		return "resume"
	}
	return "unknown"
}

// Reason says why no further attempt was made.
type Reason uint8

const (
	// ReasonExhausted: MaxRetries resends were made.
	ReasonExhausted Reason = iota + 1
	// ReasonBudget: the host's retry budget refused the resend.
	ReasonBudget
	// ReasonNotIdempotent: the method may not be resent, and the request may
	// have reached the server. It is a POST or PATCH without an idempotency
	// key, or another method that is not idempotent, and WithIdempotent does
	// not mark it.
	ReasonNotIdempotent
	// ReasonRetryAfterTooLong: the server asked for a wait longer than
	// MaxRetryAfter.
	ReasonRetryAfterTooLong
	// ReasonDeadline: the wait would cross the policy's Deadline or the
	// context's deadline, or that deadline passed.
	ReasonDeadline
	// ReasonBodyNotReplayable: the request body cannot be sent again: it was
	// larger than MaxReplayBytes, reading it failed, or GetBody failed.
	ReasonBodyNotReplayable
	// ReasonNotRetryable: a permanent transport error, such as a certificate
	// error or an unsupported scheme. It is also an answer to a request that
	// asks to switch protocols (Connection: upgrade), which is never resent.
	ReasonNotRetryable
	// ReasonCanceled: the request's context was canceled.
	ReasonCanceled
	// ReasonWaitBudget: the backoff's wait budget (Backoff.WithWaitBudget) is
	// spent, so no resend may go to an origin already tried. It ends the
	// request as ReasonExhausted does.
	ReasonWaitBudget
	// ReasonBodyChanged: a broken response body could not be resumed
	// because the resource changed (another validator, a 416, or a 206 of
	// another range); the read fails with ErrBodyChanged.
	ReasonBodyChanged
	// ReasonCopyCap: a hedged copy under a learned delay (Hedge.Quantile) was
	// refused by its origin's cap on such copies, though the retry budget may
	// have had room. The cap is ⌈2·(1 − Quantile)·Requests⌉ of the budget's
	// window, at least 1. BudgetStats.Copies counts such copies.
	ReasonCopyCap
	// ReasonHold: a held resend gave up (BudgetConfig.Hold): its origin kept
	// failing while it waited, or was down with nothing in flight, or was
	// silent and the floor had no credit for a resend decided blind.
	ReasonHold
)

var reasonNames = [...]string{
	ReasonExhausted:         "exhausted",
	ReasonBudget:            "budget",
	ReasonNotIdempotent:     "not-idempotent",
	ReasonRetryAfterTooLong: "retry-after-too-long",
	ReasonDeadline:          "deadline",
	ReasonBodyNotReplayable: "body-not-replayable",
	ReasonNotRetryable:      "not-retryable",
	ReasonCanceled:          "canceled",
	ReasonWaitBudget:        "wait-budget",
	ReasonBodyChanged:       "body-changed",
	ReasonCopyCap:           "copy-cap",
	ReasonHold:              "hold",
}

// String returns the reason as a lower-case word, such as "exhausted" or
// "budget". The zero Reason is "none".
func (r Reason) String() string {
	if int(r) < len(reasonNames) && reasonNames[r] != "" {
		return reasonNames[r]
	}
	return "none"
}

// Event reports a decision of the attempt loop to an observer (WithObserver).
type Event struct {
	// Kind says what happened.
	Kind EventKind
	// Request is the caller's request. Observers must not modify it.
	Request *http.Request
	// Attempt is the 1-based number of the attempt that just ended. For
	// EventHedge it is the number of the copy that was (or would have been)
	// sent.
	Attempt int
	// Status is that attempt's status code, 0 when it failed with an error.
	Status int
	// Err is the error that attempt failed with, nil when it got a response. It
	// is the base's error as it came, or one of httpretry's own without the
	// "httpretry: " prefix. The error the caller gets puts that prefix before
	// it once.
	Err error
	// Delay is the wait before the next attempt (EventRetry, EventResume). For
	// EventHedge, it is how long the attempt went without response headers
	// before the copy was sent. For EventDemote, it is the length of the
	// demotion.
	Delay time.Duration
	// Reason is why no further attempt is made (EventGiveUp), or why a hedged
	// copy was not sent (EventHedge).
	Reason Reason
	// Origin is "scheme://host[:port]", in lower case and without the scheme's
	// default port. It is the origin of the attempt the event announces. That
	// is the next one for EventRetry, EventHedge, EventFallback and
	// EventResume, and the last one for EventGiveUp. For EventDemote and
	// EventRestore it is the origin demoted or restored. Without fallbacks it
	// is the request's own.
	Origin string
	// Offset is, for EventResume, the bytes of the response body delivered to
	// the caller before it broke. So is it for the EventGiveUp of a body that
	// could not be resumed.
	Offset int64
}

// observer is a function told of events. enabled, when set, says whether
// it wants an event of kind about a request with ctx, so that an event
// nobody wants is never built: WithLogger at a disabled level costs no
// allocation, not even the event's Origin.
type observer struct {
	fn      func(Event)
	enabled func(ctx context.Context, kind EventKind) bool
}

// observers calls each observer in order, synchronously and with no lock
// held.
type observers []observer

// want reports whether any observer wants an event of kind about a
// request with ctx.
func (o observers) want(ctx context.Context, kind EventKind) bool {
	for _, ob := range o {
		if ob.enabled == nil || ob.enabled(ctx, kind) {
			return true
		}
	}
	return false
}

func (o observers) emit(e Event) {
	for _, ob := range o {
		ob.fn(e)
	}
}

// GoString returns the kind as its Go name, httpretry.EventRetry. So a failing
// test's %#v names it rather than printing a number.
func (k EventKind) GoString() string { return goName("Event", "EventKind", k.String(), uint8(k)) }

// GoString returns the reason as its Go name, httpretry.ReasonBudget.
func (r Reason) GoString() string { return goName("Reason", "Reason", r.String(), uint8(r)) }

// goName turns a kind or reason word ("give-up") into its constant's Go
// name (httpretry.EventGiveUp): each constant is named for its word. A
// value with no word is shown as a conversion to its type.
func goName(prefix, typ, word string, v uint8) string {
	if word == "unknown" || word == "none" {
		return fmt.Sprintf("httpretry.%s(%d)", typ, v)
	}
	name := []byte("httpretry." + prefix)
	upper := true
	for i := 0; i < len(word); i++ {
		c := word[i]
		if c == '-' {
			upper = true
			continue
		}
		if upper && 'a' <= c && c <= 'z' {
			c -= 'a' - 'A'
		}
		upper = false
		name = append(name, c)
	}
	return string(name)
}

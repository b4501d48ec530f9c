package httpretry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestEventKindString(t *testing.T) {
	tests := []struct {
		kind EventKind
		want string
	}{
		{EventRetry, "retry"},
		{EventHedge, "hedge"},
		{EventGiveUp, "give-up"},
		{EventFallback, "fallback"},
		{0, "unknown"},
		{EventDemote, "demote"},
		{EventRestore, "restore"},
		{EventResume, "resume"},
		{EventResume + 1, "unknown"},
		{255, "unknown"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.kind.String())
		})
	}
	assert.Equal(t, EventKind(1), EventRetry, "the zero EventKind is no event")
}

func TestReasonString(t *testing.T) {
	tests := []struct {
		reason Reason
		want   string
	}{
		{ReasonExhausted, "exhausted"},
		{ReasonBudget, "budget"},
		{ReasonNotIdempotent, "not-idempotent"},
		{ReasonRetryAfterTooLong, "retry-after-too-long"},
		{ReasonDeadline, "deadline"},
		{ReasonBodyNotReplayable, "body-not-replayable"},
		{ReasonNotRetryable, "not-retryable"},
		{ReasonCanceled, "canceled"},
		{0, "none"},
		{ReasonWaitBudget, "wait-budget"},
		{ReasonBodyChanged, "body-changed"},
		{ReasonCopyCap, "copy-cap"},
		{ReasonHold, "hold"},
		{ReasonHold + 1, "none"},
		{100, "none"},
		{255, "none"},
	}
	seen := map[string]Reason{}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.reason.String())
		})
		if tt.want != "none" {
			assert.NotContains(t, seen, tt.want, "names are distinct")
			seen[tt.want] = tt.reason
		}
	}
	assert.Len(t, seen, 12)
}

func TestObserversEmitInOrder(t *testing.T) {
	var got []string
	obs := observers{
		{fn: func(e Event) { got = append(got, "a:"+e.Kind.String()) }},
		{fn: func(e Event) { got = append(got, "b:"+e.Reason.String()) }},
	}
	obs.emit(Event{Kind: EventGiveUp, Reason: ReasonBudget})
	assert.Equal(t, []string{"a:give-up", "b:budget"}, got)
	observers(nil).emit(Event{}) // no observers: nothing happens
}

// A failing test names kinds and reasons, not numbers: testify prints
// them with %#v.
func TestKindsAndReasonsPrintAsGoNames(t *testing.T) {
	for v, want := range map[any]string{
		EventRetry:              "httpretry.EventRetry",
		EventGiveUp:             "httpretry.EventGiveUp",
		EventRestore:            "httpretry.EventRestore",
		EventKind(0):            "httpretry.EventKind(0)",
		EventKind(200):          "httpretry.EventKind(200)",
		ReasonBudget:            "httpretry.ReasonBudget",
		ReasonRetryAfterTooLong: "httpretry.ReasonRetryAfterTooLong",
		ReasonBodyNotReplayable: "httpretry.ReasonBodyNotReplayable",
		ReasonWaitBudget:        "httpretry.ReasonWaitBudget",
		Reason(0):               "httpretry.Reason(0)",
		Reason(99):              "httpretry.Reason(99)",
	} {
		assert.Equal(t, want, fmt.Sprintf("%#v", v))
	}
}

// TestEventErrorsCarryNoPrefix walks the places an Event's error is built:
// an attempt's failure (the base's error, a nil outcome, a timeout), a
// give-up for each way a request stops, and a wait the caller's context
// ended. No Event's error starts with "httpretry: ", the error RoundTrip
// returns carries the prefix once, and a spent budget says whose.
func TestEventErrorsCarryNoPrefix(t *testing.T) {
	boom := errors.New("boom")
	failing := roundTripFunc(func(*http.Request) (*http.Response, error) { return nil, boom })
	policy := func(mod func(*Policy)) Policy {
		p := DefaultPolicy()
		p.MaxRetries = 1
		p.Backoff = NoBackoff()
		p.Budget.Disabled = true
		mod(&p)
		return p
	}
	tests := []struct {
		name   string
		base   http.RoundTripper
		policy Policy
		cancel time.Duration // the caller's context ends after this; 0: never
		want   string        // the error RoundTrip returns, exactly; "": any
	}{
		{"exhausted", failing, policy(func(*Policy) {}),
			0, "httpretry: exhausted after 2 attempt(s): boom"},
		{"retry budget", failing, policy(func(p *Policy) { p.Budget = BudgetConfig{MinRetries: -1} }),
			0, "httpretry: retry budget of api.example.com spent after 1 attempt(s): boom"},
		{"wait budget", failing, policy(func(p *Policy) { p.Backoff = Fixed(time.Second).WithWaitBudget(0) }),
			0, "httpretry: wait budget spent after 1 attempt(s): boom"},
		{"deadline", failing, policy(func(p *Policy) { p.Deadline, p.Backoff = time.Second, Fixed(time.Hour) }),
			0, "httpretry: deadline after 1 attempt(s): boom"},
		{"canceled in the wait", failing, policy(func(p *Policy) { p.Backoff = Fixed(time.Hour) }),
			20 * time.Millisecond, "httpretry: context ended while waiting to resend: context canceled"},
		{"neither response nor error", roundTripFunc(func(*http.Request) (*http.Response, error) { return nil, nil }),
			policy(func(*Policy) {}),
			0, "httpretry: not-retryable after 1 attempt(s): base RoundTripper returned neither a response nor an error"},
		{"attempt timeout", roundTripFunc(func(r *http.Request) (*http.Response, error) {
			<-r.Context().Done()
			return nil, r.Context().Err()
		}), policy(func(p *Policy) { p.PerTryTimeout = 5 * time.Millisecond }),
			0, "httpretry: exhausted after 2 attempt(s): attempt timed out waiting for response headers (5ms): " +
				"context deadline exceeded"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var rec recorder
			rt := New(tt.base, WithPolicy(tt.policy), WithObserver(rec.observe))
			ctx := context.Background()
			if tt.cancel > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithCancel(ctx)
				time.AfterFunc(tt.cancel, cancel)
			}
			resp, err := get(t, rt, ctx)
			require.Nil(t, resp)
			require.Error(t, err)
			if tt.want != "" {
				assert.EqualError(t, err, tt.want)
			}
			assert.True(t, strings.HasPrefix(err.Error(), "httpretry: "), err.Error())
			assert.Equal(t, 1, strings.Count(err.Error(), "httpretry: "), err.Error())
			events := rec.all()
			require.NotEmpty(t, events)
			for _, e := range events {
				if e.Err != nil {
					assert.False(t, strings.HasPrefix(e.Err.Error(), "httpretry: "), "%v: %v", e.Kind, e.Err)
				}
			}
			assert.Equal(t, EventGiveUp, events[len(events)-1].Kind)
		})
	}
}

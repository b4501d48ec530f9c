package httpretry

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
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
		{ReasonCopyCap + 1, "none"},
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
	assert.Len(t, seen, 11)
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

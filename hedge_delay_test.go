package httpretry

import (
	"testing"
	"time"

	"github.com/httpretry/httpretry/internal/latency"
	"github.com/stretchr/testify/assert"
)

func TestHedgeDelay(t *testing.T) {
	for _, tc := range []struct {
		name            string
		est             time.Duration
		warm            bool
		after, minAfter time.Duration
		want            time.Duration
		send            bool
	}{
		{"cold: After", 0, false, 50 * time.Millisecond, 0, 50 * time.Millisecond, true},
		{"cold, After 0: no copy", 0, false, 0, 0, 0, false},
		{"cold ignores MinAfter", 0, false, 50 * time.Millisecond, 80 * time.Millisecond, 50 * time.Millisecond, true},
		{"warm: the estimate", 12 * time.Millisecond, true, 50 * time.Millisecond, 0, 12 * time.Millisecond, true},
		{"warm, After 0: the estimate", 12 * time.Millisecond, true, 0, 0, 12 * time.Millisecond, true},
		{"warm below 1 ms: MinAfter 0 means 1 ms", 1152, true, 0, 0, time.Millisecond, true},
		{"warm below MinAfter", 12 * time.Millisecond, true, 0, 20 * time.Millisecond, 20 * time.Millisecond, true},
		{"warm above MinAfter", 12 * time.Millisecond, true, 0, 5 * time.Millisecond, 12 * time.Millisecond, true},
		{"no ceiling", latency.Top - latency.Top/16, true, time.Second, 0, latency.Top - latency.Top/16, true},
		{"at the top: no copy", latency.Top, true, time.Second, 0, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, send := hedgeDelay(tc.est, tc.warm, tc.after, tc.minAfter)
			assert.Equal(t, tc.want, d)
			assert.Equal(t, tc.send, send)
		})
	}
}

// An origin slower than the histogram's top sends no copy once warm.
func TestHedgeDelayBeyondTop(t *testing.T) {
	var l latency.Estimator
	for range latency.Every {
		l.Record(3*time.Minute, 0.95)
	}
	est, warm := l.Estimate()
	assert.Equal(t, latency.Top, est)
	_, send := hedgeDelay(est, warm, time.Second, 0)
	assert.False(t, send)
}

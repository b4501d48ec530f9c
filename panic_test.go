package httpretry

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// A callback of the caller's that panics, RetryIf or an observer, leaves
// no connection and no goroutine behind: the response it was judging or
// told of is closed, and every attempt in flight ended, before the panic
// goes on (point 19). Behind an http.Server, which recovers panics, a leak
// per panic would add up.
func TestPanickingCallbacksReleaseEverything(t *testing.T) {
	boom := func() { panic("boom") }
	retryIfPanics := func(p Policy) Policy {
		p.RetryIf = func(resp *http.Response, err error) bool {
			if resp != nil && resp.StatusCode == http.StatusOK {
				boom()
			}
			return resp == nil || resp.StatusCode >= 500
		}
		return p
	}
	observerPanicsOn := func(kind EventKind) func(Event) {
		return func(e Event) {
			if e.Kind == kind {
				boom()
			}
		}
	}
	tests := []struct {
		name     string
		policy   func(Policy) Policy
		observer func(Event)
		slow     bool // the first request hangs until its client goes
	}{
		{"RetryIf, first attempt as is", retryIfPanics, nil, false},
		{"RetryIf, a resend", func(p Policy) Policy { return retryIfPanics(p) }, nil, false},
		{"RetryIf, per-try timeout", func(p Policy) Policy { p.PerTryTimeout = time.Minute; return retryIfPanics(p) }, nil, false},
		{"RetryIf, a copy in flight", func(p Policy) Policy {
			p.Hedge = Hedge{After: time.Millisecond, Max: 1}
			return retryIfPanics(p)
		}, nil, true},
		{"observer on retry", nil, observerPanicsOn(EventRetry), false},
		{"observer on give-up", func(p Policy) Policy { p.MaxRetries = 1; return p }, observerPanicsOn(EventGiveUp), false},
		{"observer on fallback", func(p Policy) Policy { p.MaxRetries = 0; return p }, observerPanicsOn(EventFallback), false},
		{"observer on hedge", func(p Policy) Policy { p.Hedge = Hedge{After: time.Millisecond, Max: 1}; return p }, observerPanicsOn(EventHedge), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			release := make(chan struct{})
			up := newUpstream(t, func(w http.ResponseWriter, r *http.Request, n int) {
				switch {
				case tt.slow && n == 1:
					select {
					case <-r.Context().Done():
					case <-release:
					}
				case tt.name == "RetryIf, a resend" && n == 1,
					strings.HasPrefix(tt.name, "observer on") && !tt.slow:
					w.WriteHeader(http.StatusServiceUnavailable)
				}
				w.Write([]byte(strings.Repeat("x", 100)))
			})
			defer close(release)
			standby := newUpstream(t, always(http.StatusServiceUnavailable))
			ignore := goleak.IgnoreCurrent()

			p := fastPolicy(2)
			p.Fallbacks = []string{standby.URL}
			if tt.name != "observer on fallback" && tt.name != "observer on give-up" {
				p.Fallbacks = nil
			}
			if tt.policy != nil {
				p = tt.policy(p)
			}
			opts := []Option{WithPolicy(p)}
			if tt.observer != nil {
				opts = append(opts, WithObserver(tt.observer))
			}
			base := &http.Transport{}
			rt := New(base, opts...)
			var recovered any
			func() {
				defer func() { recovered = recover() }()
				req, err := http.NewRequest(http.MethodGet, up.URL, nil)
				require.NoError(t, err)
				resp, _ := rt.RoundTrip(req)
				if resp != nil {
					resp.Body.Close()
				}
			}()
			assert.Equal(t, "boom", recovered)
			base.CloseIdleConnections()
			// goleak waits about 2 s on its own; a busy machine gets 30.
			err := goleak.Find(ignore)
			for deadline := time.Now().Add(30 * time.Second); err != nil && time.Now().Before(deadline); {
				time.Sleep(50 * time.Millisecond)
				err = goleak.Find(ignore)
			}
			assert.NoError(t, err)
		})
	}
}

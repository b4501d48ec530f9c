package bench

import (
	"context"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testServer is the server of a run with a 200 requests/s capacity (5 ms a
// request) and a trigger from 1 s to 2 s leaving 20 % (25 ms a request).
func testServer() *metastableServer {
	cfg := MetastableScenario(0.5, 1)
	cfg.WarmUp = time.Second
	return newMetastableServer(cfg)
}

func TestMetastableServerFinish(t *testing.T) {
	s := testServer()
	ms := time.Millisecond
	tests := []struct {
		name       string
		from, want time.Duration
	}{
		{"full capacity", 0, 5 * ms},
		{"ends at the trigger", 995 * ms, time.Second},
		{"runs into the trigger", 998 * ms, time.Second + 15*ms}, // 2 ms done, 3 ms at a fifth
		{"in the trigger", 1500 * ms, 1525 * ms},
		{"runs out of the trigger", 1990 * ms, 2*time.Second + 3*ms}, // 2 ms done in 10 ms, 3 ms left
		{"after the trigger", 3 * time.Second, 3*time.Second + 5*ms},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, s.finish(tt.from))
		})
	}
	s.share = 0 // the server stops while the trigger lasts
	assert.Equal(t, 2*time.Second+3*ms, s.finish(998*ms), "2 ms done before, 3 ms after")
	assert.Equal(t, 2*time.Second+5*ms, s.finish(1500*ms))
}

func TestMetastableServerIsFIFO(t *testing.T) {
	s := testServer()
	start := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	s.begin(start)
	ms := time.Millisecond
	assert.Equal(t, start.Add(5*ms), s.admit(start))
	assert.Equal(t, start.Add(10*ms), s.admit(start), "queued behind the first")
	assert.Equal(t, start.Add(15*ms), s.admit(start.Add(2*ms)))
	assert.Equal(t, start.Add(25*ms), s.admit(start.Add(20*ms)), "the queue was empty again")
	att, abandoned := s.tally()
	assert.Equal(t, []metastableAttempt{{0, 5 * ms}, {0, 10 * ms}, {2 * ms, 15 * ms}, {20 * ms, 25 * ms}}, att)
	assert.Zero(t, abandoned)
}

func TestMetastableServerDoesAbandonedWork(t *testing.T) {
	// The first attempt's client gives up after 1 ms. The server still does
	// its work: the second, sent then, is done at 10 ms, not 6.
	synctest.Test(t, func(t *testing.T) {
		s := testServer()
		s.begin(time.Now())
		o := s.origin()
		send := func(ctx context.Context) (time.Duration, error) {
			t0 := time.Now()
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://metastable.invalid/", nil)
			require.NoError(t, err)
			resp, err := o.RoundTrip(req)
			if err == nil {
				resp.Body.Close()
			}
			return time.Since(t0), err
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
		defer cancel()
		_, err := send(ctx)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		took, err := send(context.Background())
		require.NoError(t, err)
		assert.Equal(t, 9*time.Millisecond, took, "sent at 1 ms, queued behind the abandoned attempt")
		synctest.Wait()
		att, abandoned := s.tally()
		assert.Len(t, att, 2)
		assert.Equal(t, 1, abandoned)
	})
}

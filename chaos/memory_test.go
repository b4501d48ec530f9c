package chaos

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/httpretry/httpretry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// heapProbe keeps the highest HeapInuse seen by its samples.
type heapProbe struct {
	mu   sync.Mutex
	peak uint64
}

// sample reads the heap now; it stops the world, so callers ration it.
func (h *heapProbe) sample() {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	h.mu.Lock()
	h.peak = max(h.peak, ms.HeapInuse)
	h.mu.Unlock()
}

// heapInUse is HeapInuse after a full collection.
func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

// streamBody yields size bytes of payload without holding them, and samples
// the heap every MiB it yields, so a test can see whether anything
// downstream keeps the bytes it reads. It has no GetBody: httpretry can
// replay it only from its own record.
type streamBody struct {
	left  int64
	off   int
	probe *heapProbe
	since int64
}

func (b *streamBody) Read(p []byte) (int, error) {
	if b.left == 0 {
		return 0, io.EOF
	}
	n := copy(p[:min(int64(len(p)), b.left)], payload[b.off:])
	b.off = (b.off + n) % (len(payload) / 2)
	b.left -= int64(n)
	if b.since += int64(n); b.since >= 1<<20 {
		b.since = 0
		b.probe.sample()
	}
	return n, nil
}

func (b *streamBody) Close() error { return nil }

// TestMemoryBoundedByMaxReplayBytes streams large bodies without GetBody
// through httpretry to an upstream that reads them whole and answers 503,
// from several goroutines at once. Each body is sent once, whole, and the
// 503 is returned (it outgrew MaxReplayBytes); the heap never grows by more
// than MaxReplayBytes per request in flight plus a fixed slack, far less
// than the bodies themselves.
func TestMemoryBoundedByMaxReplayBytes(t *testing.T) {
	cases := []struct {
		name  string
		known bool // ContentLength set: httpretry knows at once it is too long
	}{
		{name: "known length", known: true},
		{name: "unknown length, chunked", known: false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { memoryBound(t, tc.known) })
	}
}

func memoryBound(t *testing.T, knownLength bool) {
	const (
		inFlight  = 4
		maxReplay = 256 << 10
		slack     = 16 << 20 // buffers, garbage not yet collected, the test's own
	)
	size := int64(32 << 20)
	if testing.Short() {
		size = 16 << 20
	}
	var received, calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		n, _ := io.Copy(io.Discard, r.Body)
		received.Add(n)
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	t.Cleanup(srv.Close)

	p := hostilePolicy()
	p.MaxRetries = 3
	p.MaxReplayBytes = maxReplay
	// The per-try timeout runs until the response headers, upload
	// included: 4 × 16 MiB under -race on 2 busy cores took longer than
	// hostilePolicy's 1 s. The 60 s context bounds each call.
	p.PerTryTimeout = 0
	var obs observed
	rt := newRetrying(t, newBase(), p, httpretry.WithObserver(obs.observe))

	probe := &heapProbe{}
	start := heapInUse()
	probe.peak = start
	var wg sync.WaitGroup
	for i := 0; i < inFlight; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			req, err := http.NewRequestWithContext(ctx, http.MethodPut, srv.URL, &streamBody{left: size, probe: probe})
			if !assert.NoError(t, err) {
				return
			}
			req.ContentLength = -1
			if knownLength {
				req.ContentLength = size
			}
			resp, err := rt.RoundTrip(req)
			if assert.NoError(t, err) {
				assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
				resp.Body.Close()
			}
		}()
	}
	wg.Wait()
	growth := int64(probe.peak) - int64(start)
	t.Logf("%d bodies of %d MiB in flight: heap in use %d MiB at start, peak %d MiB (growth %.1f MiB, bound %.1f MiB)",
		inFlight, size>>20, start>>20, probe.peak>>20, float64(growth)/(1<<20), float64(inFlight*maxReplay+slack)/(1<<20))
	require.EqualValues(t, inFlight, calls.Load(), "a body longer than MaxReplayBytes was resent")
	assert.EqualValues(t, inFlight*size, received.Load(), "the upstream did not get every byte once")
	assert.LessOrEqual(t, growth, int64(inFlight*maxReplay+slack), "heap grew beyond MaxReplayBytes per request in flight")
	for _, r := range obs.giveUps() {
		assert.Equal(t, httpretry.ReasonBodyNotReplayable, r)
	}
}

package bench

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// HerdWindow is the window of the herd scenario's busiest-share figure.
const HerdWindow = 10 * time.Millisecond

// herdBarrierTimeout bounds how long the upstream waits for the whole herd
// to arrive before it fails them anyway.
const herdBarrierTimeout = 10 * time.Second

// HerdConfig describes a herd.
type HerdConfig struct {
	Clients int
	// RetryAfter, when not empty, is sent as the Retry-After of the 503.
	RetryAfter string
	// Separate gives every client a base transport and an instance of the
	// library of its own, as a crowd of separate processes would have;
	// otherwise they share one, as the callers of one service do.
	Separate bool
}

// HerdResult is what a herd's second attempts looked like at the upstream.
type HerdResult struct {
	Library string
	Clients int
	// Resent is how many clients sent a second attempt.
	Resent int
	// Share is WindowShare of the second attempts over HerdWindow.
	Share float64
	// Waits run from the common failure to each second attempt's arrival,
	// in arrival order; Min, P50 and P99 summarise them.
	Waits         []time.Duration
	Min, P50, P99 time.Duration
}

// herdUpstream holds every first attempt until the whole herd has arrived,
// fails them all at one instant with 503, and timestamps second attempts.
type herdUpstream struct {
	clients    int
	retryAfter string
	perID      []atomic.Int32
	arrived    atomic.Int64

	once       sync.Once
	release    chan struct{}
	releasedAt atomic.Pointer[time.Time]
	timedOut   atomic.Bool

	mu      sync.Mutex
	seconds []time.Time
}

func newHerdUpstream(clients int, retryAfter string) *herdUpstream {
	return &herdUpstream{
		clients:    clients,
		retryAfter: retryAfter,
		perID:      make([]atomic.Int32, clients),
		release:    make(chan struct{}),
	}
}

func (h *herdUpstream) open() {
	h.once.Do(func() {
		now := time.Now()
		h.releasedAt.Store(&now)
		close(h.release)
	})
}

func (h *herdUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	at := time.Now()
	id, err := strconv.Atoi(r.Header.Get(RequestIDHeader))
	if err != nil || id < 0 || id >= h.clients {
		http.Error(w, "unknown request", http.StatusBadRequest)
		return
	}
	switch h.perID[id].Add(1) {
	case 1:
		if h.arrived.Add(1) == int64(h.clients) {
			h.open()
		}
		timer := time.NewTimer(herdBarrierTimeout)
		select {
		case <-h.release:
		case <-timer.C:
			h.timedOut.Store(true)
			h.open()
		}
		timer.Stop()
		if h.retryAfter != "" {
			w.Header().Set("Retry-After", h.retryAfter)
		}
		w.WriteHeader(http.StatusServiceUnavailable)
	case 2:
		h.mu.Lock()
		h.seconds = append(h.seconds, at)
		h.mu.Unlock()
		w.WriteHeader(http.StatusOK)
	default:
		w.WriteHeader(http.StatusOK)
	}
}

// RunHerd sends one GET from each of clients goroutines through a single
// lib-wrapped transport, the upstream fails them all at the same instant,
// and the second attempts are timed. Clients share one transport, so a
// library's shared state (httpretry's budget, failsafe's) sees the whole
// herd, as it would in one service.
func RunHerd(lib Library, clients int) (HerdResult, error) {
	return RunHerdWith(lib, HerdConfig{Clients: clients})
}

// RunHerdWith is RunHerd for the herd cfg describes.
func RunHerdWith(lib Library, cfg HerdConfig) (HerdResult, error) {
	clients := cfg.Clients
	if clients <= 0 {
		return HerdResult{}, errors.New("bench: a herd needs clients")
	}
	h := newHerdUpstream(clients, cfg.RetryAfter)
	srv, err := StartLoopback(h)
	if err != nil {
		return HerdResult{}, err
	}
	defer srv.Close()
	shared := 1
	if cfg.Separate {
		shared = clients
	}
	httpClients := make([]*http.Client, shared)
	for i := range httpClients {
		base := NewLoopbackBase()
		defer base.CloseIdleConnections()
		httpClients[i] = &http.Client{Transport: lib.Wrap(base)}
	}

	// Bounds every call: retryablehttp's first wait is 1 s, and nothing
	// else waits longer than its backoff ceilings.
	ctx, stop := context.WithTimeout(context.Background(), herdBarrierTimeout+20*time.Second)
	defer stop()
	gate := make(chan struct{})
	var wg sync.WaitGroup
	for id := range clients {
		wg.Go(func() {
			<-gate
			_, _ = getOnce(ctx, httpClients[id%shared], srv.URL, id)
		})
	}
	close(gate)
	wg.Wait()

	if h.timedOut.Load() {
		return HerdResult{}, fmt.Errorf("bench: only %d of %d first attempts arrived", h.arrived.Load(), clients)
	}
	releasedAt := h.releasedAt.Load()
	if releasedAt == nil {
		return HerdResult{}, errors.New("bench: the herd never reached the upstream")
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	waits := make([]time.Duration, len(h.seconds))
	for i, t := range h.seconds {
		waits[i] = t.Sub(*releasedAt)
	}
	return HerdResult{
		Library: lib.Name,
		Clients: clients,
		Resent:  len(waits),
		Share:   WindowShare(waits, HerdWindow),
		Waits:   waits,
		Min:     Percentile(waits, 0),
		P50:     Percentile(waits, 50),
		P99:     Percentile(waits, 99),
	}, nil
}

package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"runtime/metrics"
	"sync"
	"time"
)

// UploadSize is the streamed body of scenario 5.
const UploadSize = 64 << 20

// uploadChunk is what the producer writes into the pipe at a time; it is
// shared read-only, so producing the body allocates nothing.
var uploadChunk = make([]byte, 64<<10)

// heapSampleEvery is how often the heap is sampled during an upload.
const heapSampleEvery = 250 * time.Microsecond

// UploadResult is one streamed upload.
type UploadResult struct {
	Library string
	// PeakHeap is the largest heap (live and not yet collected objects)
	// seen during the upload, less the heap just before it.
	PeakHeap uint64
	// Allocated is every byte allocated during the upload.
	Allocated uint64
	// TTFB is from the call to the first body byte read by the server:
	// the median of the rounds, and the least.
	TTFB, TTFBMin time.Duration
	// Total is from the call to the response.
	Total    time.Duration
	Status   int
	Received int64
}

// uploadSink is a loopback upstream that times the first body byte of each
// request and counts what it reads.
type uploadSink struct {
	mu        sync.Mutex
	firstByte time.Time
	received  int64
}

func (s *uploadSink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var one [1]byte
	n, err := io.ReadFull(r.Body, one[:])
	at := time.Now()
	rest, err2 := io.Copy(io.Discard, r.Body)
	s.mu.Lock()
	if n > 0 && s.firstByte.IsZero() {
		s.firstByte = at
	}
	s.received += int64(n) + rest
	s.mu.Unlock()
	if (err != nil && !errors.Is(err, io.EOF)) || err2 != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	w.WriteHeader(http.StatusOK)
}

func (s *uploadSink) reset() (time.Time, int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	first, n := s.firstByte, s.received
	s.firstByte, s.received = time.Time{}, 0
	return first, n
}

// RunUpload streams size bytes from an io.Pipe as the body of a PUT
// (idempotent, so a library may want to replay it) with no GetBody and no
// length, through lib over loopback, rounds times; it reports the largest
// peak heap and the median and least TTFB. A small warm-up upload first
// opens the connection, so that the figures are the stream's alone. On a
// virtual machine a wake-up now and then adds about 2 ms to a first byte,
// with or without a middleware; the least shows what the path itself costs.
func RunUpload(lib Library, size int64, rounds int) (UploadResult, error) {
	sink := &uploadSink{}
	srv, err := StartLoopback(sink)
	if err != nil {
		return UploadResult{}, err
	}
	defer srv.Close()
	base := NewLoopbackBase()
	defer base.CloseIdleConnections()
	client := &http.Client{Transport: lib.Wrap(base)}

	if _, err := uploadOnce(client, srv.URL, sink, 1<<10); err != nil {
		return UploadResult{}, fmt.Errorf("bench: warm-up upload: %w", err)
	}
	var (
		out   = UploadResult{Library: lib.Name}
		ttfbs []time.Duration
	)
	for range max(rounds, 1) {
		r, err := uploadOnce(client, srv.URL, sink, size)
		if err != nil {
			return UploadResult{}, err
		}
		out.PeakHeap = max(out.PeakHeap, r.PeakHeap)
		out.Allocated = max(out.Allocated, r.Allocated)
		out.Total = max(out.Total, r.Total)
		out.Status, out.Received = r.Status, r.Received
		ttfbs = append(ttfbs, r.TTFB)
	}
	out.TTFB = Percentile(ttfbs, 50)
	out.TTFBMin = Percentile(ttfbs, 0)
	return out, nil
}

func uploadOnce(client *http.Client, url string, sink *uploadSink, size int64) (UploadResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pr, pw := io.Pipe()
	defer pr.Close() // unblocks the producer if the body was not consumed
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, url, pr)
	if err != nil {
		return UploadResult{}, err
	}
	sink.reset()

	runtime.GC()
	sampler := newHeapSampler()
	produced := make(chan struct{})
	go func() {
		defer close(produced)
		for left := size; left > 0; {
			n := min(int64(len(uploadChunk)), left)
			if _, err := pw.Write(uploadChunk[:n]); err != nil {
				return
			}
			left -= n
		}
		pw.Close()
	}()
	start := time.Now()
	resp, err := client.Do(req)
	end := time.Now()
	if err == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	peak, allocated := sampler.stop()
	pr.Close()
	<-produced
	if err != nil {
		return UploadResult{}, fmt.Errorf("bench: upload: %w", err)
	}
	first, received := sink.reset()
	res := UploadResult{
		PeakHeap:  peak,
		Allocated: allocated,
		Total:     end.Sub(start),
		Status:    resp.StatusCode,
		Received:  received,
	}
	if !first.IsZero() {
		res.TTFB = first.Sub(start)
	}
	if received != size {
		return res, fmt.Errorf("bench: upload: server read %d of %d bytes", received, size)
	}
	return res, nil
}

// heapSampler watches the heap from a goroutine until stopped. It reads
// runtime/metrics, which does not stop the world, so sampling often does
// not slow the upload it measures.
type heapSampler struct {
	done     chan struct{}
	finished chan struct{}
	base     uint64
	allocs0  uint64
	peak     uint64
}

const (
	metricHeapObjects = "/memory/classes/heap/objects:bytes"
	metricAllocBytes  = "/gc/heap/allocs:bytes"
)

func readHeap() (objects, allocated uint64) {
	s := []metrics.Sample{{Name: metricHeapObjects}, {Name: metricAllocBytes}}
	metrics.Read(s)
	return s[0].Value.Uint64(), s[1].Value.Uint64()
}

func newHeapSampler() *heapSampler {
	h := &heapSampler{done: make(chan struct{}), finished: make(chan struct{})}
	h.base, h.allocs0 = readHeap()
	h.peak = h.base
	go func() {
		defer close(h.finished)
		s := []metrics.Sample{{Name: metricHeapObjects}}
		t := time.NewTicker(heapSampleEvery)
		defer t.Stop()
		for {
			metrics.Read(s)
			h.peak = max(h.peak, s[0].Value.Uint64())
			select {
			case <-h.done:
				return
			case <-t.C:
			}
		}
	}()
	return h
}

// stop ends sampling and returns the peak above the starting heap and the
// bytes allocated since the start.
func (h *heapSampler) stop() (peak, allocated uint64) {
	close(h.done)
	<-h.finished
	objects, allocs := readHeap()
	h.peak = max(h.peak, objects)
	return h.peak - h.base, allocs - h.allocs0
}

package bench

import (
	"crypto/sha256"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/httpretry/httpretry"
	"github.com/httpretry/httpretry/internal/fakeorigin"
)

// The resume scenario (DESIGN point 21): GETs of one large object served
// with a strong ETag over loopback, the first response of each GET cut at
// a uniform random offset with probability Cut (the connection aborted
// after the bytes before the offset, flushed), or stalled there for Stall
// with probability StallShare, then sent on. The responses after the first
// (a resume, a download again from byte 0) come whole. Each GET's fault is
// drawn from its number and the seed, so every client meets the same ones.

// ResumeConfig is one run of the resume scenario.
type ResumeConfig struct {
	Size        int           // object bytes
	GETs        int           // downloads
	Concurrency int           // downloads at a time; 0: 1
	Cut         float64       // probability that a GET's first response is cut
	StallShare  float64       // probability that it stalls instead
	Stall       time.Duration // how long a stall lasts
	Seed        uint64
}

// ResumeResult is what one client made of a run.
type ResumeResult struct {
	GETs      int
	Intact    int           // bodies read to the end, hashing as the object
	Served    int64         // body bytes the server wrote
	Delivered int64         // body bytes of the GETs' final bodies, as the caller read them
	Requests  int64         // requests the server received
	Elapsed   time.Duration // sum of the GETs' times
}

// BytesRatio is bytes served ÷ bytes delivered.
func (r ResumeResult) BytesRatio() float64 { return float64(r.Served) / float64(max(r.Delivered, 1)) }

// RequestsPerGET is requests received ÷ GETs.
func (r ResumeResult) RequestsPerGET() float64 { return float64(r.Requests) / float64(r.GETs) }

// TimePerGET is the mean time of a GET, its body read included.
func (r ResumeResult) TimePerGET() time.Duration { return r.Elapsed / time.Duration(r.GETs) }

// ResumeClient is one way to download: a name for the table and a
// function that reads the body of one GET through base, returning the
// bytes of the final body read and whether it hashed as want.
type ResumeClient struct {
	Name string
	// New makes the client's transport over base; Download uses it.
	New func(base http.RoundTripper) http.RoundTripper
	// Restarts is how many times the caller downloads again from byte 0
	// when a body read fails (the hand-rolled fix); 0 for none.
	Restarts int
}

// ResumeClients are the contenders: a plain client, the hand-rolled
// restart from 0, httpretry with DefaultPolicy, httpretry with a budget
// sized for the fault rate, and go-retryablehttp and failsafe-go as they
// are, which never look at a body after RoundTrip.
func ResumeClients(idle time.Duration) []ResumeClient {
	return []ResumeClient{
		{Name: "plain", New: wrapBare},
		{Name: "restart from 0 (3 times)", New: wrapBare, Restarts: 3},
		{Name: "httpretry DefaultPolicy", New: func(base http.RoundTripper) http.RoundTripper {
			p := httpretry.DefaultPolicy()
			p.Resume.Idle = idle
			return httpretry.New(base, httpretry.WithPolicy(p))
		}},
		{Name: "httpretry, Budget.Percent 100", New: func(base http.RoundTripper) http.RoundTripper {
			p := httpretry.DefaultPolicy()
			p.Resume.Idle = idle
			p.Budget.Percent = 100
			return httpretry.New(base, httpretry.WithPolicy(p))
		}},
		{Name: NameRetryableHTTP, New: wrapRetryableHTTP},
		{Name: NameFailsafe, New: wrapFailsafe},
	}
}

// resumeOrigin serves the object and applies each GET's fault.
type resumeOrigin struct {
	cfg  ResumeConfig
	data []byte
	mu   sync.Mutex
	seen map[string]bool
}

// hdrGET carries the GET's number, copied into its resumes and restarts.
const hdrGET = "X-Bench-Get"

// answer serves the object, its first response to a GET cut or stalled
// as the GET's draw says.
func (o *resumeOrigin) answer(q *fakeorigin.Request) fakeorigin.Answer {
	a := fakeorigin.Answer{Header: http.Header{"Etag": {`"bench-1"`}}, Body: o.data, Content: true}
	id := q.Header.Get(hdrGET)
	o.mu.Lock()
	first := !o.seen[id]
	o.seen[id] = true
	o.mu.Unlock()
	if !first {
		return a
	}
	n, _ := strconv.Atoi(id)
	rng := rand.New(rand.NewPCG(o.cfg.Seed, uint64(n)))
	roll, at := rng.Float64(), int(rng.Int64N(int64(len(o.data))))
	switch {
	case roll < o.cfg.Cut:
		a.Break, a.Cut = fakeorigin.Abort, at
	case roll < o.cfg.Cut+o.cfg.StallShare && o.cfg.Stall > 0:
		a.Break, a.Cut, a.Resume = fakeorigin.Stall, at, o.cfg.Stall
	case roll < o.cfg.Cut+o.cfg.StallShare:
		a.Break, a.Cut = fakeorigin.Abort, at // a stall of no time is a cut
	}
	return a
}

// RunResume downloads cfg.GETs times with client and reports what came of
// it.
func RunResume(cfg ResumeConfig, client ResumeClient) (ResumeResult, error) {
	data := make([]byte, cfg.Size)
	r := rand.New(rand.NewPCG(cfg.Seed, 99))
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	want := sha256.Sum256(data)
	ro := &resumeOrigin{cfg: cfg, data: data, seen: map[string]bool{}}
	o := fakeorigin.New(ro.answer).Quiet()
	srv, err := StartLoopback(o)
	if err != nil {
		return ResumeResult{}, err
	}
	defer srv.Close()
	base := NewLoopbackBase()
	defer base.CloseIdleConnections()
	hc := &http.Client{Transport: client.New(base)}

	var (
		mu  sync.Mutex
		res = ResumeResult{GETs: cfg.GETs}
		wg  sync.WaitGroup
	)
	next := make(chan int)
	for range max(cfg.Concurrency, 1) {
		wg.Go(func() {
			for n := range next {
				start := time.Now()
				delivered, ok := download(hc, srv.URL, n, client.Restarts, want)
				took := time.Since(start)
				mu.Lock()
				res.Elapsed += took
				res.Delivered += delivered
				if ok {
					res.Intact++
				}
				mu.Unlock()
			}
		})
	}
	for n := range cfg.GETs {
		next <- n
	}
	close(next)
	wg.Wait()
	// A handler counts what it wrote once Write returns, which may be
	// after its client read the last byte: Close waits for every handler.
	base.CloseIdleConnections()
	srv.Close()
	res.Served, res.Requests = o.Served(), int64(o.Requests())
	return res, nil
}

// download is one GET read to its end, again from byte 0 up to restarts
// times when the read fails.
func download(hc *http.Client, url string, n, restarts int, want [32]byte) (int64, bool) {
	var got int64
	for range restarts + 1 {
		req, err := http.NewRequest(http.MethodGet, url, nil)
		if err != nil {
			return 0, false
		}
		req.Header.Set(hdrGET, strconv.Itoa(n))
		resp, err := hc.Do(req)
		if err != nil {
			continue
		}
		h := sha256.New()
		got, err = io.Copy(h, resp.Body)
		resp.Body.Close()
		if err == nil {
			return got, [32]byte(h.Sum(nil)) == want
		}
	}
	return got, false
}

// FormatResume is a result as the table's cells after the client's name.
func FormatResume(r ResumeResult) []string {
	return []string{fmt.Sprintf("%d/%d", r.Intact, r.GETs), fmt.Sprintf("%.3f×", r.BytesRatio()),
		fmt.Sprintf("%.2f", r.RequestsPerGET()), FormatDuration(r.TimePerGET())}
}

package httpretry

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"testing"
)

// stubTransport answers every request with a fresh 200 after reading and
// closing its body, as a real transport would, so that a body copy shows
// in B/op.
type stubTransport struct{}

func (stubTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		io.Copy(io.Discard, req.Body)
		req.Body.Close()
	}
	return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody, Request: req}, nil
}

// againstBare is the stub alone and httpretry over it, for one run to
// compare. The stub sits behind an *http.Transport, a plain base as a
// user's is, whose first attempts go unmarked (point 20).
func againstBare() []struct {
	name string
	rt   http.RoundTripper
} {
	stub := plainBase(stubTransport{})
	return []struct {
		name string
		rt   http.RoundTripper
	}{
		{"bare", stub},
		{"httpretry", New(stub)},
		{"httpretry-fallbacks", New(stub, WithPolicy(withFallbacks(DefaultPolicy(), "https://standby.example.com")))},
	}
}

// BenchmarkGET is the happy path as users call it, through an http.Client:
// a first attempt that succeeds. httpretry-opaque sends through a
// middleware over the same stub, an opaque base whose every attempt
// carries the nesting mark (point 20).
func BenchmarkGET(b *testing.B) {
	rows := againstBare()
	rows = append(rows, rows[1])
	rows[3].name, rows[3].rt = "httpretry-opaque", New(roundTripFunc(rows[0].rt.RoundTrip))
	for _, tc := range rows {
		b.Run(tc.name, func(b *testing.B) {
			c := &http.Client{Transport: tc.rt}
			req, _ := http.NewRequest(http.MethodGet, "http://api.example.com/items", nil)
			b.ReportAllocs()
			for b.Loop() {
				resp, err := c.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				resp.Body.Close()
			}
		})
	}
}

// BenchmarkPOST1MiBGetBody shows that a body with GetBody is not copied.
func BenchmarkPOST1MiBGetBody(b *testing.B) {
	payload := make([]byte, 1<<20)
	for _, tc := range againstBare() {
		b.Run(tc.name, func(b *testing.B) {
			c := &http.Client{Transport: tc.rt}
			b.ReportAllocs()
			b.SetBytes(int64(len(payload)))
			for b.Loop() {
				req, _ := http.NewRequest(http.MethodPut, "http://api.example.com/blob", bytes.NewReader(payload))
				resp, err := c.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				resp.Body.Close()
			}
		})
	}
}

// BenchmarkBudget is the per-request cost of the budget and of a resend's
// reservation.
func BenchmarkBudget(b *testing.B) {
	b.Run("serial", func(b *testing.B) {
		var bud Budget
		b.ReportAllocs()
		for b.Loop() {
			bud.Record()
			bud.TryReserve()
		}
	})
	b.Run("parallel", func(b *testing.B) {
		var bud Budget
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				bud.Record()
				bud.TryReserve()
			}
		})
	})
}

func withFallbacks(p Policy, origins ...string) Policy {
	p.Fallbacks = origins
	return p
}

// flakyStub answers every other request with a 503, starting with the
// first, so that each request through httpretry is one failure and one
// resend.
type flakyStub struct{ n int }

func (s *flakyStub) RoundTrip(req *http.Request) (*http.Response, error) {
	s.n++
	code := http.StatusOK
	if s.n%2 == 1 {
		code = http.StatusServiceUnavailable
	}
	return &http.Response{StatusCode: code, Body: http.NoBody, Request: req}, nil
}

type benchAttemptKey struct{}

// BenchmarkResend is the cost of one resend: a first attempt answered 503,
// a second 200, no wait, no budget; bare makes the same two calls, and
// bare-own-context makes them with the second request a clone carrying a
// context value of its own, the least a resend costs that tells the base
// which attempt it is (AttemptFromContext) and never hands it a request
// an earlier attempt may still be reading. The stub sits behind an
// *http.Transport, a plain base.
func BenchmarkResend(b *testing.B) {
	p := DefaultPolicy()
	p.Backoff = NoBackoff()
	p.Budget.Disabled = true
	req, _ := http.NewRequest(http.MethodGet, "http://api.example.com/items", nil)
	for _, ownContext := range []bool{false, true} {
		name := "bare-two-calls"
		if ownContext {
			name = "bare-own-context"
		}
		b.Run(name, func(b *testing.B) {
			c := &http.Client{Transport: plainBase(&flakyStub{})}
			b.ReportAllocs()
			for b.Loop() {
				for i := range 2 {
					r := req
					if ownContext && i == 1 {
						r = req.WithContext(context.WithValue(req.Context(), benchAttemptKey{}, 2))
					}
					resp, err := c.Do(r)
					if err != nil {
						b.Fatal(err)
					}
					resp.Body.Close()
				}
			}
		})
	}
	b.Run("httpretry", func(b *testing.B) {
		c := &http.Client{Transport: New(plainBase(&flakyStub{}), WithPolicy(p))}
		b.ReportAllocs()
		for b.Loop() {
			resp, err := c.Do(req)
			if err != nil || resp.StatusCode != http.StatusOK {
				b.Fatal(err, resp.StatusCode)
			}
			resp.Body.Close()
		}
	})
}

// BenchmarkPOSTUnkeyed is a POST without an idempotency key and with
// GetBody (as http.NewRequest sets it for a bytes.Reader), whose first
// attempt succeeds: it may be resent only if it never left, and finding
// that out must cost nothing when no PerTryTimeout can cut a dial short.
func BenchmarkPOSTUnkeyed(b *testing.B) {
	payload := []byte(`{"order":42}`)
	for _, tc := range againstBare() {
		b.Run(tc.name, func(b *testing.B) {
			c := &http.Client{Transport: tc.rt}
			b.ReportAllocs()
			for b.Loop() {
				req, _ := http.NewRequest(http.MethodPost, "http://api.example.com/orders", bytes.NewReader(payload))
				resp, err := c.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				resp.Body.Close()
			}
		})
	}
}

// kibStub answers every request with a fresh 200 of 1 KiB of known length.
type kibStub struct{}

var kib = bytes.Repeat([]byte("x"), 1024)

func (kibStub) RoundTrip(req *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: http.StatusOK, Body: io.NopCloser(bytes.NewReader(kib)),
		ContentLength: int64(len(kib)), Request: req}, nil
}

// BenchmarkGET1KiB is a 1 KiB answer read to its end by the caller, read
// whole first (point 24: Prefetch's default) or handed back as it comes
// (Prefetch −1): the cost of reading ahead, in one run (DESIGN asks at
// most 1.05×).
func BenchmarkGET1KiB(b *testing.B) {
	off := DefaultPolicy()
	off.Prefetch = -1
	stub := plainBase(kibStub{})
	for _, tc := range []struct {
		name string
		rt   http.RoundTripper
	}{
		{"bare", stub},
		{"prefetch-off", New(stub, WithPolicy(off))},
		{"prefetch", New(stub)},
	} {
		b.Run(tc.name, func(b *testing.B) {
			c := &http.Client{Transport: tc.rt}
			req, _ := http.NewRequest(http.MethodGet, "http://api.example.com/items", nil)
			b.ReportAllocs()
			for b.Loop() {
				resp, err := c.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
}

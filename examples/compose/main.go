// Command compose shows where httpretry stands in a chain of middlewares:
// logging outside it sees one request, a per-attempt layer inside it (here
// an auth header and an attempt counter) sees every attempt.
//
//	go run ./examples/compose
package main

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"sync/atomic"
	"time"

	"github.com/httpretry/httpretry"
)

// roundTripFunc adapts a function to http.RoundTripper.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// logging logs one line per request it sees.
func logging(log *slog.Logger, next http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		start := time.Now()
		resp, err := next.RoundTrip(r)
		status := 0
		if err == nil {
			status = resp.StatusCode
		}
		log.Info("request", "method", r.Method, "path", r.URL.Path, "status", status, "took", time.Since(start).Round(time.Millisecond))
		return resp, err
	})
}

// auth sets a fresh token on every attempt; it clones the request, as a
// RoundTripper must not modify the one it is given.
func auth(next http.RoundTripper) http.RoundTripper {
	var issued atomic.Int32
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", fmt.Sprintf("Bearer token-%d", issued.Add(1)))
		return next.RoundTrip(r)
	})
}

func main() {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Printf("  server: attempt %d with %q\n", n.Add(1), r.Header.Get("Authorization"))
		if n.Load() < 3 {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		io.WriteString(w, "ok")
	}))
	defer srv.Close()

	log := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	}))
	p := httpretry.DefaultPolicy()
	p.Backoff = httpretry.Fixed(20 * time.Millisecond)
	retry := httpretry.Middleware(httpretry.WithPolicy(p))

	// logging(retry(auth(base))): one log line, a token per attempt.
	client := &http.Client{Transport: logging(log, retry(auth(http.DefaultTransport)))}
	resp, err := client.Get(srv.URL + "/orders")
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	resp.Body.Close()
}

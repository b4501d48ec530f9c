// Command demo starts a flaky HTTP server on loopback, sends requests to it
// through httpretry, and prints what happened to each: every attempt, every
// wait, and why the transport stopped.
//
//	go run ./examples/demo
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/httpretry/httpretry"
)

// out is where the report goes; the test reads it.
var out io.Writer = os.Stdout

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func run() error {
	srv, err := startFlakyServer()
	if err != nil {
		return err
	}
	defer srv.close()

	fmt.Fprintf(out, "httpretry demo: flaky server on %s\n", srv.url)
	for _, s := range scenarios {
		fmt.Fprintf(out, "\n%s\n", s.title)
		s.run(srv)
	}
	return nil
}

// scenario is one story the demo tells.
type scenario struct {
	title string
	run   func(srv *flakyServer)
}

var scenarios []scenario // filled by init in scenarios.go

// log collects the transport's events for one scenario's report.
type log struct {
	mu     sync.Mutex
	events []httpretry.Event
}

func (l *log) observe(e httpretry.Event) {
	l.mu.Lock()
	l.events = append(l.events, e)
	l.mu.Unlock()
}

func (l *log) take() []httpretry.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	ev := l.events
	l.events = nil
	return ev
}

// client returns an http.Client through a fresh httpretry transport whose
// events go to l.
func client(p httpretry.Policy, l *log, opts ...httpretry.Option) (*http.Client, *httpretry.RetryTransport) {
	opts = append([]httpretry.Option{httpretry.WithPolicy(p), httpretry.WithObserver(l.observe)}, opts...)
	rt := httpretry.New(nil, opts...)
	return &http.Client{Transport: rt}, rt
}

// request is what one scenario sends; key, if set, goes in Idempotency-Key.
type request struct {
	method, path, key, body string
}

// send does one request and prints its story: each attempt, each wait, the
// end.
func send(c *http.Client, l *log, srv *flakyServer, r request) {
	before := srv.calls.Load()
	answer, elapsed := exchange(c, srv.url, r)
	fmt.Fprintf(out, "  %s %s%s\n", r.method, r.path, keyNote(r.key))
	for _, e := range l.take() {
		fmt.Fprintln(out, "    "+describe(e))
	}
	fmt.Fprintf(out, "    => %s  (server saw %d call(s), %v)\n", answer, srv.calls.Load()-before, elapsed.Round(time.Millisecond))
}

// exchange sends r to base and returns the answer in one line, or the
// error, and how long it took.
func exchange(c *http.Client, base string, r request) (string, time.Duration) {
	req, err := http.NewRequestWithContext(context.Background(), r.method, base+r.path, bodyReader(r.body))
	if err != nil {
		panic(err)
	}
	if r.key != "" {
		req.Header.Set("Idempotency-Key", r.key)
	}
	start := time.Now()
	resp, err := c.Do(req)
	elapsed := time.Since(start)
	if err != nil {
		return "error: " + err.Error(), elapsed
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return fmt.Sprintf("%d %s", resp.StatusCode, strings.TrimSpace(string(b))), elapsed
}

func keyNote(key string) string {
	if key == "" {
		return ""
	}
	return "  [Idempotency-Key: " + key + "]"
}

func bodyReader(body string) io.Reader {
	if body == "" {
		return nil
	}
	// A plain reader, without GetBody: httpretry records it for replay.
	return io.MultiReader(strings.NewReader(body))
}

// outcomeOf says in words how the attempt an event reports on ended.
func outcomeOf(e httpretry.Event) string {
	switch {
	case errors.Is(e.Err, httpretry.ErrAttemptTimeout):
		return "no response headers within PerTryTimeout"
	case errors.Is(e.Err, syscall.ECONNREFUSED):
		return "connection refused"
	case e.Err != nil:
		return "error: " + shorten(e.Err.Error())
	}
	return fmt.Sprintf("status %d", e.Status)
}

// describe renders one event as a line of the report.
func describe(e httpretry.Event) string {
	outcome := outcomeOf(e)
	switch e.Kind {
	case httpretry.EventRetry:
		return fmt.Sprintf("attempt %d: %s -> retry after %v", e.Attempt, outcome, e.Delay.Round(time.Millisecond))
	case httpretry.EventHedge:
		if e.Reason != 0 {
			return fmt.Sprintf("hedge: copy %d not sent (%s)", e.Attempt, e.Reason)
		}
		return fmt.Sprintf("hedge: attempt %d slow, copy %d sent", e.Attempt-1, e.Attempt)
	default:
		return fmt.Sprintf("attempt %d: %s -> gave up (%s)", e.Attempt, outcome, e.Reason)
	}
}

func shorten(s string) string {
	if len(s) > 90 {
		return s[:87] + "..."
	}
	return s
}

// flakyServer misbehaves on purpose; each path has its own story.
type flakyServer struct {
	url   string
	srv   *http.Server
	calls atomic.Int64 // every request received, all paths

	mu    sync.Mutex
	count map[string]int // requests per path
}

func startFlakyServer() (*flakyServer, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &flakyServer{url: "http://" + ln.Addr().String(), count: map[string]int{}}
	s.srv = &http.Server{Handler: s, ReadHeaderTimeout: 5 * time.Second}
	go s.srv.Serve(ln)
	return s, nil
}

func (s *flakyServer) close() { s.srv.Close() }

// nth counts a request on path and returns its 1-based number.
func (s *flakyServer) nth(path string) int {
	s.calls.Add(1)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.count[path]++
	return s.count[path]
}

func (s *flakyServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	n := s.nth(r.URL.Path)
	switch r.URL.Path {
	case "/flaky": // two 503s, then an answer
		if n <= 2 {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	case "/ratelimited": // 429 with Retry-After: 1, then an answer
		if n == 1 {
			w.Header().Set("Retry-After", "1")
			http.Error(w, "slow down", http.StatusTooManyRequests)
			return
		}
		fmt.Fprintln(w, "ok")
	case "/slow": // the first request hangs for a second
		if n == 1 {
			select {
			case <-time.After(time.Second):
			case <-r.Context().Done():
			}
		}
		fmt.Fprintln(w, "ok")
	case "/orders/a", "/orders/b": // each fails once, then takes the order
		if n == 1 {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintf(w, "order %q taken (key %q)\n", body, r.Header.Get("Idempotency-Key"))
	case "/down": // always failing
		http.Error(w, "down", http.StatusServiceUnavailable)
	case "/tail": // one request in ten stalls
		if n%10 == 3 {
			select {
			case <-time.After(500 * time.Millisecond):
			case <-r.Context().Done():
				return
			}
		}
		fmt.Fprintln(w, "ok")
	default:
		http.NotFound(w, r)
	}
}

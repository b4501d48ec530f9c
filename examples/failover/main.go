// Command failover shows fallback origins, one request at a time: a
// primary that refuses connections, a standby "eu" that answers 503 and a
// standby "us" that answers 200, all on loopback. The policy names eu as
// the fallback; httpretry.WithFallbacks gives one request a list of its
// own, and with no origins sends a request to its own origin only.
//
//	go run ./examples/failover
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/httpretry/httpretry"
)

func main() {
	primary, err := downAddress()
	if err != nil {
		fmt.Fprintln(os.Stderr, "failover:", err)
		os.Exit(1)
	}
	eu := httptest.NewServer(answer(http.StatusServiceUnavailable, "eu is overloaded"))
	defer eu.Close()
	us := httptest.NewServer(answer(http.StatusOK, "served by us"))
	defer us.Close()
	names := map[string]string{primary: "primary", eu.URL: "eu", us.URL: "us"}
	fmt.Printf("primary %s (down), eu %s (503), us %s (200)\n", primary, eu.URL, us.URL)

	p := httpretry.DefaultPolicy()
	p.MaxRetries = 1
	p.Backoff = httpretry.Fixed(10 * time.Millisecond)
	p.Fallbacks = []string{eu.URL}
	base := &calls{next: http.DefaultTransport}
	rt := httpretry.New(base, httpretry.WithPolicy(p), httpretry.WithObserver(func(e httpretry.Event) {
		// Origin is where the next attempt goes, or for a give-up where
		// the last one went.
		switch e.Kind {
		case httpretry.EventGiveUp:
			fmt.Printf("   attempt %d at %s: %s -> give up (%s)\n", e.Attempt, names[e.Origin], outcome(e), e.Reason)
		case httpretry.EventRetry:
			fmt.Printf("   attempt %d: %s -> resend to %s after %v\n", e.Attempt, outcome(e), names[e.Origin], e.Delay.Round(time.Millisecond))
		default:
			fmt.Printf("   attempt %d: %s -> %s to %s\n", e.Attempt, outcome(e), e.Kind, names[e.Origin])
		}
	}))
	defer rt.CloseIdleConnections()
	client := &http.Client{Transport: rt}
	fmt.Printf("policy: MaxRetries %d, Fallbacks [eu]: at most candidates + MaxRetries upstream calls\n", p.MaxRetries)

	ctx := context.Background()
	get := func(title string, ctx context.Context) {
		fmt.Println("\n" + title)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, primary+"/catalog", nil)
		resp, err := client.Do(req)
		if err != nil {
			fmt.Printf("   => error: %v\n", err)
		} else {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			fmt.Printf("   => %d %s\n", resp.StatusCode, strings.TrimSpace(string(b)))
		}
		var went []string
		for _, host := range base.take() {
			went = append(went, names["http://"+host])
		}
		fmt.Printf("   %d upstream call(s): %s\n", len(went), strings.Join(went, ", "))
	}

	get("1. The policy's fallbacks: primary, eu, then the one resend, from the primary again (2 + 1 calls);\n   an answer beats an error: eu's 503 comes back, not the refusal", ctx)
	get("2. WithFallbacks(ctx, eu, us): this request's own list (3 candidates, no resend needed)",
		httpretry.WithFallbacks(ctx, eu.URL, us.URL))
	get("3. WithFallbacks(ctx) and WithMaxRetries(ctx, 0): no fallback, no resend: sent exactly once",
		httpretry.WithMaxRetries(httpretry.WithFallbacks(ctx), 0))
}

// calls is the base transport: it records the host of every upstream call.
type calls struct {
	next  http.RoundTripper
	mu    sync.Mutex
	hosts []string
}

func (c *calls) RoundTrip(r *http.Request) (*http.Response, error) {
	c.mu.Lock()
	c.hosts = append(c.hosts, r.URL.Host)
	c.mu.Unlock()
	return c.next.RoundTrip(r)
}

// take returns the hosts called since the last take.
func (c *calls) take() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	h := c.hosts
	c.hosts = nil
	return h
}

// outcome is how an event's attempt ended, in a few words.
func outcome(e httpretry.Event) string {
	switch {
	case errors.Is(e.Err, syscall.ECONNREFUSED):
		return "connection refused"
	case e.Err != nil:
		return e.Err.Error()
	}
	return fmt.Sprint(e.Status)
}

// answer is a handler that answers every request with status and text.
func answer(status int, text string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(status)
		fmt.Fprintln(w, text)
	})
}

// downAddress is the URL of a loopback port nothing listens on, so that
// dials to it are refused.
func downAddress() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return "http://" + ln.Addr().String(), nil
}

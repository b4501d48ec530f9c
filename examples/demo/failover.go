package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/httpretry/httpretry"
)

// failover sends through a policy whose fallback is a standby: first with
// the primary down (refusing connections), so that a GET and an unkeyed
// POST, which never left, go to the standby; then with the primary back
// but overloaded, so that an unkeyed POST it answered with 503 stays
// there, since the primary may have acted on it.
func failover(*flakyServer) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(out, "  cannot listen:", err)
		return
	}
	primaryAddr := ln.Addr().String()
	ln.Close() // down: dials to it are refused
	standby, err := startOrigin("127.0.0.1:0", func(w http.ResponseWriter, r *http.Request, body []byte) {
		if r.Method == http.MethodGet {
			fmt.Fprintln(w, "report from the standby")
			return
		}
		fmt.Fprintf(w, "order %q taken by the standby\n", body)
	})
	if err != nil {
		fmt.Fprintln(out, "  cannot start the standby:", err)
		return
	}
	defer standby.close()

	p := httpretry.DefaultPolicy()
	p.Fallbacks = []string{standby.url}
	fmt.Fprintf(out, "  policy: MaxRetries %d, Fallbacks [standby]\n", p.MaxRetries)
	fmt.Fprintf(out, "  primary http://%s, standby %s\n", primaryAddr, standby.url)
	var l log
	c, rt := client(p, &l)
	defer rt.CloseIdleConnections()
	f := &failoverStory{primaryURL: "http://" + primaryAddr, standby: standby,
		names: map[string]string{"http://" + primaryAddr: "primary", standby.url: "standby"}}

	fmt.Fprintln(out, "  the primary is down (refuses connections):")
	fmt.Fprintln(out, "  even a POST without a key never left, so it may go on")
	f.send(c, &l, request{http.MethodGet, "/report", "", ""})
	f.send(c, &l, request{http.MethodPost, "/orders/c", "", "1 melon"})

	f.primary, err = startOrigin(primaryAddr, func(w http.ResponseWriter, _ *http.Request, _ []byte) {
		http.Error(w, "overloaded", http.StatusServiceUnavailable)
	})
	if err != nil {
		fmt.Fprintln(out, "  cannot bring the primary back:", err)
		return
	}
	defer f.primary.close()
	fmt.Fprintln(out, "  the primary is back, overloaded (503):")
	f.send(c, &l, request{http.MethodPost, "/orders/d", "", "2 figs"})
}

// failoverStory is the two origins of the failover scenario.
type failoverStory struct {
	primaryURL       string
	primary, standby *originServer     // primary is nil while it is down
	names            map[string]string // by Event.Origin
}

// send does one request and prints its story with the origin of every
// attempt: the request's own for the first, then the Origin each
// EventFallback or EventRetry announced.
func (f *failoverStory) send(c *http.Client, l *log, r request) {
	beforePrimary, beforeStandby := f.primary.count(), f.standby.count()
	answer, elapsed := exchange(c, f.primaryURL, r)
	fmt.Fprintf(out, "  %s %s%s\n", r.method, r.path, keyNote(r.key))
	at := f.primaryURL
	for _, e := range l.take() {
		fmt.Fprintln(out, "    "+f.describe(e, at))
		at = e.Origin
	}
	fmt.Fprintf(out, "    => %s  (primary saw %d call(s), standby %d; %v)\n", answer,
		f.primary.count()-beforePrimary, f.standby.count()-beforeStandby, elapsed.Round(time.Millisecond))
}

// describe renders one event of a request whose attempt went to at.
func (f *failoverStory) describe(e httpretry.Event, at string) string {
	o := f.names
	head := fmt.Sprintf("attempt %d to %s: %s", e.Attempt, o[at], outcomeOf(e))
	switch e.Kind {
	case httpretry.EventFallback:
		return fmt.Sprintf("%s -> fallback: attempt %d to %s, at once", head, e.Attempt+1, o[e.Origin])
	case httpretry.EventRetry:
		return fmt.Sprintf("%s -> retry: attempt %d to %s after %v", head, e.Attempt+1, o[e.Origin], e.Delay.Round(time.Millisecond))
	case httpretry.EventGiveUp:
		why := ""
		if e.Reason == httpretry.ReasonNotIdempotent {
			why = "\n      it reached the " + o[e.Origin] + ", which may have acted on it:" +
				"\n      without an Idempotency-Key it is not sent to another origin"
		}
		return fmt.Sprintf("%s -> gave up (%s)%s", head, e.Reason, why)
	}
	return head + " -> " + e.Kind.String()
}

// originServer answers every request with its handler and counts them.
type originServer struct {
	url   string
	srv   *http.Server
	calls atomic.Int64
}

// startOrigin serves handle on addr; the handler gets the request body
// read whole.
func startOrigin(addr string, handle func(http.ResponseWriter, *http.Request, []byte)) (*originServer, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	s := &originServer{url: "http://" + ln.Addr().String()}
	s.srv = &http.Server{ReadHeaderTimeout: 5 * time.Second,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			s.calls.Add(1)
			handle(w, r, body)
		})}
	go s.srv.Serve(ln)
	return s, nil
}

func (s *originServer) close() { s.srv.Close() }

// count is how many requests s received; 0 for a server that is down.
func (s *originServer) count() int64 {
	if s == nil {
		return 0
	}
	return s.calls.Load()
}

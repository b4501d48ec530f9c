package main

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/httpretry/httpretry"
)

// demote sends a GET every 40 ms through a policy whose fallback is a
// standby, while the primary is up, then down (refusing connections), then
// back, and prints where each request's first attempt went: after 5
// failures in a row the primary goes behind the standby, one request
// probes it each time its demotion ends, and the probe that gets an
// answer puts it first again.
func demote(*flakyServer) {
	primary, err := startOrigin("127.0.0.1:0", answerFrom("primary"))
	if err != nil {
		fmt.Fprintln(out, "  cannot start the primary:", err)
		return
	}
	primaryAddr := primary.url[len("http://"):]
	standby, err := startOrigin("127.0.0.1:0", answerFrom("standby"))
	if err != nil {
		primary.close()
		fmt.Fprintln(out, "  cannot start the standby:", err)
		return
	}
	defer standby.close()

	p := httpretry.DefaultPolicy()
	p.Fallbacks = []string{standby.url}
	// DefaultPolicy's After, with For and Max shortened from 1s and 30s so
	// that the story takes about two seconds.
	p.Demote = httpretry.Demote{After: 5, For: 200 * time.Millisecond, Max: 800 * time.Millisecond}
	fmt.Fprintf(out, "  policy: Fallbacks [standby], Demote{After: %d, For: %v, Max: %v}\n",
		p.Demote.After, p.Demote.For, p.Demote.Max)
	fmt.Fprintln(out, "  a GET every 40ms; its first attempt went to P primary, S standby")
	var l log
	base := &firstOrigin{base: http.DefaultTransport.(*http.Transport).Clone()}
	rt := httpretry.New(base, httpretry.WithPolicy(p), httpretry.WithObserver(l.observe))
	defer rt.CloseIdleConnections()
	s := &demoteStory{c: &http.Client{Transport: rt}, l: &l, base: base, url: primary.url,
		names: map[string]string{primary.url: "primary", standby.url: "standby"}}

	fmt.Fprintln(out, "  the primary is up:")
	s.run(4, func() bool { return false })

	primary.close()
	served := primary.count() // the server that comes back counts afresh
	fmt.Fprintln(out, "  the primary is down (refuses connections):")
	s.run(30, func() bool { return false })

	primary, err = startOrigin(primaryAddr, answerFrom("primary"))
	if err != nil {
		fmt.Fprintln(out, "  cannot bring the primary back:", err)
		return
	}
	defer primary.close()
	fmt.Fprintln(out, "  the primary is back:")
	// Until a probe restores it (its demotion is at most 800ms), then a few.
	s.run(100, func() bool { return s.restored })
	s.run(3, func() bool { return false })
	fmt.Fprintf(out, "    => %d requests, %d answered 200; primary saw %d call(s), standby %d\n",
		s.sent, s.ok, served+primary.count(), standby.count())
}

// answerFrom is a handler that says who answered.
func answerFrom(name string) func(http.ResponseWriter, *http.Request, []byte) {
	return func(w http.ResponseWriter, _ *http.Request, _ []byte) { fmt.Fprintln(w, "from the "+name) }
}

// demoteStory is the requests of the demotion scenario and what it
// prints of them: a letter per request for the origin of its first
// attempt, and a line per demotion or restore.
type demoteStory struct {
	c        *http.Client
	l        *log
	base     *firstOrigin
	url      string
	names    map[string]string // by Event.Origin
	sent, ok int
	restored bool
}

// run sends n GETs, one every 40 ms, or fewer if done says so after one.
func (s *demoteStory) run(n int, done func() bool) {
	var line strings.Builder
	flush := func(end string) {
		if line.Len() > 0 || end != "" {
			fmt.Fprintln(out, "    "+strings.TrimSpace(line.String()+end))
		}
		line.Reset()
	}
	for range n {
		answer, _ := exchange(s.c, s.url, request{http.MethodGet, "/", "", ""})
		s.sent++
		if strings.HasPrefix(answer, "200 ") {
			s.ok++
		}
		line.WriteString(" " + s.letter(s.base.take()))
		for _, e := range s.l.take() {
			switch e.Kind {
			case httpretry.EventDemote:
				flush(fmt.Sprintf(" -> demote %s for %v (%s)", s.names[e.Origin], e.Delay.Round(time.Millisecond), outcomeOf(e)))
			case httpretry.EventRestore:
				s.restored = true
				flush(fmt.Sprintf(" -> restore %s (its probe got status %d)", s.names[e.Origin], e.Status))
			}
		}
		if done() {
			break
		}
		time.Sleep(40 * time.Millisecond)
	}
	flush("")
}

// letter is P or S for the primary or standby at host.
func (s *demoteStory) letter(host string) string {
	if name := s.names["http://"+host]; name != "" {
		return strings.ToUpper(name[:1])
	}
	return "?"
}

// firstOrigin is a base transport that remembers which host the first
// attempt of the request under way went to. The demo sends one request
// at a time.
type firstOrigin struct {
	base  *http.Transport
	mu    sync.Mutex
	first string
}

func (f *firstOrigin) RoundTrip(r *http.Request) (*http.Response, error) {
	f.mu.Lock()
	if f.first == "" {
		f.first = r.URL.Host
	}
	f.mu.Unlock()
	return f.base.RoundTrip(r)
}

// CloseIdleConnections forwards to the base.
func (f *firstOrigin) CloseIdleConnections() { f.base.CloseIdleConnections() }

// take returns the host of the first attempt and forgets it.
func (f *firstOrigin) take() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	h := f.first
	f.first = ""
	return h
}

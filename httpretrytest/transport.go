package httpretrytest

import (
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/httpretry/httpretry"
)

// Transport is a base http.RoundTripper for httpretry.New that answers
// each attempt from a script and records every attempt it receives. Its
// zero value answers every attempt with a 200 and an empty body. It is
// safe for concurrent use, as hedged copies need.
type Transport struct {
	mu       sync.Mutex
	script   script
	mux      *http.ServeMux
	scripts  map[string]*script
	attempts []Attempt
}

var _ http.RoundTripper = (*Transport)(nil)

// Attempt is what a Transport received in one attempt.
type Attempt struct {
	// N is the attempt's number, as httpretry.AttemptFromContext reports
	// it: 1 for the first, 2 for the first resend, hedged copy or resume.
	N      int
	Method string
	URL    string // as URL.String writes it
	// Header is a copy of the request's header as it arrived: with the
	// Idempotency-Key, Range and If-Range httpretry added.
	Header http.Header
	Body   string // read to its end
	// At is when the attempt arrived: virtual time inside a synctest
	// bubble.
	At time.Time
}

// script is a sequence of answers given in order, its last one repeated.
type script struct {
	answers []Answer
	next    int
}

// take returns the script's next answer.
func (s *script) take() Answer {
	if len(s.answers) == 0 {
		return Answer{}
	}
	a := s.answers[min(s.next, len(s.answers)-1)]
	s.next++
	return a
}

// Script returns a Transport that answers its attempts with answers, in
// the order the attempts arrive, the last answer repeated for every
// attempt after it: Script(Status(503)) always answers 503.
func Script(answers ...Answer) *Transport {
	return &Transport{script: script{answers: answers}}
}

// On gives the attempts whose request matches pattern a script of their
// own, in http.ServeMux's pattern syntax: "GET /items/{id}",
// "api.example.com/", "POST backup.example.com/upload". An attempt
// follows the script of the pattern that ServeMux would pick for it, with
// the host its URL names, or else the Transport's own. On returns t, so
// that scripts chain; it panics, as ServeMux.Handle does, on a malformed
// pattern or one that conflicts with an earlier one.
func (t *Transport) On(pattern string, answers ...Answer) *Transport {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.mux == nil {
		t.mux = http.NewServeMux()
		t.scripts = make(map[string]*script)
	}
	t.mux.Handle(pattern, http.NotFoundHandler())
	t.scripts[pattern] = &script{answers: answers}
	return t
}

// RoundTrip records r as an attempt and answers it with the next answer
// of its script. It reads r's body to its end and closes it.
func (t *Transport) RoundTrip(r *http.Request) (*http.Response, error) {
	a := Attempt{
		N:      httpretry.AttemptFromContext(r.Context()),
		Method: r.Method,
		URL:    r.URL.String(),
		Header: r.Header.Clone(),
		At:     time.Now(),
	}
	if r.Body != nil {
		body, _ := io.ReadAll(r.Body)
		r.Body.Close()
		a.Body = string(body)
	}
	t.mu.Lock()
	t.attempts = append(t.attempts, a)
	answer := t.scriptFor(r).take()
	t.mu.Unlock()
	return answer.respond(r)
}

// scriptFor returns the script that answers r. The caller holds t.mu.
func (t *Transport) scriptFor(r *http.Request) *script {
	if t.mux == nil {
		return &t.script
	}
	// A client's request names its host in its URL; Host, when set, is
	// what goes on the wire, as a server's mux would see it.
	m := *r
	if m.Host == "" {
		m.Host = r.URL.Host
	}
	if _, pattern := t.mux.Handler(&m); pattern != "" {
		return t.scripts[pattern]
	}
	return &t.script
}

// Attempts returns a copy of the attempts received so far, headers
// included, in the order they arrived.
func (t *Transport) Attempts() []Attempt {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]Attempt, len(t.attempts))
	for i, a := range t.attempts {
		a.Header = a.Header.Clone()
		out[i] = a
	}
	return out
}

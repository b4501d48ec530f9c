package httpretry

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestResumeValidate(t *testing.T) {
	for _, tt := range []struct {
		r    Resume
		want string
	}{
		{Resume{}, ""},
		{Resume{Max: -1}, ""},
		{Resume{Max: 100, Idle: time.Second, MinBytes: 1}, ""},
		{Resume{Max: 101}, "Resume.Max 101 is above 100"},
		{Resume{Idle: -1}, "Resume.Idle -1ns is negative"},
		{Resume{MinBytes: -1}, "Resume.MinBytes -1 is negative"},
	} {
		p := DefaultPolicy()
		p.Resume = tt.r
		err := p.Validate()
		if tt.want == "" {
			assert.NoError(t, err, "%+v", tt.r)
			continue
		}
		assert.ErrorIs(t, err, ErrInvalidPolicy)
		assert.ErrorContains(t, err, tt.want)
	}
	assert.Equal(t, resumeRule{max: 3, minBytes: 64 << 10}, Resume{}.resolve(), "zero means DefaultPolicy's")
	assert.Equal(t, resumeRule{max: 0, minBytes: 64 << 10}, Resume{Max: -5}.resolve(), "negative: never")
	assert.Equal(t, resumeRule{max: 7, idle: time.Second, minBytes: 9}, Resume{Max: 7, Idle: time.Second, MinBytes: 9}.resolve())
}

// "resume" in JSON: written and read back, a field left out of a host's
// entry taken from the default's, and each bad value named by its path.
func TestResumeJSON(t *testing.T) {
	assert.Equal(t, `{"max":5,"idle":"300ms","minBytes":1024}`,
		nestedJSON(t, Policy{Resume: Resume{Max: 5, Idle: 300 * time.Millisecond, MinBytes: 1024}}, "resume"))
	var p Policy
	require.NoError(t, json.Unmarshal([]byte(`{"resume": {"idle": "1s"}}`), &p))
	assert.Equal(t, Resume{Max: 3, Idle: time.Second}, p.Resume, "a field left out is DefaultPolicy's")

	cfg, err := ParseConfig([]byte(`{
		"default": {"resume": {"max": 5, "idle": "300ms", "minBytes": 1024}},
		"hosts": {
			"a.example": {"resume": {"idle": "1s"}},
			"b.example": {"resume": {"max": -1}},
			"c.example": {"maxRetries": 1}
		}}`))
	require.NoError(t, err)
	assert.Equal(t, Resume{Max: 5, Idle: 300 * time.Millisecond, MinBytes: 1024}, cfg.Default.Resume)
	assert.Equal(t, Resume{Max: 5, Idle: time.Second, MinBytes: 1024}, cfg.Hosts["a.example"].Resume, "merged field by field")
	assert.Equal(t, Resume{Max: -1, Idle: 300 * time.Millisecond, MinBytes: 1024}, cfg.Hosts["b.example"].Resume)
	assert.Equal(t, cfg.Default.Resume, cfg.Hosts["c.example"].Resume)

	_, err = ParseConfig([]byte(`{"default": {"resume": {"max": 101, "idle": "-1s", "minBytes": "big", "every": 1}},
		"hosts": {"a": {"resume": {"minBytes": -2}}}}`))
	require.Error(t, err)
	assert.ErrorContains(t, err, `default.resume.minBytes: "big": want an integer`)
	assert.ErrorContains(t, err, `default.resume.every: unknown field`)
	assert.ErrorContains(t, err, `default.resume.max: 101 is above 100`)
	assert.ErrorContains(t, err, `default.resume.idle: -1s is negative`)
	assert.ErrorContains(t, err, `hosts["a"].resume.minBytes: -2 is negative`)

	// A Go literal means what its JSON means.
	var fromJSON Policy
	require.NoError(t, json.Unmarshal([]byte(`{"maxRetries": 2}`), &fromJSON))
	assert.Equal(t, resolvePolicy(Policy{MaxRetries: 2}).resume, resolvePolicy(fromJSON).resume)
}

// A body a fallback delivered resumes at that fallback: a validator
// belongs to one origin.
func TestResumeAtTheOriginThatServed(t *testing.T) {
	primary := newUpstream(t, always(http.StatusServiceUnavailable))
	o := newObject(200_000, cuts(50_000))
	fb := o.serve(t)
	rec := &recorder{}
	p := resumePolicy()
	p.Fallbacks = []string{fb.URL}
	rt := New(nil, WithPolicy(p), WithObserver(rec.observe))
	defer rt.CloseIdleConnections()
	resp := getObject(t, rt, primary.URL)
	got, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	resp.Body.Close()
	assert.True(t, bytes.Equal(o.data, got))
	assert.Equal(t, int64(1), primary.calls.Load())
	assert.Equal(t, []asked{{"", ""}, {"bytes=50000-", `"v1"`}}, o.asked())
	evs := rec.all()
	require.Equal(t, EventResume, evs[len(evs)-1].Kind)
	assert.Equal(t, fb.URL, evs[len(evs)-1].Origin)
	assert.Equal(t, 2, evs[len(evs)-1].Attempt)
}

// Read and Close from two goroutines, at every moment of a resume: the
// race detector and goleak watch.
func TestResumeReadCloseRace(t *testing.T) {
	o := newObject(300_000, func(n int) fault { return fault{cut: 20_000} })
	srv := o.serve(t)
	p := resumePolicy()
	p.Resume.Max = 20
	p.Resume.Idle = time.Second
	rt := New(nil, WithPolicy(p))
	defer rt.CloseIdleConnections()
	for i := range 20 {
		resp := getObject(t, rt, srv.URL)
		var wg sync.WaitGroup
		wg.Go(func() { io.Copy(io.Discard, resp.Body) })
		time.Sleep(time.Duration(i) * 200 * time.Microsecond)
		resp.Body.Close()
		wg.Wait()
		_, err := resp.Body.Read(make([]byte, 1))
		assert.Error(t, err, "a Read after Close fails")
	}
}

// A transport error on a resume request that is permanent ends the body.
func TestResumeRequestPermanentError(t *testing.T) {
	o := newObject(100_000, cuts(1000))
	calls := 0
	base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		calls++
		if calls == 2 {
			return nil, &urlSchemeError{}
		}
		return o.memoryBase().RoundTrip(r)
	})
	rec := &recorder{}
	p := resumePolicy()
	p.RetryIf = func(resp *http.Response, err error) bool {
		return err != nil && !strings.Contains(err.Error(), "scheme")
	}
	rt := New(base, WithPolicy(p), WithObserver(rec.observe))
	resp := getObject(t, rt, "http://o.example/x")
	_, err := io.ReadAll(resp.Body)
	assert.ErrorIs(t, err, io.ErrUnexpectedEOF)
	assert.Equal(t, ReasonNotRetryable, rec.giveUp(t))
	assert.Equal(t, 2, calls)
}

type urlSchemeError struct{}

func (*urlSchemeError) Error() string { return "unsupported protocol scheme" }

// A body delivered by the attempt loop rather than the fast path resumes
// the same way: under hedging, PerTryTimeout and Deadline, and after a
// resend; the resume requests are numbered after every attempt sent.
func TestResumeComposes(t *testing.T) {
	for _, tt := range []struct {
		name   string
		edit   func(*Policy)
		script func(n int) fault
		first  int // the attempt whose body broke
	}{
		{"hedged", func(p *Policy) { p.Hedge = Hedge{After: time.Hour, Max: 1} }, cuts(60_000), 1},
		{"timed", func(p *Policy) { p.PerTryTimeout, p.Deadline = time.Minute, time.Hour }, cuts(60_000), 1},
		{"after a resend", nil, func(n int) fault {
			switch n {
			case 1:
				return fault{status: http.StatusServiceUnavailable}
			case 2:
				return fault{cut: 60_000}
			}
			return fault{}
		}, 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o := newObject(200_000, tt.script)
			srv := o.serve(t)
			rec := &recorder{}
			p := resumePolicy()
			if tt.edit != nil {
				tt.edit(&p)
			}
			var attempts []int
			var mu sync.Mutex
			base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
				mu.Lock()
				attempts = append(attempts, AttemptFromContext(r.Context()))
				mu.Unlock()
				return http.DefaultTransport.RoundTrip(r)
			})
			rt := New(base, WithPolicy(p), WithObserver(rec.observe))
			t.Cleanup(http.DefaultTransport.(*http.Transport).CloseIdleConnections)
			resp := getObject(t, rt, srv.URL)
			got, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			resp.Body.Close()
			assert.True(t, bytes.Equal(o.data, got))
			evs := rec.all()
			require.Equal(t, EventResume, evs[len(evs)-1].Kind)
			assert.Equal(t, tt.first, evs[len(evs)-1].Attempt)
			assert.Equal(t, int64(60_000), evs[len(evs)-1].Offset)
			mu.Lock()
			assert.Equal(t, tt.first+1, attempts[len(attempts)-1], "AttemptFromContext of the resume")
			mu.Unlock()
		})
	}
}

package httpretry

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Secrets that the logger must never write: one in each place a request
// carries credentials.
const (
	secretQuery    = "s3cr3t-query"
	secretPassword = "s3cr3t-pass"
	secretUser     = "s3cr3t-user"
	secretFragment = "s3cr3t-frag"
	secretHeader   = "s3cr3t-header"
)

// secretRequest is a GET to base+"/items" with a secret in the query, the
// user info, the fragment and the Authorization header.
func secretRequest(t *testing.T, base string) *http.Request {
	t.Helper()
	u, err := url.Parse(base + "/items?token=" + secretQuery + "#" + secretFragment)
	require.NoError(t, err)
	u.User = url.UserPassword(secretUser, secretPassword)
	req, err := http.NewRequest(http.MethodGet, u.String(), nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+secretHeader)
	return req
}

// jsonLog is a JSON slog handler at Debug into a buffer.
func jsonLog() (*slog.Logger, *bytes.Buffer) {
	var buf bytes.Buffer
	return slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})), &buf
}

// records decodes the buffer's JSON lines.
func records(t *testing.T, buf *bytes.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for line := range strings.SplitSeq(strings.TrimSpace(buf.String()), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &m), line)
		out = append(out, m)
	}
	return out
}

func assertNoSecret(t *testing.T, log string) {
	t.Helper()
	for _, s := range []string{secretQuery, secretPassword, secretUser, secretFragment, secretHeader, "token="} {
		assert.NotContains(t, log, s)
	}
}

func TestWithLoggerRetriesAndGiveUp(t *testing.T) {
	u := newUpstream(t, always(http.StatusServiceUnavailable))
	l, buf := jsonLog()
	p := fastPolicy(2)
	p.Backoff = Fixed(time.Millisecond)
	client := &http.Client{Transport: New(nil, WithPolicy(p), WithLogger(l))}

	resp, err := client.Do(secretRequest(t, u.URL))
	require.NoError(t, err)
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	readAll(t, resp)
	require.EqualValues(t, 3, u.calls.Load())

	assertNoSecret(t, buf.String())
	recs := records(t, buf)
	require.Len(t, recs, 3, buf.String())
	wantURL := u.URL + "/items"
	for i, r := range recs[:2] {
		assert.Equal(t, "DEBUG", r["level"])
		assert.Equal(t, "httpretry retry", r["msg"])
		assert.Equal(t, "GET", r["method"])
		assert.Equal(t, wantURL, r["url"])
		assert.EqualValues(t, i+1, r["attempt"])
		assert.EqualValues(t, 503, r["status"])
		assert.EqualValues(t, time.Millisecond, r["delay"])
		assert.Equal(t, u.URL, r["origin"])
		assert.NotContains(t, r, "error")
		assert.NotContains(t, r, "reason")
	}
	g := recs[2]
	assert.Equal(t, "WARN", g["level"])
	assert.Equal(t, "httpretry give-up", g["msg"])
	assert.Equal(t, wantURL, g["url"])
	assert.EqualValues(t, 3, g["attempt"])
	assert.EqualValues(t, 503, g["status"])
	assert.Equal(t, "exhausted", g["reason"])
	assert.Equal(t, u.URL, g["origin"])
	assert.NotContains(t, g, "delay")
}

// TestWithLoggerRedactsURLError: an http.Client below httpretry fails with
// a *url.Error that quotes the URL, query included; the logged error keeps
// the cause and loses the query.
func TestWithLoggerRedactsURLError(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	ln.Close() // nothing listens: every dial is refused

	l, buf := jsonLog()
	inner := &http.Client{Transport: &http.Transport{}}
	base := roundTripFunc(func(r *http.Request) (*http.Response, error) { return inner.Do(r) })
	rt := New(base, WithPolicy(fastPolicy(1)), WithLogger(l))

	resp, err := rt.RoundTrip(secretRequest(t, "http://"+addr))
	require.Error(t, err)
	require.Nil(t, resp)
	var ue *url.Error
	require.ErrorAs(t, err, &ue)
	require.Contains(t, ue.URL, secretQuery, "the error the caller gets is not the logger's to change")

	assertNoSecret(t, buf.String())
	recs := records(t, buf)
	require.Len(t, recs, 2, buf.String())
	assert.Equal(t, "httpretry retry", recs[0]["msg"])
	assert.Equal(t, "httpretry give-up", recs[1]["msg"])
	assert.Equal(t, "exhausted", recs[1]["reason"])
	for _, r := range recs {
		msg, _ := r["error"].(string)
		assert.Contains(t, msg, fmt.Sprintf("Get %q", "http://"+addr+"/items"))
		assert.Contains(t, msg, "connection refused")
		assert.NotContains(t, r, "status")
	}
}

// A middleware inside httpretry that quotes the attempt's URL, in any of
// the forms a Go program prints it, gets no secret logged, on the request's
// own origin and on every fallback alike (point 19).
func TestWithLoggerRedactsEveryAttemptsURL(t *testing.T) {
	quoting := []struct {
		name  string
		quote func(*http.Request) string
	}{
		{"String", func(r *http.Request) string { return r.URL.String() }},
		{"quoted", func(r *http.Request) string { return fmt.Sprintf("%q", r.URL.String()) }},
		{"Redacted", func(r *http.Request) string { return r.URL.Redacted() }},
		{"RequestURI", func(r *http.Request) string { return r.URL.RequestURI() }},
	}
	for _, q := range quoting {
		t.Run(q.name, func(t *testing.T) {
			var refused [2]string
			for i := range refused {
				ln, err := net.Listen("tcp", "127.0.0.1:0")
				require.NoError(t, err)
				refused[i] = ln.Addr().String()
				ln.Close()
			}
			up := newUpstream(t, always(http.StatusServiceUnavailable))

			l, buf := jsonLog()
			base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
				resp, err := http.DefaultTransport.RoundTrip(r)
				if err != nil {
					return nil, fmt.Errorf("middleware: calling %s: %w", q.quote(r), err)
				}
				return resp, nil
			})
			p := fastPolicy(1)
			p.Fallbacks = []string{"http://" + refused[1], up.URL}
			rt := New(base, WithPolicy(p), WithLogger(l))
			resp, err := rt.RoundTrip(secretRequest(t, "http://"+refused[0]))
			require.NoError(t, err)
			readAll(t, resp)

			assertNoSecret(t, buf.String())
			recs := records(t, buf)
			require.NotEmpty(t, recs)
			var fromFallback int
			for _, r := range recs {
				if msg, ok := r["error"].(string); ok {
					assert.Contains(t, msg, "connection refused")
					assert.Contains(t, msg, "middleware: calling ")
					if strings.Contains(msg, refused[1]) || q.name == "RequestURI" {
						fromFallback++
					}
				}
			}
			assert.Positive(t, fromFallback, "an error from the fallback is logged: %s", buf.String())
		})
	}
}

func TestRedactError(t *testing.T) {
	full := "https://" + secretUser + ":" + secretPassword + "@api.example.com/v1/pay?token=" + secretQuery + "#" + secretFragment
	req, err := http.NewRequest(http.MethodPost, full, nil)
	require.NoError(t, err)
	ue := &url.Error{Op: "Post", URL: full, Err: errors.New("EOF")}
	stripped := &url.Error{Op: "Post", URL: "https://" + secretUser + ":***@api.example.com/v1/pay?token=" + secretQuery, Err: errors.New("EOF")}
	const want = `Post "https://api.example.com/v1/pay": EOF`
	tests := []struct {
		name string
		err  error
		req  *http.Request
		want string
	}{
		{"url.Error", ue, nil, want},
		{"password stripped by http.Client", stripped, nil, want},
		{"wrapped", fmt.Errorf("httpretry: attempt: %w", ue), nil, "httpretry: attempt: " + want},
		{"joined", errors.Join(errors.New("first"), ue), nil, "first\n" + want},
		{"URL printed by a wrapper", fmt.Errorf("calling %s: %w", full, errors.New("refused")), req,
			"calling https://api.example.com/v1/pay: refused"},
		{"URL printed redacted by a wrapper", fmt.Errorf("calling %s: refused", req.URL.Redacted()), req,
			"calling https://api.example.com/v1/pay: refused"},
		{"unparsable URL", &url.Error{Op: "Get", URL: "http://[::1%zz/?token=" + secretQuery, Err: errors.New("bad")}, nil,
			`Get "[unparsable URL]": bad`},
		{"no URL", errors.New("connection reset"), req, "connection reset"},
		{"a fallback's URL in running text", errors.New("proxy http://u:" + secretPassword + "@b.example:8080/v1/pay?token=" + secretQuery + ": refused"), req,
			"proxy http://b.example:8080/v1/pay: refused"},
		{"two URLs", errors.New("from https://a.example/?token=" + secretQuery + " to ws://b.example/#" + secretFragment), nil,
			"from https://a.example/ to ws://b.example/"},
		{"no scheme before the separator", errors.New("odd ://x"), nil, "odd ://x"},
		{"request URI", fmt.Errorf("GET %s failed", req.URL.RequestURI()), req, "GET /v1/pay failed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := redactError(tt.err, tt.req)
			assert.Equal(t, tt.want, got)
			assertNoSecret(t, got)
		})
	}
}

// TestLogEventKinds covers the kinds a plain retry loop does not emit, and
// the origin attribute.
func TestLogEventKinds(t *testing.T) {
	req, err := http.NewRequest(http.MethodPut, "https://a.example/x/y?k="+secretQuery, nil)
	require.NoError(t, err)
	tests := []struct {
		name  string
		event Event
		want  map[string]any
	}{
		{"fallback", Event{Kind: EventFallback, Request: req, Attempt: 1, Status: 502, Origin: "https://b.example"},
			map[string]any{"level": "DEBUG", "msg": "httpretry fallback", "method": "PUT", "url": "https://a.example/x/y",
				"attempt": 1.0, "status": 502.0, "origin": "https://b.example"}},
		{"hedge sent", Event{Kind: EventHedge, Request: req, Attempt: 2, Origin: "https://a.example", Delay: 12 * time.Millisecond},
			map[string]any{"level": "DEBUG", "msg": "httpretry hedge", "method": "PUT", "url": "https://a.example/x/y",
				"attempt": 2.0, "origin": "https://a.example", "delay": float64(12 * time.Millisecond)}},
		{"demote", Event{Kind: EventDemote, Request: req, Attempt: 1, Status: 503, Origin: "https://a.example", Delay: time.Second},
			map[string]any{"level": "WARN", "msg": "httpretry demote", "method": "PUT", "url": "https://a.example/x/y",
				"attempt": 1.0, "status": 503.0, "origin": "https://a.example", "delay": float64(time.Second)}},
		{"restore", Event{Kind: EventRestore, Request: req, Attempt: 4, Status: 200, Origin: "https://b.example"},
			map[string]any{"level": "INFO", "msg": "httpretry restore", "method": "PUT", "url": "https://a.example/x/y",
				"attempt": 4.0, "status": 200.0, "origin": "https://b.example"}},
		{"hedge refused", Event{Kind: EventHedge, Request: req, Attempt: 2, Reason: ReasonBudget},
			map[string]any{"level": "DEBUG", "msg": "httpretry hedge refused", "method": "PUT", "url": "https://a.example/x/y",
				"attempt": 2.0, "reason": "budget"}},
		{"hedge refused by the copy cap", Event{Kind: EventHedge, Request: req, Attempt: 2, Reason: ReasonCopyCap, Origin: "https://a.example"},
			map[string]any{"level": "DEBUG", "msg": "httpretry hedge refused", "method": "PUT", "url": "https://a.example/x/y",
				"attempt": 2.0, "reason": "copy-cap", "origin": "https://a.example"}},
		{"give-up on a deadline", Event{Kind: EventGiveUp, Request: req, Attempt: 3, Err: context.DeadlineExceeded, Reason: ReasonDeadline},
			map[string]any{"level": "WARN", "msg": "httpretry give-up", "method": "PUT", "url": "https://a.example/x/y",
				"attempt": 3.0, "error": "context deadline exceeded", "reason": "deadline"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, buf := jsonLog()
			logEvent(l, tt.event)
			recs := records(t, buf)
			require.Len(t, recs, 1)
			delete(recs[0], "time")
			assert.Equal(t, tt.want, recs[0])
		})
	}
}

// countingHandler counts the records it is asked to handle.
type countingHandler struct {
	level   slog.Level
	handled int
}

func (h *countingHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= h.level }
func (h *countingHandler) Handle(context.Context, slog.Record) error    { h.handled++; return nil }
func (h *countingHandler) WithAttrs([]slog.Attr) slog.Handler           { return h }
func (h *countingHandler) WithGroup(string) slog.Handler                { return h }

func TestWithLoggerLevels(t *testing.T) {
	u := newUpstream(t, always(http.StatusServiceUnavailable))
	h := &countingHandler{level: slog.LevelInfo}
	rt := New(nil, WithPolicy(fastPolicy(2)), WithLogger(slog.New(h)))
	resp, err := rt.RoundTrip(secretRequest(t, u.URL))
	require.NoError(t, err)
	readAll(t, resp)
	assert.Equal(t, 1, h.handled, "at Info, the two retries are not logged and the give-up is")
}

func TestWithLoggerDisabledDebugDoesNotAllocate(t *testing.T) {
	req, err := http.NewRequest(http.MethodGet, "http://a.example/x", nil)
	require.NoError(t, err)
	h := &countingHandler{level: slog.LevelInfo}
	l := slog.New(h)
	e := Event{Kind: EventRetry, Request: req, Attempt: 1, Status: 503, Delay: time.Second}
	allocs := testing.AllocsPerRun(100, func() { logEvent(l, e) })
	assert.Zero(t, allocs)
	assert.Zero(t, h.handled)
}

// A retried request costs the same allocations with a logger whose level
// is disabled as with none: no event is built for nobody (point 19).
func TestWithLoggerDisabledLevelAllocatesNothingOnARetry(t *testing.T) {
	var n int
	base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		n++
		if n%2 == 1 {
			return &http.Response{StatusCode: 503, Body: http.NoBody, Request: r}, nil
		}
		return &http.Response{StatusCode: 200, Body: http.NoBody, Request: r}, nil
	})
	p := fastPolicy(1)
	p.Fallbacks = []string{"http://b.example"}
	req, err := http.NewRequest(http.MethodGet, "http://a.example/x", nil)
	require.NoError(t, err)
	h := &countingHandler{level: slog.LevelError}
	measure := func(opts ...Option) float64 {
		rt := New(base, append([]Option{WithPolicy(p)}, opts...)...)
		return testing.AllocsPerRun(100, func() {
			resp, err := rt.RoundTrip(req)
			require.NoError(t, err)
			require.Equal(t, 200, resp.StatusCode)
		})
	}
	without := measure()
	assert.Equal(t, without, measure(WithLogger(slog.New(h))))
	assert.Zero(t, h.handled)
}

func TestWithLoggerNilAndAbsent(t *testing.T) {
	assert.Empty(t, New(nil, WithLogger(nil)).observers, "a nil logger adds no observer")

	// Without WithLogger, nothing reaches slog's default logger.
	var buf bytes.Buffer
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})))
	t.Cleanup(func() { slog.SetDefault(old) })

	u := newUpstream(t, always(http.StatusServiceUnavailable))
	resp, err := New(nil, WithPolicy(fastPolicy(2))).RoundTrip(secretRequest(t, u.URL))
	require.NoError(t, err)
	readAll(t, resp)
	require.EqualValues(t, 3, u.calls.Load())
	assert.Empty(t, buf.String())
}

func TestWithLoggerFallback(t *testing.T) {
	primary := newUpstream(t, always(http.StatusServiceUnavailable))
	backup := newUpstream(t, failFirst(0))
	l, buf := jsonLog()
	p := fastPolicy(0)
	p.Fallbacks = []string{backup.URL}
	resp, err := New(nil, WithPolicy(p), WithLogger(l)).RoundTrip(secretRequest(t, primary.URL))
	require.NoError(t, err)
	assert.Equal(t, "ok", readAll(t, resp))

	assertNoSecret(t, buf.String())
	recs := records(t, buf)
	require.Len(t, recs, 1, buf.String())
	delete(recs[0], "time")
	assert.Equal(t, map[string]any{"level": "DEBUG", "msg": "httpretry fallback", "method": "GET",
		"url": primary.URL + "/items", "attempt": 1.0, "status": 503.0, "origin": backup.URL}, recs[0])
}

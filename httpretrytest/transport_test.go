package httpretrytest_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/httpretry/httpretry"
	"github.com/httpretry/httpretry/httpretrytest"
)

// send sends one request straight to rt, with header lines "Key: value".
func send(t *testing.T, rt http.RoundTripper, method, url string, header ...string) (*http.Response, error) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	require.NoError(t, err)
	for _, h := range header {
		k, v, _ := strings.Cut(h, ": ")
		req.Header.Set(k, v)
	}
	return rt.RoundTrip(req)
}

// read returns the response's body as far as it reads, and the error
// that ended it, io.EOF excluded.
func read(t *testing.T, resp *http.Response) (string, error) {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

func TestAnswers(t *testing.T) {
	tests := []struct {
		name    string
		answer  httpretrytest.Answer
		header  []string // the request's
		status  int
		with    http.Header // headers the response has, among others
		body    string
		bodyErr error
		length  int64
	}{
		{name: "zero", answer: httpretrytest.Answer{}, status: 200, with: http.Header{}},
		{name: "status", answer: httpretrytest.Status(503), status: 503, with: http.Header{}},
		{name: "body", answer: httpretrytest.Status(404).Body("gone"), status: 404, body: "gone", length: 4},
		{name: "header", answer: httpretrytest.Status(200).Header("X-A", "1").Header("X-A", "2"),
			status: 200, with: http.Header{"X-A": {"1", "2"}}},
		{name: "retry after in whole seconds, rounded up", answer: httpretrytest.Status(429).RetryAfter(1500 * time.Millisecond),
			status: 429, with: http.Header{"Retry-After": {"2"}}},
		{name: "retry after 0", answer: httpretrytest.Status(503).RetryAfter(0),
			status: 503, with: http.Header{"Retry-After": {"0"}}},
		{name: "cut body", answer: httpretrytest.Status(200).Body("hello world").CutAfter(5),
			status: 200, body: "hello", bodyErr: io.ErrUnexpectedEOF, length: 11},
		{name: "cut past the end delivers it whole", answer: httpretrytest.Status(200).Body("hi").CutAfter(5),
			status: 200, body: "hi", length: 2},
		{name: "content whole", answer: httpretrytest.Content(`"v1"`, "hello world"),
			status: 200, with: http.Header{"Etag": {`"v1"`}, "Accept-Ranges": {"bytes"}}, body: "hello world", length: 11},
		{name: "content, its range", answer: httpretrytest.Content(`"v1"`, "hello world"),
			header: []string{"Range: bytes=6-", `If-Range: "v1"`},
			status: 206, with: http.Header{"Content-Range": {"bytes 6-10/11"}}, body: "world", length: 5},
		{name: "content, another version: whole", answer: httpretrytest.Content(`"v2"`, "HELLO WORLD"),
			header: []string{"Range: bytes=6-", `If-Range: "v1"`},
			status: 200, with: http.Header{"Etag": {`"v2"`}}, body: "HELLO WORLD", length: 11},
		{name: "content cut", answer: httpretrytest.Content(`"v1"`, "hello world").CutAfter(3),
			status: 200, body: "hel", bodyErr: io.ErrUnexpectedEOF, length: 11},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := send(t, httpretrytest.Script(tt.answer), http.MethodGet, "http://api.example.com/file", tt.header...)
			require.NoError(t, err)
			assert.Equal(t, tt.status, resp.StatusCode)
			assert.Equal(t, http.StatusText(tt.status), strings.TrimPrefix(resp.Status, resp.Status[:4]))
			for k, v := range tt.with {
				assert.Equal(t, v, resp.Header[k], k)
			}
			assert.Equal(t, tt.length, resp.ContentLength)
			body, err := read(t, resp)
			assert.Equal(t, tt.body, body)
			assert.Equal(t, tt.bodyErr, err)
		})
	}
}

func TestAnswerMethodsCopy(t *testing.T) {
	base := httpretrytest.Status(200).Header("X-A", "1")
	_ = base.Header("X-A", "2").Body("changed")
	resp, err := send(t, httpretrytest.Script(base), http.MethodGet, "http://api.example.com/")
	require.NoError(t, err)
	assert.Equal(t, []string{"1"}, resp.Header["X-A"])
	body, err := read(t, resp)
	require.NoError(t, err)
	assert.Empty(t, body)

	// Each attempt gets a header of its own.
	rt := httpretrytest.Script(base)
	first, err := send(t, rt, http.MethodGet, "http://api.example.com/")
	require.NoError(t, err)
	first.Header.Set("X-A", "mine")
	second, err := send(t, rt, http.MethodGet, "http://api.example.com/")
	require.NoError(t, err)
	assert.Equal(t, "1", second.Header.Get("X-A"))
}

func TestErrorAnswers(t *testing.T) {
	_, err := send(t, httpretrytest.Script(httpretrytest.Reset()), http.MethodGet, "http://api.example.com/")
	assert.ErrorIs(t, err, syscall.ECONNRESET)
	var op *net.OpError
	require.ErrorAs(t, err, &op)
	assert.Equal(t, "read", op.Op)

	_, err = send(t, httpretrytest.Script(httpretrytest.Refused()), http.MethodGet, "http://api.example.com/")
	assert.ErrorIs(t, err, syscall.ECONNREFUSED)
	require.ErrorAs(t, err, &op)
	assert.Equal(t, "dial", op.Op, "a failed dial: httpretry knows the request never left")

	mine := errors.New("mine")
	_, err = send(t, httpretrytest.Script(httpretrytest.Error(mine)), http.MethodGet, "http://api.example.com/")
	assert.Same(t, mine, err)
}

func TestStallAndAfterEndWithTheContext(t *testing.T) {
	for _, a := range []httpretrytest.Answer{httpretrytest.Stall(), httpretrytest.Status(200).After(time.Hour)} {
		ctx, cancel := context.WithCancel(context.Background())
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://api.example.com/", nil)
		require.NoError(t, err)
		time.AfterFunc(10*time.Millisecond, cancel)
		_, err = httpretrytest.Script(a).RoundTrip(req)
		assert.ErrorIs(t, err, context.Canceled)
	}
}

func TestScriptGoesInOrderAndRepeatsItsLast(t *testing.T) {
	statuses := func(rt http.RoundTripper, n int) []int {
		var got []int
		for range n {
			resp, err := send(t, rt, http.MethodGet, "http://api.example.com/")
			require.NoError(t, err)
			resp.Body.Close()
			got = append(got, resp.StatusCode)
		}
		return got
	}
	assert.Equal(t, []int{503, 429, 200, 200}, statuses(httpretrytest.Script(
		httpretrytest.Status(503), httpretrytest.Status(429), httpretrytest.Status(200)), 4))
	assert.Equal(t, []int{200, 200}, statuses(&httpretrytest.Transport{}, 2), "the zero Transport")
	assert.Equal(t, []int{200}, statuses(httpretrytest.Script(), 1))
}

func TestOnScriptsByRequest(t *testing.T) {
	rt := httpretrytest.Script(httpretrytest.Status(404)).
		On("GET /items/{id}", httpretrytest.Status(503), httpretrytest.Status(200)).
		On("POST /items/", httpretrytest.Status(201)).
		On("backup.example.com/", httpretrytest.Status(204))
	tests := []struct {
		method, url string
		status      int
	}{
		{"GET", "http://api.example.com/items/1", 503},
		{"POST", "http://api.example.com/items/", 201},
		{"GET", "http://api.example.com/items/2", 200}, // the pattern's script goes on
		{"GET", "http://backup.example.com/items/1", 204},
		{"DELETE", "http://api.example.com/items/1", 404}, // no pattern: the Transport's own
		{"GET", "http://api.example.com/other", 404},
	}
	for _, tt := range tests {
		resp, err := send(t, rt, tt.method, tt.url)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, tt.status, resp.StatusCode, tt.method+" "+tt.url)
	}
	assert.Panics(t, func() { rt.On("GET /items/{id}") }, "a pattern registered twice")
}

// Through httpretry: the attempts of a POST with an Idempotency-Key, its
// body replayed.
func TestAttemptsRecordWhatArrived(t *testing.T) {
	base := httpretrytest.Script(httpretrytest.Status(503), httpretrytest.Reset(), httpretrytest.Status(201))
	p := httpretry.DefaultPolicy()
	p.Backoff = httpretry.NoBackoff()
	client := &http.Client{Transport: httpretry.New(base, httpretry.WithPolicy(p))}
	req, err := http.NewRequest(http.MethodPost, "http://api.example.com/orders?x=1", strings.NewReader("one order"))
	require.NoError(t, err)
	req.Header.Set("Idempotency-Key", "k1")
	before := time.Now()
	resp, err := client.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, 201, resp.StatusCode)

	got := base.Attempts()
	require.Len(t, got, 3)
	for i, a := range got {
		assert.Equal(t, i+1, a.N)
		assert.Equal(t, "POST", a.Method)
		assert.Equal(t, "http://api.example.com/orders?x=1", a.URL)
		assert.Equal(t, "k1", a.Header.Get("Idempotency-Key"))
		assert.Equal(t, "one order", a.Body)
		assert.False(t, a.At.Before(before))
		before = a.At
	}
	got[0].Header.Set("Idempotency-Key", "changed")
	assert.Equal(t, "k1", base.Attempts()[0].Header.Get("Idempotency-Key"), "a copy")
}

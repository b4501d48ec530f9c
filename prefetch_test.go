package httpretry

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// cutAnswers serves a 2 KiB JSON answer, cut after 30 bytes on the calls
// cut says.
func cutAnswers(t *testing.T, cut func(n int) bool) (*upstream, string) {
	body := `{"items":[` + strings.Repeat(`"x",`, 510) + `"y"]}`
	require.Len(t, body, 2055)
	return newUpstream(t, func(w http.ResponseWriter, _ *http.Request, n int) {
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.Header().Set("Content-Type", "application/json")
		if cut(n) {
			io.WriteString(w, body[:30])
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler) // the connection ends mid-body
		}
		io.WriteString(w, body)
	}), body
}

// A small answer cut after its headers is a failed attempt: resent, and
// handed back whole (DESIGN point 24), where it used to reach the caller's
// Read as a bare unexpected EOF.
func TestACutSmallAnswerIsResentAndArrivesWhole(t *testing.T) {
	up, body := cutAnswers(t, func(n int) bool { return n == 1 })
	var rec recorder
	c := &http.Client{Transport: New(nil, WithPolicy(fastPolicy(3)), WithObserver(rec.observe))}
	resp, err := c.Get(up.URL)
	require.NoError(t, err)
	assert.Equal(t, body, readAll(t, resp))
	assert.EqualValues(t, 2, up.calls.Load())
	require.Equal(t, []EventKind{EventRetry}, rec.kinds())
	assert.ErrorContains(t, rec.all()[0].Err, "response body broke after 30 of 2055 bytes")
}

// Prefetch −1 hands the answer back as it comes: the cut reaches Read.
func TestPrefetchMinusOneHandsTheAnswerBackAsItComes(t *testing.T) {
	up, _ := cutAnswers(t, func(n int) bool { return n == 1 })
	p := fastPolicy(3)
	p.Prefetch = -1
	resp, err := (&http.Client{Transport: New(nil, WithPolicy(p))}).Get(up.URL)
	require.NoError(t, err)
	defer resp.Body.Close()
	_, err = io.ReadAll(resp.Body)
	assert.ErrorIs(t, err, io.ErrUnexpectedEOF)
	assert.EqualValues(t, 1, up.calls.Load())
}

// The last allowed attempt is read whole too: its cut ends the request
// with an error that names it, and no response.
func TestTheLastAttemptsCutEndsWithAnErrorThatNamesIt(t *testing.T) {
	up, _ := cutAnswers(t, func(int) bool { return true })
	resp, err := (&http.Client{Transport: New(nil, WithPolicy(fastPolicy(2)))}).Get(up.URL)
	require.Error(t, err)
	assert.Nil(t, resp)
	assert.ErrorContains(t, err, "response body broke after 30 of 2055 bytes")
	assert.ErrorIs(t, err, io.ErrUnexpectedEOF)
	assert.EqualValues(t, 3, up.calls.Load())
}

// RetryIf may read an answer read whole: a 200 that carries an error is
// resent, and the next answer is handed back readable from its first byte.
func TestRetryIfReadsTheBody(t *testing.T) {
	up := newUpstream(t, func(w http.ResponseWriter, _ *http.Request, n int) {
		if n == 1 {
			io.WriteString(w, `{"error":"try again"}`)
			return
		}
		io.WriteString(w, `{"ok":true}`)
	})
	var read atomic.Int32
	p := fastPolicy(3)
	p.RetryIf = func(resp *http.Response, err error) bool {
		if err != nil {
			return true
		}
		b, rerr := io.ReadAll(resp.Body)
		require.NoError(t, rerr)
		read.Add(1)
		return strings.Contains(string(b), `"error"`)
	}
	resp, err := (&http.Client{Transport: New(nil, WithPolicy(p))}).Get(up.URL)
	require.NoError(t, err)
	assert.Equal(t, `{"ok":true}`, readAll(t, resp))
	assert.EqualValues(t, 2, up.calls.Load())
	assert.EqualValues(t, 2, read.Load())
}

// What is not read whole: a HEAD, a 204, a body of unknown length, one
// past Prefetch, an answer to a request that may not be resent. Each is
// handed back as the base gave it.
func TestWhatIsNotReadWhole(t *testing.T) {
	tests := []struct {
		name   string
		method string
		code   int
		length int64
		p      func(*Policy)
	}{
		{"HEAD", http.MethodHead, 200, 10, nil},
		{"204", http.MethodGet, 204, 10, nil},
		{"unknown length", http.MethodGet, 200, -1, nil},
		{"past Prefetch", http.MethodGet, 200, 11, func(p *Policy) { p.Prefetch = 10 }},
		{"an unkeyed POST", http.MethodPost, 200, 10, nil},
		{"a 503 RetryOn retries", http.MethodGet, 503, 10, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
				body := &trackedBody{r: strings.NewReader("0123456789")}
				return &http.Response{StatusCode: tt.code, Header: http.Header{}, Body: body, ContentLength: tt.length, Request: r}, nil
			})
			p := fastPolicy(1)
			if tt.p != nil {
				tt.p(&p)
			}
			req, err := http.NewRequestWithContext(context.Background(), tt.method, "http://api.example.com/", nil)
			require.NoError(t, err)
			resp, err := New(base, WithPolicy(p)).RoundTrip(req)
			require.NoError(t, err)
			_, asIs := resp.Body.(*trackedBody)
			assert.True(t, asIs, "%T", resp.Body)
			resp.Body.Close()
		})
	}
}

// A prefetched body reads from memory, and its Close gives the buffer back
// once: a second Close, and a Read after, do nothing.
func TestAPrefetchedBodyClosesOnce(t *testing.T) {
	up := newUpstream(t, func(w http.ResponseWriter, _ *http.Request, _ int) { io.WriteString(w, "hello") })
	resp, err := (&http.Client{Transport: New(nil, WithPolicy(fastPolicy(1)))}).Get(up.URL)
	require.NoError(t, err)
	_, ok := resp.Body.(*prefetchedBody)
	require.True(t, ok, "%T", resp.Body)
	assert.Equal(t, "hello", readAll(t, resp))
	require.NoError(t, resp.Body.Close())
	n, err := resp.Body.Read(make([]byte, 1))
	assert.Zero(t, n)
	assert.True(t, errors.Is(err, io.EOF))
}

// A new user's flaky catalog (issue 32): 1,000 GETs of 2 KiB JSON answers,
// 3 % of them cut after 30 bytes, through the default policy. Every answer
// arrives whole, and the server's calls are the requests plus the cuts.
func TestAFlakyCatalogDeliversEveryAnswerWhole(t *testing.T) {
	const requests = 1000
	var cuts atomic.Int64
	up, body := cutAnswers(t, func(n int) bool {
		if n%33 == 7 { // 3 % of the calls, spread
			cuts.Add(1)
			return true
		}
		return false
	})
	c := &http.Client{Transport: New(nil, WithBudgets(NewBudgets()))}
	defer c.CloseIdleConnections()
	whole := 0
	for range requests {
		resp, err := c.Get(up.URL)
		require.NoError(t, err)
		if readAll(t, resp) == body {
			whole++
		}
	}
	assert.Equal(t, requests, whole)
	assert.Equal(t, requests+cuts.Load(), up.calls.Load())
	t.Logf("%d requests, %d cuts, %d calls", requests, cuts.Load(), up.calls.Load())
}

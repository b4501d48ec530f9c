package httpretry

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// These tests race a resend against the upload of the attempt it replaces:
// http.Transport goes on writing a request body after RoundTrip returned an
// early answer, so a discarded attempt can still be reading the caller's
// body while its resend replays it.

// patternBody yields byte i = i%251, n bytes, with no GetBody.
type patternBody struct {
	off, n int64
	closes atomic.Int32
}

func (p *patternBody) Read(b []byte) (int, error) {
	if p.off >= p.n {
		return 0, io.EOF
	}
	k := min(int64(len(b)), p.n-p.off)
	for i := range k {
		b[i] = byte((p.off + i) % 251)
	}
	p.off += k
	return int(k), nil
}

func (p *patternBody) Close() error { p.closes.Add(1); return nil }

// checkPattern reads r to its end and returns how many bytes came in the
// pattern's order, or an error at the first byte out of it.
func checkPattern(r io.Reader) (int64, error) {
	buf := make([]byte, 32<<10)
	var off int64
	for {
		k, err := r.Read(buf)
		for i := range k {
			if buf[i] != byte((off+int64(i))%251) {
				return off + int64(i), fmt.Errorf("byte %d out of order", off+int64(i))
			}
		}
		off += int64(k)
		if err == io.EOF {
			return off, nil
		}
		if err != nil {
			return off, err
		}
	}
}

func TestResendTakesTheBodyFromADiscardedUpload(t *testing.T) {
	for _, tc := range []struct {
		name       string
		size       int64
		readFirst  int64 // what the discarded upload read before its answer
		wantCalls  int32
		wantStatus int
		wantReason Reason
	}{
		{"within the limit: a whole resend", 1500, 1000, 2, http.StatusOK, 0},
		{"past the limit: the 503 back", 3000, 2500, 1, http.StatusServiceUnavailable, ReasonBodyNotReplayable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var calls atomic.Int32
			zombie := make(chan struct{})
			// The stale upload goes on once the resend has started, so
			// that it reads only after the resend took the body over; with
			// no resend it goes on at once.
			proceed := make(chan struct{})
			if tc.wantCalls == 1 {
				close(proceed)
			}
			var zombieErr error
			var resent int64
			var resentErr error
			base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
				if calls.Add(1) == 1 {
					io.CopyN(io.Discard, r.Body, tc.readFirst)
					go func() { // the write loop goes on after the answer
						defer close(zombie)
						<-proceed
						_, zombieErr = io.Copy(io.Discard, r.Body)
						r.Body.Close()
					}()
					return fakeResponse(r, http.StatusServiceUnavailable, nil, "busy"), nil
				}
				close(proceed)
				<-zombie // the stale upload must not be able to read any further
				resent, resentErr = checkPattern(r.Body)
				r.Body.Close()
				return fakeResponse(r, http.StatusOK, nil, "ok"), nil
			})
			p := fastPolicy(3)
			p.MaxReplayBytes = 2048
			p.Budget = BudgetConfig{MinRetries: 2}
			bs := NewBudgets()
			var rec recorder
			body := &patternBody{n: tc.size}
			req, _ := http.NewRequest(http.MethodPut, "http://api.example.com/up", body)
			req.ContentLength = -1
			resp, err := New(base, WithPolicy(p), WithObserver(rec.observe), WithBudgets(bs)).RoundTrip(req)
			require.NoError(t, err)
			assert.Equal(t, tc.wantStatus, resp.StatusCode)
			readAll(t, resp)
			<-zombie
			assert.Equal(t, tc.wantCalls, calls.Load())
			assert.Equal(t, tc.wantReason, rec.giveUp(t))
			st := bs.For("api.example.com", p.Budget).Stats()
			assert.Equal(t, int(tc.wantCalls-1), st.Retries, "the resend sent is charged; one without its body is not")
			if tc.wantCalls == 2 {
				assert.ErrorIs(t, zombieErr, errBodyRevoked, "the stale upload was stopped")
				require.NoError(t, resentErr)
				assert.Equal(t, tc.size, resent, "the resend carries the whole body")
			}
			assert.EqualValues(t, 1, body.closes.Load())
		})
	}
}

// The server answers 503 at once and goes on swallowing the upload: over a
// real http.Transport, the resend carries the whole body in order, or the
// 503 is returned.
func TestResendOfAStreamedUploadAfterAnEarlyAnswerOverLoopback(t *testing.T) {
	for _, size := range []int64{600 << 10, 1500 << 10, 4 << 20} {
		t.Run(fmt.Sprint(size>>10, "KiB"), func(t *testing.T) {
			var calls atomic.Int32
			var got atomic.Int64
			var gotErr atomic.Value
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if calls.Add(1) == 1 {
					conn, bufrw, err := w.(http.Hijacker).Hijack()
					if err != nil {
						return
					}
					io.WriteString(conn, "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 4\r\n\r\nbusy")
					io.Copy(io.Discard, bufrw)
					conn.Close()
					return
				}
				n, err := checkPattern(r.Body)
				got.Store(n)
				if err != nil {
					gotErr.Store(err.Error())
				}
				io.WriteString(w, "ok")
			}))
			defer srv.Close()
			// This server cannot reuse a connection it answered early.
			base := &http.Transport{DisableKeepAlives: true}
			body := &patternBody{n: size}
			req, _ := http.NewRequest(http.MethodPut, srv.URL, body)
			req.ContentLength = -1
			resp, err := New(base, WithPolicy(fastPolicy(3))).RoundTrip(req)
			require.NoError(t, err, "the 503 or a whole resend, never an error")
			b := readAll(t, resp)
			switch resp.StatusCode {
			case http.StatusOK:
				assert.EqualValues(t, 2, calls.Load())
				assert.Nil(t, gotErr.Load())
				assert.Equal(t, size, got.Load(), "the resend carries the whole body")
			case http.StatusServiceUnavailable:
				assert.Equal(t, "busy", b)
				assert.EqualValues(t, 1, calls.Load())
			default:
				t.Fatalf("status %d", resp.StatusCode)
			}
		})
	}
}

// An upload answered early with a long 503, with no resend left, returns
// that 503 whole: the body is taken from the still-uploading attempt only
// once a resend is paid for.
func TestEarlyAnsweredUploadWithNoResendLeftReturnsTheAnswer(t *testing.T) {
	page := bytes.Repeat([]byte("x"), 5<<10)
	var calls atomic.Int32
	done := make(chan struct{})
	uploads := make(chan struct{}, 1)
	base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		calls.Add(1)
		io.CopyN(io.Discard, r.Body, 100)
		go func() { // the write loop goes on after the answer
			defer func() { uploads <- struct{}{} }()
			<-done // still uploading when the loop decides
			io.Copy(io.Discard, r.Body)
			r.Body.Close()
		}()
		resp := fakeResponse(r, http.StatusServiceUnavailable, nil, string(page))
		resp.ContentLength = -1
		return resp, nil
	})
	p := fastPolicy(1)
	p.MaxReplayBytes = 2048
	p.Budget = BudgetConfig{Percent: 1, MinRetries: -1} // no resend for one request
	var rec recorder
	body := &patternBody{n: 1500}
	req, _ := http.NewRequest(http.MethodPut, "http://api.example.com/up", body)
	req.ContentLength = -1
	resp, err := New(base, WithPolicy(p), WithObserver(rec.observe)).RoundTrip(req)
	require.NoError(t, err)
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	assert.Equal(t, string(page), readAll(t, resp), "the whole page")
	close(done)
	<-uploads
	assert.EqualValues(t, 1, calls.Load())
	assert.Equal(t, ReasonBudget, rec.giveUp(t))
	assert.EqualValues(t, 1, body.closes.Load())
}

package chaos

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// reqKind is one of the three request shapes every scenario drives.
type reqKind string

const (
	kindGet         reqKind = "get"
	kindKeyedPost   reqKind = "keyed-post"
	kindUnkeyedPost reqKind = "unkeyed-post"
)

var allKinds = []reqKind{kindGet, kindKeyedPost, kindUnkeyedPost}

// trackedBody is a request body that remembers whether it was closed, so
// that a test can check the RoundTripper contract on every path.
type trackedBody struct {
	r      *bytes.Reader
	closed atomic.Bool
}

func (b *trackedBody) Read(p []byte) (int, error) { return b.r.Read(p) }

// Close records the close; reading after it is still allowed, as with
// http.NoBody, because the test is about the close, not the reads.
func (b *trackedBody) Close() error {
	b.closed.Store(true)
	return nil
}

// call is one logical request and what came of it.
type call struct {
	kind    reqKind
	id      string
	status  int
	err     error // from RoundTrip
	readErr error // from reading the response body
	elapsed time.Duration
	body    *trackedBody // nil for GET
	// violation is set when an invariant broke on this call.
	violation string
}

// ok reports a 200 whose body read completely and correctly.
func (c *call) ok() bool { return c.err == nil && c.readErr == nil && c.status == http.StatusOK }

// spec describes one request to send.
type spec struct {
	kind     reqKind
	id       string
	body     []byte // for POSTs
	respSize int
	getBody  bool // whether the request carries GetBody
	seq      int  // > 0: sent as X-Chaos-Seq
}

// send drives one request through rt and checks what comes back: never a
// response and an error together, and a 200 body that reads whole is
// exactly the one the upstream sent.
func send(ctx context.Context, rt http.RoundTripper, baseURL string, s spec) *call {
	c := &call{kind: s.kind, id: s.id}
	method := http.MethodGet
	if s.kind != kindGet {
		method = http.MethodPost
	}
	req, err := http.NewRequestWithContext(ctx, method, baseURL+"/"+string(s.kind), nil)
	if err != nil {
		c.violation = "building the request: " + err.Error()
		return c
	}
	if s.id != "" {
		req.Header.Set(hdrID, s.id)
	}
	req.Header.Set(hdrKind, string(s.kind))
	req.Header.Set(hdrRespSize, strconv.Itoa(s.respSize))
	if s.seq > 0 {
		req.Header.Set(hdrSeq, strconv.Itoa(s.seq))
	}
	if s.kind != kindGet {
		c.body = &trackedBody{r: bytes.NewReader(s.body)}
		req.Body = c.body
		req.ContentLength = int64(len(s.body))
		req.Header.Set(hdrBodySum, bodySum(s.body))
		if s.getBody {
			body := s.body
			req.GetBody = func() (io.ReadCloser, error) {
				return io.NopCloser(bytes.NewReader(body)), nil
			}
		}
		if len(s.body) == 0 {
			req.Body = http.NoBody
			c.body.closed.Store(true)
		}
	}
	if s.kind == kindKeyedPost {
		req.Header.Set("Idempotency-Key", "key-"+s.id)
	}

	start := time.Now()
	resp, err := rt.RoundTrip(req)
	c.err = err
	if resp != nil && err != nil {
		c.violation = "response and error together"
		resp.Body.Close()
		return c
	}
	if resp == nil && err == nil {
		c.violation = "neither response nor error"
		return c
	}
	if err != nil {
		c.elapsed = time.Since(start)
		return c
	}
	c.status = resp.StatusCode
	got, readErr := io.ReadAll(resp.Body)
	resp.Body.Close()
	c.elapsed = time.Since(start)
	c.readErr = readErr
	if readErr == nil && resp.StatusCode == http.StatusOK && !bytes.Equal(got, payload[:s.respSize]) {
		c.violation = fmt.Sprintf("200 body of %d bytes differs from the %d sent", len(got), s.respSize)
	}
	return c
}

// tally sums the calls of one run.
type tally struct {
	mu    sync.Mutex
	calls []*call
}

func (t *tally) add(c *call) {
	t.mu.Lock()
	t.calls = append(t.calls, c)
	t.mu.Unlock()
}

// counts returns how many calls succeeded, failed with a RoundTrip error,
// came back with a non-200 status, or broke while the body was read.
func (t *tally) counts() (ok, rtErr, status, readErr int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, c := range t.calls {
		switch {
		case c.err != nil:
			rtErr++
		case c.readErr != nil:
			readErr++
		case c.status != http.StatusOK:
			status++
		default:
			ok++
		}
	}
	return
}

// violations lists every broken invariant seen on a call.
func (t *tally) violations() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []string
	for _, c := range t.calls {
		if c.violation != "" {
			out = append(out, c.id+": "+c.violation)
		}
	}
	return out
}

// unclosedBodies lists calls whose request body was never closed.
func (t *tally) unclosedBodies() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []string
	for _, c := range t.calls {
		if c.body != nil && !c.body.closed.Load() {
			out = append(out, c.id)
		}
	}
	return out
}

// slowest is the longest a call took.
func (t *tally) slowest() time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	var most time.Duration
	for _, c := range t.calls {
		most = max(most, c.elapsed)
	}
	return most
}

// errorsOf returns the RoundTrip errors of calls of kind.
func (t *tally) errorsOf(kind reqKind) []error {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []error
	for _, c := range t.calls {
		if c.kind == kind && c.err != nil {
			out = append(out, c.err)
		}
	}
	return out
}

// bytesReader is bytes.NewReader, named for the call sites that only need a
// fresh reader over a payload slice.
func bytesReader(b []byte) *bytes.Reader { return bytes.NewReader(b) }

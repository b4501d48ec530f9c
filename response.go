package httpretry

import (
	"bytes"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

const (
	// drainLimit is how much of a discarded body is read so that its
	// connection can be reused; http.Client reads about as much.
	drainLimit = 4 << 10
	// drainTime bounds that read, so that a server trickling its error
	// page cannot hold up the next attempt.
	drainTime = 100 * time.Millisecond
)

// discard drains a little of a response nobody will read and closes it.
// A body longer than drainLimit is closed at once: its connection is lost
// either way.
func discard(resp *http.Response) {
	body := resp.Body
	if body == nil {
		return
	}
	if !drains(resp) {
		body.Close()
		return
	}
	var once sync.Once
	closeOnce := func() { once.Do(func() { body.Close() }) }
	t := time.AfterFunc(drainTime, closeOnce)
	io.CopyN(io.Discard, body, drainLimit)
	t.Stop()
	closeOnce()
}

// discardWithin is discard with its drain bounded by d as well: a body
// that would take longer to drain is closed at once.
func discardWithin(resp *http.Response, d time.Duration) {
	if resp != nil && resp.Body != nil && d < drainTime && drains(resp) {
		resp.Body.Close()
		return
	}
	if resp != nil {
		discard(resp)
	}
}

// cancelOnClose releases an attempt's context once the caller has read the
// body to its end or closed it, as net/http's cancelTimerBody does.
type cancelOnClose struct {
	io.ReadCloser
	cancel func()
	done   atomic.Bool
}

func (b *cancelOnClose) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF {
		b.release()
	}
	return n, err
}

func (b *cancelOnClose) Close() error {
	err := b.ReadCloser.Close()
	b.release()
	return err
}

func (b *cancelOnClose) release() {
	if b.done.CompareAndSwap(false, true) {
		b.cancel()
	}
}

// keep reads a response that is about to be discarded into memory, so that
// it can still be returned whole if no further attempt succeeds. It
// reports false, with resp drained and closed, when its body is longer
// than drainLimit or does not arrive within drainTime.
func keep(resp *http.Response) bool {
	if body := resp.Body; body != nil && body != http.NoBody && resp.ContentLength > drainLimit {
		body.Close()
		return false
	}
	whole, ok := hold(resp)
	if ok && !whole {
		resp.Body.Close()
	}
	return whole
}

// hold reads resp's body into memory as keep does, but leaves a body too
// long for that readable, its first bytes in memory and the rest where it
// was, so that it can still be returned whole. whole reports that the body
// is in memory; ok is false, with the body closed, when it could not be
// read within drainTime.
func hold(resp *http.Response) (whole, ok bool) {
	body := resp.Body
	if body == nil || body == http.NoBody {
		return true, true
	}
	var once sync.Once
	closeOnce := func() { once.Do(func() { body.Close() }) }
	t := time.AfterFunc(drainTime, closeOnce)
	b, err := io.ReadAll(io.LimitReader(body, drainLimit+1))
	if !t.Stop() || err != nil {
		closeOnce()
		return false, false
	}
	if len(b) <= drainLimit {
		closeOnce()
		resp.Body = io.NopCloser(bytes.NewReader(b))
		return true, true
	}
	resp.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(b), body), body}
	return false, true
}

// drainBound is the longest discarding resp can take.
func drainBound(resp *http.Response) time.Duration {
	if resp == nil || !drains(resp) {
		return 0
	}
	return drainTime
}

// drains reports whether discard reads resp's body before closing it,
// rather than closing it at once: a body that may be short enough to keep
// its connection.
func drains(resp *http.Response) bool {
	return resp.Body != nil && resp.Body != http.NoBody &&
		resp.ContentLength != 0 && resp.ContentLength <= drainLimit
}

// status is resp's status code, 0 for no response.
func status(resp *http.Response) int {
	if resp == nil {
		return 0
	}
	return resp.StatusCode
}

// closeBody closes b, if any: a request body no attempt sent.
func closeBody(b io.ReadCloser) {
	if b != nil {
		b.Close()
	}
}

// checkOutcome holds the base to the RoundTripper contract: exactly one of
// a response and an error. A response that came with an error is
// discarded and the error kept.
func checkOutcome(resp *http.Response, err error) (*http.Response, error) {
	if err != nil {
		if resp != nil {
			discard(resp)
		}
		return nil, err
	}
	if resp == nil {
		return nil, errNilResponse
	}
	return resp, nil
}

// closeOnPanic, deferred, closes resp, which no attempt holds yet, if a
// callback of the caller's (RetryIf, an observer) panics; the panic goes
// on.
func closeOnPanic(resp *http.Response) {
	if v := recover(); v != nil {
		resp.Body.Close()
		panic(v)
	}
}

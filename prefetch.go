package httpretry

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"
)

// A small answer arrives whole (DESIGN point 24). A body cut after the
// headers reaches the caller's Read after RoundTrip returned, too late to
// resend; point 21 resumes large ones. So an answer small enough is read
// into memory before RoundTrip returns: a cut is then a failed attempt,
// resent as any, and RetryIf may read the body, which is rewound after.

// defaultPrefetch is Prefetch's default: Resume's MinBytes, so that every
// body of known length is read whole or resumes.
const defaultPrefetch = defaultResumeMinBytes

// sized reports whether resp has a body of a known length within p's
// Prefetch: the first check of prefetchable, and the only one most
// answers reach.
func (p *hostPolicy) sized(resp *http.Response) bool {
	return resp.ContentLength > 0 && resp.ContentLength <= p.prefetch
}

// prefetchable reports whether resp, sized, the response to an attempt of
// req under p, is read whole before it is judged: req may be resent and
// does not ask to switch protocols, resp is not a HEAD's, 1xx, 204 or 304,
// and it may be an answer (RetryIf decides on the body it reads;
// otherwise RetryOn).
func (p *hostPolicy) prefetchable(req *http.Request, resp *http.Response, resendable, upgrade bool) bool {
	switch code := resp.StatusCode; {
	case !resendable || upgrade || resp.Uncompressed || req.Method == http.MethodHead:
		return false
	case code < 200 || code == http.StatusNoContent || code == http.StatusNotModified:
		return false
	}
	return p.retryIf != nil || !p.retryOn.has(resp.StatusCode)
}

// prefetch reads resp's body whole into a pooled buffer, within ctx and
// the policy's stall bound (Resume.Idle), and hands it back from memory;
// the original body is closed either way. A read error, a stall or fewer
// bytes than declared is an error that names the cut.
func prefetch(ctx context.Context, resp *http.Response, idle time.Duration) error {
	body := resp.Body
	// The transport ends the body of a request whose context ends: only
	// another context, or a stall bound, needs a watch of its own, which
	// may close the body as the read ends, hence once.
	watched := (resp.Request == nil || ctx != resp.Request.Context()) && ctx.Done() != nil
	var closeBody func()
	if watched || idle > 0 {
		closeBody = sync.OnceFunc(func() { body.Close() })
		defer closeBody()
	} else {
		defer body.Close()
	}
	n := int(resp.ContentLength)
	buf := prefetchPool.Get().(*[]byte)
	if cap(*buf) < n {
		*buf = make([]byte, n)
	}
	*buf = (*buf)[:n]
	got, err := readWhole(ctx, body, closeBody, watched, *buf, idle)
	if err != nil {
		putPrefetch(buf)
		return &bodyBroke{got: got, want: n, err: err}
	}
	pb := &prefetchedBody{buf: buf}
	pb.r.Reset(*buf)
	resp.Body = pb
	return nil
}

// readWhole fills buf from body, then reads to EOF, so that the transport
// fills the response's Trailer. A read that stalls for idle (0: no bound)
// or, when watched, outlives ctx closes body with closeBody.
func readWhole(ctx context.Context, body io.Reader, closeBody func(), watched bool, buf []byte, idle time.Duration) (int, error) {
	if watched {
		stop := context.AfterFunc(ctx, closeBody)
		defer stop()
	}
	var stall *time.Timer
	if idle > 0 {
		stall = time.AfterFunc(idle, closeBody)
		defer stall.Stop()
	}
	got := 0
	for got < len(buf) {
		n, err := body.Read(buf[got:])
		got += n
		if stall != nil && n > 0 {
			stall.Reset(idle)
		}
		if err != nil {
			if err == io.EOF && got < len(buf) {
				err = io.ErrUnexpectedEOF
			}
			if got == len(buf) && err == io.EOF {
				break
			}
			return got, readErr(ctx.Err(), err)
		}
	}
	var one [1]byte
	if _, err := body.Read(one[:]); err != nil && err != io.EOF {
		return got, err // the trailer or the end did not arrive whole
	}
	return got, nil
}

// readErr is why a read failed: the context's error when it ended, else err.
func readErr(ctxErr, err error) error {
	if ctxErr != nil {
		return ctxErr
	}
	return err
}

// bodyBroke is a prefetched answer cut short: a transport error in point
// 1's sense, resent as any.
type bodyBroke struct {
	got, want int
	err       error
}

func (e *bodyBroke) Error() string {
	return fmt.Sprintf("response body broke after %d of %d bytes: %v", e.got, e.want, e.err)
}

func (e *bodyBroke) Unwrap() error { return e.err }

// prefetchedBody is an answer read whole, read from memory. Close returns
// its buffer to the pool; it reads nothing after.
type prefetchedBody struct {
	buf *[]byte
	r   bytes.Reader
}

// prefetchPool holds the buffers of answers read whole.
var prefetchPool = sync.Pool{New: func() any { return new([]byte) }}

func (b *prefetchedBody) Read(p []byte) (int, error) { return b.r.Read(p) }

// Close gives the buffer back, once.
func (b *prefetchedBody) Close() error {
	if b.buf != nil {
		b.r.Reset(nil)
		putPrefetch(b.buf)
		b.buf = nil
	}
	return nil
}

// rewind has resp's body, if read whole, read from its start again, after
// RetryIf read it.
func rewind(resp *http.Response) {
	if b, ok := resp.Body.(*prefetchedBody); ok && b.buf != nil {
		b.r.Reset(*b.buf)
	}
}

// putPrefetch returns buf to the pool, unless it is larger than the
// default Prefetch: a policy with a larger one allocates its larger
// buffers each time, rather than pin them.
func putPrefetch(buf *[]byte) {
	if cap(*buf) <= defaultPrefetch {
		prefetchPool.Put(buf)
	}
}

package httpretry

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// An object origin for the resume tests: it serves one object with
// http.ServeContent (so Range and If-Range are net/http's own), records
// what each request asked, and applies the fault its script gives the
// n-th request. Served over loopback (serve) the cut is real: the handler
// flushes the bytes before the cut and aborts the connection, or stalls
// until the client goes. In memory (memoryBase), for testing/synctest,
// the response body fails or blocks at the cut.

// fault is what the origin does to one request.
type fault struct {
	cut         int64       // body bytes sent before the break; 0: no break
	stall       bool        // at the cut, block until the client goes instead of breaking
	status      int         // answer this status instead of the object
	header      http.Header // with status: its headers (Retry-After)
	ignoreRange bool        // serve the whole object, whatever Range asks
	replace     []byte      // serve this object (a new version) from now on
	reset       bool        // in memory: fail the request with a connection reset
	hang        bool        // in memory: send no headers until the request's context ends
	early       bool        // in memory: end at the cut with io.EOF, in the Read of the last bytes
	etag        string      // in memory: send this ETag instead of the object's
	// A server that honours Range but ignores If-Range, and one whose
	// answer names no version (neither ETag nor Last-Modified).
	ignoreIfRange bool
	bare          bool
	// over, when set, serves the Range asked as a 206 whose Content-Range
	// names exactly that range but whose body runs over bytes past it
	// (below 0: stops short of it); with length set, Content-Length says
	// so, else the body is chunked.
	over   int64
	length lengthIs
}

// lengthIs is the Content-Length of a 206 whose body is not its range.
type lengthIs uint8

const (
	chunked     lengthIs = iota // none: chunked
	bodyLength                  // the body's own length
	rangeLength                 // the range's length, whatever the body's
)

var errReset = errors.New("read: connection reset by peer")

type asked struct{ rng, ifRange string }

type object struct {
	mu       sync.Mutex
	data     []byte
	version  int
	etag     bool      // send a strong ETag; else only Last-Modified
	modtime  time.Time // zero: none
	trailer  bool      // end each answer with a trailer X-Served: the Range it answered
	script   func(n int) fault
	requests []asked
	served   int64 // body bytes written
}

func newObject(size int, script func(n int) fault) *object {
	data := make([]byte, size)
	r := rand.New(rand.NewPCG(uint64(size), 7))
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	if script == nil {
		script = func(int) fault { return fault{} }
	}
	return &object{data: data, version: 1, etag: true, script: script}
}

// cuts is a script that breaks the first responses after the given
// numbers of their own bytes.
func cuts(offsets ...int64) func(n int) fault {
	return func(n int) fault {
		if n <= len(offsets) {
			return fault{cut: offsets[n-1]}
		}
		return fault{}
	}
}

func (o *object) asked() []asked {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]asked(nil), o.requests...)
}

func (o *object) bytesServed() int64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.served
}

// prepare records r and decides what to serve it.
func (o *object) prepare(w http.ResponseWriter, r *http.Request) (fault, []byte, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.requests = append(o.requests, asked{r.Header.Get("Range"), r.Header.Get("If-Range")})
	f := o.script(len(o.requests))
	if f.replace != nil {
		o.data, o.version = f.replace, o.version+1
		if !o.modtime.IsZero() {
			o.modtime = o.modtime.Add(time.Minute)
		}
	}
	if f.status != 0 {
		for k, v := range f.header {
			w.Header()[k] = v
		}
		w.WriteHeader(f.status)
		return f, nil, false
	}
	w.Header().Set("Date", time.Now().UTC().Format(http.TimeFormat))
	if o.etag {
		w.Header().Set("Etag", `"v`+strconv.Itoa(o.version)+`"`)
	}
	if f.ignoreRange {
		r.Header.Del("Range")
	}
	if f.ignoreIfRange {
		r.Header.Del("If-Range")
	}
	return f, o.data, true
}

func (o *object) count(n int) {
	o.mu.Lock()
	o.served += int64(n)
	o.mu.Unlock()
}

// ServeHTTP serves the object over a real connection, cutting it as the
// script says.
func (o *object) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f, data, ok := o.prepare(w, r)
	if !ok {
		return
	}
	cw := &cutWriter{ResponseWriter: w, o: o, f: f, ctx: r.Context()}
	if f.over != 0 {
		o.serveOver(cw, r, f, data)
		return
	}
	http.ServeContent(cw, r, "", o.modtime, bytes.NewReader(data))
	if o.trailer {
		w.Header().Set("X-Served", r.Header.Get("Range"))
	}
}

// serveOver answers the Range of r (bytes=N- or N-E) with a 206 whose body
// is not the range it names: f.over bytes longer ('x's past the object's
// end) or shorter, its Content-Length as f.length says.
func (o *object) serveOver(w http.ResponseWriter, r *http.Request, f fault, data []byte) {
	first, last := parseRange(r.Header.Get("Range"), int64(len(data)))
	body := data[first : last+1]
	if f.over > 0 {
		body = append(bytes.Clone(body), bytes.Repeat([]byte{'x'}, int(f.over))...)
	} else {
		body = body[:int64(len(body))+f.over]
	}
	h := w.Header()
	if !o.modtime.IsZero() {
		h.Set("Last-Modified", o.modtime.UTC().Format(http.TimeFormat))
	}
	h.Set("Content-Range", "bytes "+strconv.FormatInt(first, 10)+"-"+strconv.FormatInt(last, 10)+"/"+
		strconv.Itoa(len(data)))
	switch f.length {
	case bodyLength:
		h.Set("Content-Length", strconv.Itoa(len(body)))
	case rangeLength:
		h.Set("Content-Length", strconv.FormatInt(last+1-first, 10))
	}
	w.WriteHeader(http.StatusPartialContent)
	if f.length == chunked {
		w.(http.Flusher).Flush() // headers out with no length: the body is chunked
	}
	w.Write(body)
}

// parseRange reads a Range of the form bytes=N- or bytes=N-E within size.
func parseRange(v string, size int64) (first, last int64) {
	a, b, _ := strings.Cut(strings.TrimPrefix(v, "bytes="), "-")
	first, _ = strconv.ParseInt(a, 10, 64)
	last = size - 1
	if b != "" {
		last, _ = strconv.ParseInt(b, 10, 64)
	}
	return first, last
}

// cutWriter sends f.cut body bytes, flushes them, then aborts the
// connection or stalls.
type cutWriter struct {
	http.ResponseWriter
	o       *object
	f       fault
	ctx     context.Context
	written int64
}

func (w *cutWriter) WriteHeader(code int) {
	if w.f.bare {
		w.Header().Del("Etag")
		w.Header().Del("Last-Modified")
	}
	if w.o.trailer {
		w.Header().Set("Trailer", "X-Served")
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *cutWriter) Flush() { w.ResponseWriter.(http.Flusher).Flush() }

func (w *cutWriter) Write(p []byte) (int, error) {
	if w.f.cut > 0 && w.written+int64(len(p)) >= w.f.cut {
		k := w.f.cut - w.written
		w.ResponseWriter.Write(p[:k])
		w.o.count(int(k))
		w.Flush()
		if w.f.stall {
			<-w.ctx.Done()
		}
		panic(http.ErrAbortHandler)
	}
	n, err := w.ResponseWriter.Write(p)
	w.written += int64(n)
	w.o.count(n)
	return n, err
}

func (o *object) serve(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(o)
	t.Cleanup(srv.Close)
	return srv
}

// memoryBase is a base RoundTripper that serves o in memory: for
// testing/synctest, where no real connection may block.
func (o *object) memoryBase() http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		if err := r.Context().Err(); err != nil {
			return nil, err
		}
		rec := httptest.NewRecorder()
		f, data, ok := o.prepare(rec, r)
		if f.reset {
			return nil, errReset
		}
		if f.hang {
			<-r.Context().Done()
			return nil, r.Context().Err()
		}
		switch {
		case ok && f.over != 0:
			o.serveOver(rec, r, f, data)
		case ok:
			http.ServeContent(rec, r, "", o.modtime, bytes.NewReader(data))
		}
		resp := rec.Result()
		if f.bare {
			resp.Header.Del("Etag")
			resp.Header.Del("Last-Modified")
		}
		resp.Request = r
		body := rec.Body.Bytes()
		sent := int64(len(body))
		if f.cut > 0 && f.cut < sent {
			sent = f.cut
		}
		o.count(int(sent))
		fb := &faultBody{r: bytes.NewReader(body[:sent]), ctx: r.Context(), stall: f.stall, cut: f.cut > 0 && f.cut < int64(len(body)),
			early: f.early, closed: make(chan struct{})}
		if f.etag != "" {
			resp.Header.Set("Etag", f.etag)
		}
		resp.Body = fb
		return resp, nil
	})
}

// faultBody delivers its bytes, then breaks (io.ErrUnexpectedEOF, as
// net/http reports a short body) or stalls until it is closed or its
// request's context ends.
type faultBody struct {
	r         *bytes.Reader
	ctx       context.Context
	cut       bool
	stall     bool
	early     bool
	closeOnce sync.Once
	closed    chan struct{}
}

func (b *faultBody) Read(p []byte) (int, error) {
	select {
	case <-b.closed:
		return 0, errReadOnClosedBody
	default:
	}
	if b.r.Len() > 0 {
		n, err := b.r.Read(p)
		if b.early && b.r.Len() == 0 {
			err = io.EOF
		}
		return n, err
	}
	if !b.cut {
		return 0, io.EOF
	}
	if b.stall {
		select {
		case <-b.closed:
			return 0, errReadOnClosedBody
		case <-b.ctx.Done():
			return 0, b.ctx.Err()
		}
	}
	return 0, io.ErrUnexpectedEOF
}

func (b *faultBody) Close() error {
	b.closeOnce.Do(func() { close(b.closed) })
	return nil
}

// get sends a GET for srv's object through rt.
func getObject(t *testing.T, rt http.RoundTripper, url string, header ...string) *http.Response {
	t.Helper()
	return getCtx(t, context.Background(), rt, url, header...)
}

func getCtx(t *testing.T, ctx context.Context, rt http.RoundTripper, url string, header ...string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := rt.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// resumePolicy resumes at once, with no budget to run out.
func resumePolicy() Policy {
	p := fastPolicy(2)
	p.Resume.MinBytes = 1
	return p
}

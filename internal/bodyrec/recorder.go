// Package bodyrec records a request body while it is sent, so that
// httpretry may send it again without GetBody.
package bodyrec

import (
	"errors"
	"io"
	"sync"
)

// The errors carry no "httpretry: " prefix: an Event's error never does,
// and the error the caller gets has it once (see the root's errors.go).

// ErrGone is returned to a reader whose next bytes were read by another
// reader and could not be kept, because the body outgrew the limit.
var ErrGone = errors.New("request body is no longer replayable")

// ErrClosed is returned by a Read after Close.
var ErrClosed = errors.New("read on closed request body")

// ErrRevoked is returned to a reader that Revoke stopped: an attempt
// discarded while its transport was still sending the body, once a resend
// has taken it over.
var ErrRevoked = errors.New("request body taken over by a resend")

// Recorder shares one request body without GetBody among the attempts of
// a request. It does not read ahead: the bytes are recorded as the base
// transport reads them, up to limit, so the first byte leaves as early as
// without httpretry, and a resend replays the record, then goes on reading
// the original body where the last reader left it. A body that outgrows
// the limit keeps flowing to the attempt reading it but can no longer be
// replayed, and its record is dropped. With limit 0 nothing is recorded,
// and the body is replayable only while no byte of it has been read: that
// is enough to resend a request that never reached the wire.
//
// The caller's body is closed once, when the request is finished and every
// attempt's transport has closed its reader, since an http.Transport may
// still be reading a body after RoundTrip returned. A Recorder is safe
// for concurrent use; each Reader is one attempt's, read by one goroutine.
type Recorder struct {
	src   io.ReadCloser
	limit int64

	// srcMu is held while reading src, so that mu need not be: a slow
	// source must not stall the attempt loop's bookkeeping.
	srcMu sync.Mutex

	mu       sync.Mutex
	chunks   [][]byte
	size     int64 // bytes in chunks
	n        int64 // bytes read from src
	complete bool  // no byte of src is missing from chunks
	eof      bool
	err      error // sticky read error of src
	sizeHint int64 // ContentLength, if known
	readers  int   // readers not yet closed
	gen      int   // readers of an older generation were revoked
	finished bool  // the request is over: close src when readers reaches 0
	closed   bool  // src closed
}

// New records src, a body of contentLength bytes (-1: unknown), up to
// limit bytes.
func New(src io.ReadCloser, limit, contentLength int64) *Recorder {
	rb := &Recorder{src: src, limit: max(limit, 0), complete: true, sizeHint: contentLength}
	if contentLength > rb.limit {
		// Known to be too long: not one byte is worth recording.
		rb.limit = 0
	}
	return rb
}

// Records reports whether rb keeps any byte: not when its limit is 0, or
// the body is known to be longer. It never changes.
func (rb *Recorder) Records() bool { return rb.limit > 0 }

// Replayable reports whether a new reader would yield the whole body.
func (rb *Recorder) Replayable() bool {
	rb.mu.Lock()
	defer rb.mu.Unlock()
	return rb.replayableLocked()
}

func (rb *Recorder) replayableLocked() bool {
	return rb.err == nil && !rb.closed && (rb.n == 0 || rb.complete)
}

// Untouched reports whether no byte of the body has been read.
func (rb *Recorder) Untouched() bool {
	rb.mu.Lock()
	defer rb.mu.Unlock()
	return rb.n == 0
}

// ReadErr is the error reading the caller's body failed with, if any.
func (rb *Recorder) ReadErr() error {
	rb.mu.Lock()
	defer rb.mu.Unlock()
	return rb.err
}

// Reader returns a new reader from the first byte, or nil if the body can
// no longer be replayed.
func (rb *Recorder) Reader() *Reader {
	rb.mu.Lock()
	defer rb.mu.Unlock()
	if !rb.replayableLocked() {
		return nil
	}
	rb.readers++
	return &Reader{rb: rb, gen: rb.gen}
}

// Busy reports whether a reader is open and may still read the caller's
// body: a discarded attempt whose transport goes on uploading.
func (rb *Recorder) Busy() bool {
	rb.mu.Lock()
	defer rb.mu.Unlock()
	return rb.readers > 0 && !rb.eof && rb.err == nil && !rb.closed
}

// Revoke stops every reader open now from reading further, once a read of
// the caller's body in progress has ended, so that a resend never shares
// the body with the upload of a discarded attempt: that upload could read
// on past the limit and leave the resend with a body cut short.
func (rb *Recorder) Revoke() {
	rb.srcMu.Lock()
	rb.mu.Lock()
	rb.gen++
	rb.mu.Unlock()
	rb.srcMu.Unlock()
}

// Finish says the request is over; the caller's body is closed as soon as
// no attempt's reader is open.
func (rb *Recorder) Finish() {
	rb.mu.Lock()
	rb.finished = true
	c := rb.closeLocked()
	rb.mu.Unlock()
	if c {
		rb.src.Close()
	}
}

// closeLocked reports whether src is to be closed now, and marks it closed.
func (rb *Recorder) closeLocked() bool {
	if rb.finished && rb.readers == 0 && !rb.closed {
		rb.closed = true
		rb.dropRecord()
		return true
	}
	return false
}

// record keeps p, or drops the record if p would take it past the limit.
func (rb *Recorder) record(p []byte) {
	rb.n += int64(len(p))
	if !rb.complete {
		return
	}
	if rb.n > rb.limit {
		rb.complete = false
		rb.dropRecord()
		return
	}
	for len(p) > 0 {
		last := len(rb.chunks) - 1
		if last < 0 || len(rb.chunks[last]) == cap(rb.chunks[last]) {
			rb.chunks = append(rb.chunks, rb.newChunk())
			last++
		}
		c := rb.chunks[last]
		k := copy(c[len(c):cap(c)], p)
		rb.chunks[last] = c[:len(c)+k]
		rb.size += int64(k)
		p = p[k:]
	}
}

// A record is kept in chunks of chunkSize taken from chunkPool, never
// copied as it grows, so that it holds at most the limit plus less than one
// chunk, and a busy client reuses the same memory instead of asking the
// runtime to zero a fresh buffer for every request. A body known to be
// shorter than a chunk gets an exact buffer of its own instead.
const chunkSize = 32 << 10

var chunkPool = sync.Pool{New: func() any { return new([chunkSize]byte) }}

func (rb *Recorder) newChunk() []byte {
	if len(rb.chunks) == 0 && rb.sizeHint > 0 && rb.sizeHint < chunkSize {
		return make([]byte, 0, rb.sizeHint)
	}
	return chunkPool.Get().(*[chunkSize]byte)[:0]
}

// dropRecord gives the record's pooled chunks back. The caller holds mu,
// and no reader can read the record any more.
func (rb *Recorder) dropRecord() {
	for _, c := range rb.chunks {
		if cap(c) == chunkSize {
			chunkPool.Put((*[chunkSize]byte)(c[:chunkSize]))
		}
	}
	rb.chunks, rb.size = nil, 0
}

// copyAt copies recorded bytes from offset off into p.
func (rb *Recorder) copyAt(off int64, p []byte) int {
	n := 0
	for _, c := range rb.chunks {
		if off >= int64(len(c)) {
			off -= int64(len(c))
			continue
		}
		k := copy(p[n:], c[off:])
		n += k
		off = 0
		if n == len(p) {
			break
		}
	}
	return n
}

// Reader is one attempt's view of a Recorder.
type Reader struct {
	rb     *Recorder
	pos    int64
	gen    int  // rb.gen when the reader was made
	closed bool // guarded by rb.mu
}

// Read reads on from r's position: from the record while r is behind the
// reader furthest ahead, then from src, recording what it reads.
func (r *Reader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	for {
		if n, done, err := r.readRecord(p); done {
			return n, err
		}
		if n, done, err := r.readSource(p); done {
			return n, err
		}
	}
}

// readRecord answers a read that needs no byte of src: recorded bytes when
// r is behind, or the end r has reached (closed, revoked, the body's error
// or EOF). done is false when r is at the front and src must be read.
func (r *Reader) readRecord(p []byte) (n int, done bool, err error) {
	rb := r.rb
	rb.mu.Lock()
	defer rb.mu.Unlock()
	switch {
	case r.closed:
		return 0, true, ErrClosed
	case r.gen != rb.gen:
		return 0, true, ErrRevoked
	case r.pos < rb.n:
		if !rb.complete {
			return 0, true, ErrGone
		}
		k := rb.copyAt(r.pos, p)
		r.pos += int64(k)
		return k, true, nil
	case rb.err != nil:
		return 0, true, rb.err
	case rb.eof:
		return 0, true, io.EOF
	case rb.closed:
		return 0, true, ErrClosed
	}
	return 0, false, nil
}

// readSource reads src into p and records what it read. Another reader may
// have read on while r waited for srcMu: then done is false, and the next
// pass serves r from the record or reports the body's end.
func (r *Reader) readSource(p []byte) (n int, done bool, err error) {
	rb := r.rb
	rb.srcMu.Lock()
	rb.mu.Lock()
	ahead := rb.n != r.pos || rb.eof || rb.err != nil || rb.closed || r.gen != rb.gen
	rb.mu.Unlock()
	if ahead {
		rb.srcMu.Unlock()
		return 0, false, nil
	}
	k, err := rb.src.Read(p)
	rb.mu.Lock()
	rb.record(p[:k])
	r.pos += int64(k)
	switch {
	case err == io.EOF:
		rb.eof = true
	case err != nil:
		rb.err = err
	}
	rb.mu.Unlock()
	rb.srcMu.Unlock()
	return k, true, err
}

// Close ends this attempt's use of the body. The caller's body is closed
// when the request is finished and no reader is open.
func (r *Reader) Close() error {
	rb := r.rb
	rb.mu.Lock()
	if r.closed {
		rb.mu.Unlock()
		return nil
	}
	r.closed = true
	rb.readers--
	c := rb.closeLocked()
	rb.mu.Unlock()
	if c {
		return rb.src.Close()
	}
	return nil
}

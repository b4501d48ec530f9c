package httpretry

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/httpretry/httpretry/internal/httprange"
)

// A response body that breaks reaches the caller's Read after RoundTrip
// has returned. resumeBody catches the break there and asks the origin for
// the rest, through a call of its own to that one origin, made at the
// first break (see newCallTo). The engine decides when each resume request
// goes (nextResume), makes, times, charges and waits on it (newAttempt,
// do, reserve, sleep), and judges and applies any outcome that is not an
// answer to the range (judge, apply), so a resume request obeys every rule
// a resend does. What is resume's own is what an answer to the range
// means (judgeResume), how many requests it may make (Resume.Max), and the
// bookkeeping of bytes.

// newResumeBody is a body for resp, the answer of attempt last, that
// resumes from at when it breaks, sending its resume requests as via says.
func newResumeBody(via oneOrigin, last int, at resumeAt, resp *http.Response) *resumeBody {
	return &resumeBody{oneOrigin: via, resp: resp, at: at, last: last, pos: at.first, from: at.first,
		cur: resp.Body}
}

// resumeBody is a response body that continues from the byte it reached
// when the body under it breaks. Read is the caller's, never concurrent
// with itself; Close may come from any goroutine at any time and ends
// everything: a wait, a resume request in flight, the body being read.
type resumeBody struct {
	// oneOrigin is where the resume requests go: the origin the body came
	// from, never another, since a validator belongs to one. Its req is
	// the caller's.
	oneOrigin
	resp *http.Response // the caller's, which the trailers of a resumed body's end go to
	at   resumeAt

	// Read's own state.
	pos     int64          // the representation's next byte to deliver
	from    int64          // pos when the current body began to deliver
	skip    int64          // bytes the current body sends before pos: a 200 to a resume request
	longer  bool           // the current body is the whole representation, which goes on past at.last
	src     *http.Response // the current body's response, if a resume request's
	resumes int            // resume requests sent
	stuck   int            // breaks and failed resume requests in a row with no byte between
	last    int            // the attempt that ended last: the broken body's, or a failed resume's
	cause   error          // the latest break: resumed while cur is nil, wrapped by the errors after it
	err     error          // what every further Read returns: io.EOF, or why the body ended
	c       *call          // sends the resume requests; made at the first break

	// Shared with Close and the idle timer.
	mu     sync.Mutex
	cur    io.ReadCloser      // the body being read; nil between a break and its resumption (Read's to write)
	closed bool               // the caller closed the body
	cancel context.CancelFunc // ends the resume requests; nil before the first
	timer  *time.Timer        // the current body's idle timer; nil before its first Read
	// shut is the body closed last: the idle timer, Close and a Read
	// that ends may each let go of the same one, which is closed once.
	shut io.ReadCloser
}

// shutOnce closes cur unless it is closed already.
func (b *resumeBody) shutOnce(cur io.ReadCloser) error {
	b.mu.Lock()
	if b.shut == cur {
		b.mu.Unlock()
		return nil
	}
	b.shut = cur
	b.mu.Unlock()
	return cur.Close()
}

// Read delivers the representation's bytes in order, each once, resuming
// after a break. A Read that got bytes before a break returns them; the
// next one resumes.
func (b *resumeBody) Read(p []byte) (int, error) {
	if len(p) == 0 && b.err == nil {
		return 0, nil // nothing to read into, not even a skipped byte
	}
	for {
		if b.err != nil {
			return 0, b.err
		}
		if b.cur == nil {
			if err := b.resume(); err != nil {
				b.end(err)
				return 0, err
			}
			continue
		}
		n, err := b.readCurrent(p)
		b.pos += int64(n)
		if end, err := b.settleRead(err); end {
			return n, err
		}
		if n > 0 {
			return n, nil
		}
	}
}

// settleRead says what a read of the current body that ended with err
// means. With end, the caller gets the bytes and the error returned (nil:
// the bytes alone). Otherwise the body broke, and the next read resumes it.
func (b *resumeBody) settleRead(err error) (end bool, _ error) {
	switch {
	case err == nil:
		return true, nil
	case err == errPastEnd:
		err = b.ranPast()
		b.end(err)
		return true, err
	case b.pos > b.at.last:
		// Every byte is delivered: an error after the last one (a reset
		// before the chunk's end) loses nothing.
		if err == io.EOF {
			b.keepTrailer()
		}
		b.end(io.EOF)
		return true, io.EOF
	case err == io.EOF:
		// Before the declared length, whatever the caller is doing: a
		// truncated body must never read as complete.
		err = io.ErrUnexpectedEOF
		if b.callersDoing() {
			b.end(err)
			return true, err
		}
	case b.callersDoing():
		if err == errBodyIdle {
			err = errReadOnClosedBody // Close stopped the timer, which had not fired
		}
		b.end(err)
		return true, err
	}
	b.broke(err)
	return false, nil
}

// readCurrent reads the current body into p: past the bytes it repeats,
// and no further than at.last. Past at.last, a body that is not longer by
// design must end: one that has another byte fails with errPastEnd, which
// delivers nothing, since a byte beyond the end that the headers declare
// may be of another representation.
func (b *resumeBody) readCurrent(p []byte) (int, error) {
	cur := b.cur
	for b.skip > 0 {
		m, err := b.readTimed(cur, p[:min(int64(len(p)), b.skip)])
		b.skip -= int64(m)
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return 0, err
		}
	}
	left := b.at.last + 1 - b.pos
	switch {
	case left > 0:
		return b.readTimed(cur, p[:min(int64(len(p)), left)])
	case b.longer:
		return 0, io.EOF
	}
	// p is scratch space: what this Read gets is never delivered.
	n, err := b.readTimed(cur, p)
	if n > 0 {
		return 0, errPastEnd
	}
	return 0, err
}

// readTimed is one Read of cur, which, with Resume.Idle set, fails with
// errBodyIdle when no byte came for Idle: the timer closes cur, and is
// re-armed for every Read rather than made anew.
func (b *resumeBody) readTimed(cur io.ReadCloser, p []byte) (int, error) {
	idle := b.p.resume.idle
	if idle <= 0 {
		return cur.Read(p)
	}
	if b.timer == nil {
		t := time.AfterFunc(idle, func() { b.shutOnce(cur) })
		b.mu.Lock()
		b.timer = t
		b.mu.Unlock()
	} else {
		b.timer.Reset(idle)
	}
	n, err := cur.Read(p)
	if !b.timer.Stop() {
		// It fired during this Read (or Close stopped it, which Read's
		// caller tells apart): cur is closed, or about to be.
		return n, errBodyIdle
	}
	return n, err
}

// callersDoing reports whether a failed Read is the caller's own doing:
// its Close, or its context ending.
func (b *resumeBody) callersDoing() bool {
	b.mu.Lock()
	closed := b.closed
	b.mu.Unlock()
	return closed || b.req.Context().Err() != nil
}

// broke lets go of the current body, which failed with err, and notes
// whether it delivered anything: a resume after progress goes at once.
func (b *resumeBody) broke(err error) {
	b.mu.Lock()
	cur := b.cur
	b.cur, b.timer = nil, nil
	b.mu.Unlock()
	b.shutOnce(cur)
	if b.pos > b.from {
		b.stuck = 0
	} else {
		b.stuck++
	}
	b.cause = err
}

// end makes err what every further Read returns and releases everything
// the body holds.
func (b *resumeBody) end(err error) {
	b.err = err
	b.mu.Lock()
	cur, cancel := b.cur, b.cancel
	b.cur, b.timer = nil, nil
	b.mu.Unlock()
	if cur != nil {
		b.shutOnce(cur)
	}
	if cancel != nil {
		cancel()
	}
}

// Close ends the body at once: a wait for a resume, a resume request in
// flight and the body being read.
func (b *resumeBody) Close() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	cur, cancel, timer := b.cur, b.cancel, b.timer
	b.mu.Unlock()
	if timer != nil {
		timer.Stop()
	}
	if cancel != nil {
		cancel()
	}
	if cur != nil {
		return b.shutOnce(cur)
	}
	return nil
}

// resumeVerdict is what a response to a resume request means.
type resumeVerdict uint8

const (
	// resumeAccepted: the rest, exactly, a 206 of the range asked for.
	resumeAccepted resumeVerdict = iota + 1
	// resumeWhole: the same representation whole, a 200 whose start is
	// skipped.
	resumeWhole
	// resumeChanged: another representation, of which nothing may be
	// delivered.
	resumeChanged
	// resumeOther: no answer to the range, judged as any response is:
	// a failure the policy retries, or another answer, which ends the
	// body.
	resumeOther
)

// judgeResume decides what resp, the response to a resume request from
// pos of the body at, means: the rest, the whole again, or another
// representation. It reads only headers. Any other status is no answer
// to the range (resumeOther): the call judges it as any other response.
func judgeResume(resp *http.Response, pos int64, at *resumeAt) resumeVerdict {
	h := resp.Header
	switch resp.StatusCode {
	case http.StatusPartialContent:
		// A server may honour Range and ignore If-Range: the validator's
		// field, where the 206 has it, says which version the range is of.
		// Without it, the 206 is trusted to have honoured If-Range.
		first, last, size, ok := httprange.ParseContentRange(h["Content-Range"])
		if !ok || first != pos || last != at.last || size != at.size || !httprange.IdentityCoded(h) ||
			resp.ContentLength >= 0 && resp.ContentLength != last-first+1 {
			return resumeChanged
		}
		if named, same := at.validator.In(h); named && !same {
			return resumeChanged
		}
		return resumeAccepted
	case http.StatusOK:
		if named, same := at.validator.In(h); !named || !same || !httprange.IdentityCoded(h) || resp.Uncompressed ||
			resp.ContentLength >= 0 && resp.ContentLength != at.size {
			return resumeChanged
		}
		return resumeWhole
	case http.StatusRequestedRangeNotSatisfiable:
		return resumeChanged
	}
	return resumeOther
}

// resume asks the origin for the rest after the break b.cause, as many
// times as the policy allows, and makes the body that delivers it the
// current one; or it says why the body ends.
func (b *resumeBody) resume() error {
	var res reservation // paid and not yet sent
	// An observer that panics leaves nothing of the body behind, and the
	// charge of a resume request it was told of given back.
	defer func() {
		if v := recover(); v != nil {
			res.refund()
			b.end(errReadOnClosedBody)
			panic(v)
		}
	}()
	c, err := b.sender()
	if err != nil {
		return err
	}
	var last resumeFailure // the latest resume request's
	for {
		if b.isClosed() {
			return errReadOnClosedBody
		}
		var (
			wait   time.Duration
			reason Reason
		)
		wait, res, reason = b.plan(time.Now())
		if reason != 0 {
			return b.giveUp(reason, last.status, last.err)
		}
		b.emit(Event{Kind: EventResume, Attempt: b.last, Status: last.status, Err: cmp.Or(last.err, b.cause),
			Delay: wait, Offset: b.pos - b.at.first})
		if reason, err := c.sleep(c.req.Context(), wait); err != nil {
			res.refund()
			res = reservation{}
			if b.isClosed() {
				return errReadOnClosedBody
			}
			return b.giveUp(reason, 0, err)
		}
		res = reservation{} // sent: the charge stands
		var done bool
		if last, done, err = b.ask(c); done {
			return err
		}
	}
}

// resumeFailure is a resume request that failed in a way worth another:
// its error, and its status, 0 for an error.
type resumeFailure struct {
	err    error
	status int
}

// sender is the call that sends the resume requests, made at the first
// break (see newCallTo), in a context Close cancels; an error when the
// caller closed the body first.
func (b *resumeBody) sender() (*call, error) {
	if b.c != nil {
		return b.c, nil
	}
	ctx, cancel := context.WithCancel(b.req.Context())
	b.mu.Lock()
	closed := b.closed
	b.cancel = cancel
	b.mu.Unlock()
	if closed {
		cancel()
		return nil, errReadOnClosedBody
	}
	b.c = newCallTo(&b.oneOrigin, ctx)
	return b.c, nil
}

// ask sends the next resume request through c, paid for, and judges what
// comes back: done with the body delivering again (err nil) or ending
// with err; or not done, with the failure that calls for another request.
// Any answer but the range's is judged and applied as the loop does (see
// judge and apply), which notes a failure's Retry-After.
func (b *resumeBody) ask(c *call) (failed resumeFailure, done bool, err error) {
	b.resumes++
	n := b.sent + b.resumes
	b.last = n
	c.header = b.rangeHeader()
	a, r := c.newAttempt(n, &c.targets[0], http.NoBody, false)
	c.sent = n
	resp, err := c.do(a, r)
	if err != nil && b.isClosed() {
		a.end()
		return failed, true, errReadOnClosedBody
	}
	if err == nil {
		v := judgeResume(resp, b.pos, &b.at)
		if v != resumeOther {
			a.answered(resp) // no verdict to apply: its origin hears it here
		}
		switch v {
		case resumeAccepted, resumeWhole:
			return failed, true, b.take(a, resp)
		case resumeChanged:
			a.discard(resp)
			return failed, true, b.giveUp(ReasonBodyChanged, resp.StatusCode, nil)
		}
	}
	o := c.judge(a, resp, err, clockFor(resp))
	c.apply(&o)
	return b.settle(c, o)
}

// settle lets go of o, a resume request's outcome that is no answer to
// its range, and says whether another may follow: only after a failure
// the policy retries and the call does not refuse (see refusal).
func (b *resumeBody) settle(c *call, o outcome) (failed resumeFailure, done bool, err error) {
	o.a.discard(o.resp)
	failed = resumeFailure{err: o.err}
	if o.resp != nil {
		failed = resumeFailure{answered(o.resp), o.resp.StatusCode}
	}
	reason := ReasonNotRetryable
	if o.failure {
		reason = c.refusal(o)
	}
	if reason != 0 {
		return resumeFailure{}, true, b.giveUp(reason, failed.status, failed.err)
	}
	b.stuck++
	return failed, false, nil
}

// answered is the error of a resume request answered with resp.
func answered(resp *http.Response) error {
	return fmt.Errorf("resume request answered %s", resp.Status)
}

// plan decides, at now, whether the next resume request may go and after
// how long (see nextResume), and pays for it: the call's own decision and
// reservation.
func (b *resumeBody) plan(now time.Time) (time.Duration, reservation, Reason) {
	if b.resumes >= b.p.resume.max {
		return 0, reservation{}, ReasonExhausted
	}
	c := b.c
	s, reason := c.nextResume(now, b.stuck)
	if reason != 0 {
		return 0, reservation{}, reason
	}
	res, ok := c.reserve(&c.targets[s.to], now)
	if !ok {
		return 0, reservation{}, ReasonBudget
	}
	c.attempted(s)
	c.spend(s)
	return s.wait, res, 0
}

// rangeHeader is the caller's header with the range of the rest, pinned
// to the validator: a fresh map per request, since an attempt's transport
// may still read the last one's.
func (b *resumeBody) rangeHeader() http.Header {
	h := b.req.Header.Clone()
	if h == nil {
		h = make(http.Header, 2)
	}
	v := "bytes=" + strconv.FormatInt(b.pos, 10) + "-"
	if b.at.last != b.at.size-1 {
		v += strconv.FormatInt(b.at.last, 10)
	}
	h.Set("Range", v)
	h.Set("If-Range", b.at.validator.Value)
	return h
}

// take makes resp, an accepted answer to attempt a, the current body.
func (b *resumeBody) take(a *attempt, resp *http.Response) error {
	body := a.deliver(resp).Body
	b.mu.Lock()
	closed := b.closed
	if !closed {
		b.cur = body
	}
	b.mu.Unlock()
	if closed {
		body.Close()
		return errReadOnClosedBody
	}
	b.from, b.skip, b.longer, b.src = b.pos, 0, false, resp
	if resp.StatusCode == http.StatusOK {
		// The whole representation again: what was delivered is skipped,
		// and Read stops at the caller's range.
		b.skip, b.longer = b.pos, b.at.last != b.at.size-1
	}
	return nil
}

// ranPast is the error of a current body that runs on past at.last. After
// a resume it is the resume's answer that is not what it said:
// ErrBodyChanged, announced as a give-up.
func (b *resumeBody) ranPast() error {
	if b.src == nil {
		return errPastEnd
	}
	return b.giveUp(ReasonBodyChanged, b.src.StatusCode, errPastEnd)
}

// keepTrailer gives the caller's response the trailers of a resume's
// answer that ended: the caller looks for them in the response it got,
// whose own body never reached its trailers.
func (b *resumeBody) keepTrailer() {
	if b.src == nil || b.longer || len(b.src.Trailer) == 0 {
		return
	}
	if b.resp.Trailer == nil {
		b.resp.Trailer = make(http.Header, len(b.src.Trailer))
	}
	maps.Copy(b.resp.Trailer, b.src.Trailer)
}

func (b *resumeBody) isClosed() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.closed
}

// giveUp announces that the body ends on b.cause for reason, and returns
// the error the caller reads: it wraps b.cause, and last, the latest
// resume request's failure or what was wrong with its answer, if any;
// status is that request's.
func (b *resumeBody) giveUp(reason Reason, status int, last error) error {
	off := b.pos - b.at.first
	b.emit(Event{Kind: EventGiveUp, Attempt: b.last, Status: status, Err: b.cause, Reason: reason,
		Offset: off})
	switch {
	case reason == ReasonBodyChanged && last != nil:
		return fmt.Errorf("%w (after %d bytes): %w: %w", ErrBodyChanged, off, last, b.cause)
	case reason == ReasonBodyChanged:
		return fmt.Errorf("%w (after %d bytes): %w", ErrBodyChanged, off, b.cause)
	}
	why := reason.String()
	if reason == ReasonBudget {
		why = "retry budget of " + b.to.host + " spent" // whose, as the loop says
	}
	const broke = "httpretry: response body broke after %d bytes; not resumed: %s after %d resume request(s)"
	if last != nil {
		return fmt.Errorf(broke+": %w: %w", off, why, b.resumes, last, b.cause)
	}
	return fmt.Errorf(broke+": %w", off, why, b.resumes, b.cause)
}

// emit tells the observers of e, about the body's origin, as the call's
// emit does, with the caller's own request.
func (b *resumeBody) emit(e Event) {
	obs := b.t.observers
	if len(obs) == 0 || !obs.want(b.req.Context(), e.Kind) {
		return
	}
	e.Request = b.req
	e.Origin = b.to.origin()
	obs.emit(e)
}

package sim_test

import (
	"bytes"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/httpretry/httpretry"
	"github.com/httpretry/httpretry/internal/fakeorigin"
)

// A small answer arrives whole (DESIGN point 24): the sim's own reading
// of which answers httpretry reads into memory before RoundTrip returns,
// and what becomes of them. An eligible answer settles when its body is
// whole, not when its headers came; one cut short is a transport error
// (the attempt failed, its response closed by httpretry and never
// delivered), resent as any.

// prefetchLimit is the largest answer p reads whole; negative: none.
func prefetchLimit(p httpretry.Policy) int64 {
	if p.Prefetch == 0 {
		return 64 << 10
	}
	return p.Prefetch
}

// untimed reports whether no attempt under p needs a timer: with
// MaxRetries 0 and nowhere else to go, a request then passes through
// untouched (point 20), and its answer is handed back as it comes.
func untimed(p httpretry.Policy) bool { return p.PerTryTimeout == 0 && p.Deadline == 0 }

// retriedBy reports whether p retries status (simRetryIf when RetryIf is
// set).
func retriedBy(p httpretry.Policy, status int) bool {
	sr := simReq{pol: p}
	return sr.retried(status)
}

// prefetches reports whether the answer of a, an attempt of sr that got
// resp, is read whole under p: sr may be resent (its method, a key on the
// attempt or WithIdempotent), is not an Upgrade nor a HEAD, resp is an
// answer under p (any, with RetryIf) that is not 1xx, 204 or 304, with a
// known length in (0, Prefetch]; never a resume request's, nor a request
// that passes through.
func prefetches(p httpretry.Policy, sr *simReq, a *simAttempt, resp *http.Response, passes bool) bool {
	m := sr.plan.method
	resendable := m == "GET" || m == "HEAD" || m == "PUT" || m == "DELETE" || sr.plan.idem ||
		a.header.Get("Idempotency-Key") != ""
	code := resp.StatusCode
	switch {
	case a.resume || passes || !resendable || sr.plan.upgrade || m == "HEAD":
		return false
	case code < 200 || code == http.StatusNoContent || code == http.StatusNotModified:
		return false
	case resp.ContentLength <= 0 || resp.ContentLength > prefetchLimit(p):
		return false
	}
	return p.RetryIf != nil || !retriedBy(p, code)
}

// readsWhole reports whether a, an attempt of sr whose response came back,
// is read whole by the transport that reads the base's bodies: the inner
// when nested and timed (an untimed inner passes through), or the outer,
// which reads whatever the inner handed back.
func (run *simRun) readsWhole(sr *simReq, a *simAttempt, resp *http.Response) bool {
	if sr == nil {
		return false
	}
	if run.cfg.nested {
		inner := run.cfg.inner
		return prefetches(inner, sr, a, resp, untimed(inner)) ||
			prefetches(sr.pol, sr, a, resp, sr.maxRetries == 0 && len(sr.cands) == 1 && untimed(sr.pol))
	}
	return prefetches(sr.pol, sr, a, resp, sr.maxRetries == 0 && len(sr.cands) == 1 && untimed(sr.pol))
}

// arrivesWhole reports whether a read of exactly cl bytes of b, then one
// more Read, meets no error but io.EOF: what httpretry asks of an answer
// before it hands it back. A body that runs past cl is whole at cl (the
// extra bytes are dropped); one that breaks at cl is whole only when the
// break is an early io.EOF, and not when the error comes with the last
// bytes, or the next byte, or the body stalls there.
func arrivesWhole(b *fakeorigin.Body, cl int64) bool {
	end := int64(len(b.Data))
	if b.Cut >= 0 {
		end = int64(b.Cut)
	}
	joined := b.Joined && !b.Whole() && b.Break != fakeorigin.Stall
	switch {
	case end < cl:
		return false
	case end == cl:
		return b.Whole() || b.Break == fakeorigin.EarlyEOF
	case end == cl+1:
		return !joined // the one more byte comes with the break's error
	}
	return true
}

// Close notes when httpretry, reading a's answer whole, let go of it: the
// instant the attempt's outcome is known.
func (b *simBody) Close() error {
	first := b.Closes() == 0
	err := b.Body.Close()
	a := b.att
	if !first || a == nil || !a.pre {
		return err
	}
	run := b.run
	run.mu.Lock()
	if !a.back {
		a.settled, a.ctxDone, a.back = time.Now(), b.ctx.Err() != nil, true
	}
	run.mu.Unlock()
	if a.broke {
		run.logf(a.req, "attempt %d: its answer was cut before it was whole", a.n)
	}
	run.kickSampler()
	return err
}

// drawPrefetch draws Prefetch for every policy of a run, from a stream of
// its own so that the rest of the run stays as it was: the default,
// never, or a small value that answers fall on either side of; and, for
// some GETs of objects, a size around it. Policies with RetryIf get one
// that reads the bodies read whole, half the time.
func drawPrefetch(seed uint64, cfg *runConfig) {
	r := rand.New(rand.NewPCG(seed, 0x9fe7))
	pf := pick[int64](r, 0, 0, -1, 17, 300, 1000, 4096)
	for i := range cfg.policies {
		cfg.policies[i].Prefetch = pf
	}
	if cfg.nested {
		cfg.inner.Prefetch = pf
	}
	cfg.readingRetryIf = r.IntN(2) == 0
	cfg.smallCuts = r.IntN(3) == 0
	if pf <= 0 {
		return
	}
	for i := range cfg.clients {
		for j := range cfg.clients[i].reqs {
			if q := &cfg.clients[i].reqs[j]; q.object && r.IntN(2) == 0 {
				q.objSize = int(max(1, pf+pick[int64](r, -1, 0, 0, 1)))
			}
		}
	}
}

// readingRetryIf is simRetryIf, which also reads the body of an answer
// read whole (the contract lets it), some of it or all, and checks that
// it is the answer's, from its first byte: a body another RetryIf read
// before was rewound.
func (run *simRun) readingRetryIf(resp *http.Response, err error) bool {
	if resp != nil {
		run.readForRetryIf(resp)
	}
	return simRetryIf(resp, err)
}

func (run *simRun) readForRetryIf(resp *http.Response) {
	b := run.bodyOf(resp)
	if b == nil || !b.att.pre || b.att.broke || run.cfg.nested {
		return // a body not read whole must not be read
	}
	cl := int(b.att.respCL)
	n := cl
	if b.id%2 == 1 {
		n = cl / 2
	}
	got, err := io.ReadAll(io.LimitReader(resp.Body, int64(n)))
	run.mu.Lock()
	run.tally["answers RetryIf read"]++
	run.mu.Unlock()
	if err != nil || !bytes.Equal(got, b.Data[:n]) {
		run.violate(b.att.req, "retryif-reads", "RetryIf read %d bytes (%v) of attempt %d's answer, not its first %d",
			len(got), err, b.att.n, n)
	}
}

// bodyOf is the sim's body that resp carries (X-Sim-Body), or nil.
func (run *simRun) bodyOf(resp *http.Response) *simBody {
	id, err := strconv.Atoi(resp.Header.Get("X-Sim-Body"))
	if err != nil {
		return nil
	}
	run.mu.Lock()
	defer run.mu.Unlock()
	if id < 0 || id >= len(run.bodies) {
		return nil
	}
	return run.bodies[id]
}

// checkPrefetchReturn: the answer RoundTrip hands back, when read whole,
// was whole and let go of before RoundTrip returned.
func (run *simRun) checkPrefetchReturn(sr *simReq, b *simBody) {
	a := b.att
	if !a.pre || run.cfg.nested {
		return // nested, the sim does not tell which transport reads it
	}
	if a.broke && !sr.possiblyCut(a) {
		run.violate(sr, "prefetch-whole", "RoundTrip returned attempt %d's %d, whose body (%d bytes declared) was cut",
			a.n, a.status, a.respCL)
	}
	if b.Closes() == 0 {
		run.violate(sr, "prefetch-whole", "RoundTrip returned attempt %d's answer read whole, its body not let go of",
			a.n)
	}
}

// checkWholeBody: a body read whole reaches the caller as the first
// Content-Length bytes the origin sent, never fewer to io.EOF nor more.
func (run *simRun) checkWholeBody(sr *simReq, b *simBody) {
	want := b.Data[:min(int(b.att.respCL), len(b.Data))]
	if !bytes.HasPrefix(want, sr.respData) || sr.readEOF && len(sr.respData) != int(b.att.respCL) ||
		sr.respErr != nil && !sr.callersDoing() {
		run.violate(sr, "prefetch-body", "the caller read %d bytes (EOF %v, %v) of body %d read whole: %d declared, "+
			"%d sent, cut at %d", len(sr.respData), sr.readEOF, sr.respErr, b.id, b.att.respCL, len(b.Data), b.Cut)
	}
}

// checkPrefetchCuts: every eligible answer cut short is a failed attempt:
// the request is resent after it, or another attempt's outcome is
// returned, or it ends in an error, which names the cut when the cut
// attempt was the last and nothing else ended the request.
func (run *simRun) checkPrefetchCuts(sr *simReq) {
	var last *simAttempt
	for _, a := range sr.attempts {
		if last == nil || a.n > last.n {
			last = a
		}
		if a.pre {
			run.tally["answers read whole"]++
			if a.broke {
				run.tally["answers cut before they were whole"]++
				if a.resp.Break == fakeorigin.Stall {
					run.tally["answers stalled before they were whole"]++
				}
			}
			if cl := a.respCL; cl == prefetchLimit(sr.pol) {
				run.tally["answers of exactly Prefetch bytes"]++
			}
		} else if a.resp != nil && a.respCL > 0 && a.respCL == prefetchLimit(sr.pol)+1 {
			run.tally["answers one byte past Prefetch"]++
		}
	}
	if last == nil || !last.pre || !last.broke || sr.panicVal != nil || run.cfg.nested {
		return
	}
	if sr.err == nil && sr.respBody == last.resp.id {
		return // reported by prefetch-whole
	}
	if sr.err == nil || sr.possiblyCut(last) || sr.touched || sr.pol.Hedge != (httpretry.Hedge{}) ||
		sr.ctx.Err() != nil {
		return // another attempt's outcome, or the caller's end, may be what ended it
	}
	run.tally["requests that ended on a cut answer"]++
	if !strings.Contains(sr.err.Error(), "response body broke after ") {
		run.violate(sr, "prefetch-cut-reason", "the last attempt %d's answer was cut, RoundTrip returned %v",
			last.n, sr.err)
	}
}

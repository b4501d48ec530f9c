package sim_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/httpretry/httpretry"
	"github.com/httpretry/httpretry/internal/fakeorigin"
)

// The invariants. Each is exact where the contract is, and elsewhere a
// bound that cannot be wrong: a false alarm is a defect of the
// simulator, and any violation fails the seed.

// passesThrough reports whether sr is sent once, to its own origin: no
// resend, no other candidate. Its time bounds still hold (point 20), but
// the loop's events and budget records are not promised for it.
func (sr *simReq) passesThrough() bool { return sr.maxRetries == 0 && len(sr.cands) == 1 }

// callerEnd is the earliest instant at which the caller ends sr: its
// context's deadline or its cancel.
func (sr *simReq) callerEnd() time.Time {
	if !sr.cancelAt.IsZero() && (sr.ctxDL.IsZero() || sr.cancelAt.Before(sr.ctxDL)) {
		return sr.cancelAt
	}
	return sr.ctxDL
}

// retried reports whether status is one the policy retries.
func (sr *simReq) retried(status int) bool {
	if sr.pol.RetryIf != nil {
		return status == 502 || status == 503 // simRetryIf
	}
	if sr.pol.RetryOn == nil {
		return status == 429 || status == 502 || status == 503 || status == 504
	}
	for _, s := range sr.pol.RetryOn {
		if s == status {
			return true
		}
	}
	return false
}

// cutBy is the earliest instant at which something outside the attempt
// (the caller, the policy's deadline) ends sr's attempts; zero: none.
func (sr *simReq) cutBy() time.Time {
	t := sr.ctxDL
	for _, u := range []time.Time{sr.deadline, sr.cancelAt} {
		if !u.IsZero() && (t.IsZero() || u.Before(t)) {
			t = u
		}
	}
	return t
}

// possiblyCut reports whether a's response may have been cut by a timer
// firing at the same instant (PerTryTimeout, the deadline, the caller),
// in which case the loop may have seen an error instead.
func (sr *simReq) possiblyCut(a *simAttempt) bool {
	if a.ctxDone {
		return true
	}
	if pt := sr.pol.PerTryTimeout; pt > 0 && !a.settled.Before(a.start.Add(pt)) {
		return true
	}
	if c := sr.cutBy(); !c.IsZero() && !a.settled.Before(c) {
		return true
	}
	return false
}

// asReturned is sr as RoundTrip left it, to check while a probe may still
// run on alone (point 23): an attempt the base has not returned from shows
// what it was sent with, and later events are not seen.
func (run *simRun) asReturned(sr *simReq) *simReq {
	run.mu.Lock()
	defer run.mu.Unlock()
	v := *sr
	v.events = slices.Clone(sr.events)
	v.attempts = make([]*simAttempt, len(sr.attempts))
	for i, a := range sr.attempts {
		if !a.back {
			a = &simAttempt{req: a.req, seq: a.seq, n: a.n, origin: a.origin, url: a.url, start: a.start,
				header: a.header, method: a.method, hadBody: a.hadBody}
		}
		v.attempts[i] = a
	}
	return &v
}

// checkReturn checks what RoundTrip did, as soon as it returned; what
// depends on whether the hold may have acted on it (point 22) is checked
// at the end of the run on the same snapshot (checkEnd reads atReturn).
func (run *simRun) checkReturn(orig *simReq, resp *http.Response) {
	sr := run.asReturned(orig)
	if sr.panicVal != nil {
		if _, ok := sr.panicVal.(simPanic); !ok {
			run.violate(sr, "no-panic", "RoundTrip panicked: %v", sr.panicVal)
		}
		return
	}
	if (resp == nil) == (sr.err == nil) {
		run.violate(sr, "response-xor-error", "response %v and error %v", resp != nil, sr.err)
	}
	run.checkUnmodified(sr)
	if bound := sr.cutBy(); !bound.IsZero() && sr.end.After(bound.Add(sr.slept)) {
		run.violate(sr, "returns-by-deadline",
			"RoundTrip returned %v after the start, past its bound at %v (observers slept %v)",
			sr.end.Sub(sr.start), bound.Sub(sr.start), sr.slept)
	}
	if pt := sr.pol.PerTryTimeout; pt > 0 && sr.maxRetries == 0 && len(sr.cands) == 1 &&
		sr.end.After(sr.oneTryBound(pt).Add(sr.slept)) {
		// MaxRetries 0 drops no time bound (point 20): the one attempt
		// is cut at PerTryTimeout, and RoundTrip returns then, or once
		// an answer whose headers came by then is read whole (point 24).
		run.violate(sr, "one-try-bound", "one attempt allowed, RoundTrip returned %v after the start, "+
			"PerTryTimeout %v (observers slept %v)", sr.end.Sub(sr.start), pt, sr.slept)
	}
	if end := sr.callerEnd(); !end.IsZero() && !run.cfg.nested && !sr.end.Before(end) && sr.slept == 0 &&
		!sr.passesThrough() && sr.waitingAt(end) {
		// The caller ended the request during a wait: it gets its
		// context's error, wrapped, and no response.
		if cause := sr.ctx.Err(); resp != nil || !errors.Is(sr.err, cause) {
			run.violate(sr, "canceled-in-wait", "the caller ended it at %v during a wait, RoundTrip returned at %v: %d, %v (not %v)",
				end.Sub(sr.start), sr.end.Sub(sr.start), sr.status, sr.err, cause)
		}
	}
	run.checkAttempts(sr)
	run.mu.Lock()
	orig.atReturn = sr
	run.mu.Unlock()
	if !run.cfg.nested {
		run.checkRetryAfter(sr)
		run.checkAnswerKept(sr)
	}
	if resp != nil && sr.respBody >= 0 {
		run.mu.Lock()
		b := run.bodies[sr.respBody]
		run.mu.Unlock()
		run.checkPrefetchReturn(sr, b)
		if b.att.req.id() != sr.id() {
			run.violate(sr, "response-own", "the response returned is body %d of request %d", b.id, b.att.req.id())
		} else if b.att.status != resp.StatusCode {
			run.violate(sr, "response-own", "status %d returned, the attempt got %d", resp.StatusCode, b.att.status)
		}
	}
}

func (run *simRun) checkUnmodified(sr *simReq) {
	now := snapshot(sr.req)
	was := sr.snap
	if now.method != was.method || now.url != was.url || now.host != was.host ||
		now.contentLength != was.contentLength || now.body != was.body || now.getBody != was.getBody ||
		!reflect.DeepEqual(now.header, was.header) {
		run.violate(sr, "request-unmodified", "the caller's request changed: %+v, was %+v", now, was)
	}
}

// checkAttempts checks every attempt of sr against the request itself:
// the pool, safety, where it went, what it carried, and its time bounds.
func (run *simRun) checkAttempts(sr *simReq) {
	run.mu.Lock()
	atts := append([]*simAttempt(nil), sr.attempts...)
	run.mu.Unlock()
	unkeyed := sr.unkeyed && !(run.cfg.nested && run.cfg.inner.AutoIdempotencyKey)
	reached := 0
	key := ""
	for _, a := range atts {
		if a.reached {
			reached++
		}
		isCand := false
		for _, c := range sr.cands {
			isCand = isCand || c == a.origin
		}
		if !isCand {
			run.violate(sr, "candidates", "attempt %d went to %s, not a candidate", a.n, a.origin.url)
		}
		if strings.HasPrefix(sr.url, "https:") && strings.HasPrefix(a.url, "http:") {
			run.violate(sr, "no-downgrade", "attempt %d of an https request went to %s", a.n, a.url)
		}
		if a.method != sr.plan.method || !strings.HasSuffix(a.url, sr.plan.path) ||
			strings.TrimPrefix(a.url, a.origin.url) != sr.plan.path {
			run.violate(sr, "same-request", "attempt %d is %s %s for %s %s", a.n, a.method, a.url, sr.plan.method, sr.url)
		}
		for k, v := range sr.snap.header {
			if !reflect.DeepEqual(a.header[k], v) {
				run.violate(sr, "headers", "attempt %d has %s: %q, the caller's %q", a.n, k, a.header[k], v)
			}
		}
		for k := range a.header {
			if _, ok := sr.snap.header[k]; !ok && k != "Idempotency-Key" {
				run.violate(sr, "headers", "attempt %d has a header %s the caller did not set", a.n, k)
			}
		}
		if _, own := sr.snap.header["Idempotency-Key"]; !own && a.reached {
			if k := a.header.Get("Idempotency-Key"); k != "" {
				if key != "" && k != key {
					run.violate(sr, "one-key", "attempt %d carries key %q, an earlier one %q", a.n, k, key)
				}
				key = k
			}
		}
		if !sr.deadline.IsZero() && a.start.After(sr.deadline) {
			run.violate(sr, "no-attempt-after-deadline", "attempt %d started %v after the deadline",
				a.n, a.start.Sub(sr.deadline))
		}
		if cb := sr.callerEnd(); !cb.IsZero() && a.start.After(cb) {
			run.violate(sr, "no-attempt-after-end", "attempt %d started %v after the request's end at %v",
				a.n, a.start.Sub(cb), cb.Sub(sr.start))
		}
		if !sr.deadline.IsZero() && a.settled.After(sr.deadline) {
			run.violate(sr, "attempt-by-deadline", "attempt %d went on %v past the deadline",
				a.n, a.settled.Sub(sr.deadline))
		}
		if pt := run.perTry(); pt > 0 && a.headers.Sub(a.start) > pt {
			run.violate(sr, "per-try-timeout", "attempt %d waited %v for headers, PerTryTimeout %v",
				a.n, a.headers.Sub(a.start), pt)
		}
	}
	if unkeyed && reached > 1 {
		run.violate(sr, "unkeyed-once", "an unkeyed %s reached origins %d times", sr.plan.method, reached)
	}
	if run.cfg.nested {
		return
	}
	seen := make([]bool, len(atts)+1)
	for _, a := range atts {
		if a.n < 1 || a.n > len(atts) || seen[a.n] {
			run.violate(sr, "attempt-numbers", "attempt numbers %v are not 1..%d", attemptNumbers(atts), len(atts))
			break
		}
		seen[a.n] = true
	}
}

// perTry is the bound on one attempt's wait for headers: the policy's, or
// with nesting the tighter of the two.
func (run *simRun) perTry() time.Duration {
	pt := run.cfg.policies[0].PerTryTimeout
	for _, p := range run.cfg.policies[1:] {
		if p.PerTryTimeout != pt {
			return 0 // per transport; kept simple: checked only when they agree
		}
	}
	if run.cfg.nested && run.cfg.inner.PerTryTimeout > 0 && (pt == 0 || run.cfg.inner.PerTryTimeout < pt) {
		pt = run.cfg.inner.PerTryTimeout
	}
	return pt
}

func attemptNumbers(atts []*simAttempt) []int {
	var ns []int
	for _, a := range atts {
		ns = append(ns, a.n)
	}
	return ns
}

// byNumber returns sr's attempt number n, or nil.
func (sr *simReq) byNumber(n int) *simAttempt {
	for _, a := range sr.attempts {
		if a.n == n {
			return a
		}
	}
	return nil
}

// checkRetryAfter: no attempt to an origin before the Retry-After it
// honoured, and none at all after one longer than MaxRetryAfter, within
// the request.
func (run *simRun) checkRetryAfter(sr *simReq) { run.checkRetryAfterOf(sr, sr.attempts) }

// checkRetryAfterOf checks Retry-After among atts, the attempts of sr's
// RoundTrip or the resume requests of its body.
func (run *simRun) checkRetryAfterOf(sr *simReq, atts []*simAttempt) {
	maxRA := sr.pol.MaxRetryAfter
	if maxRA == 0 {
		maxRA = 30 * time.Second
	}
	for _, a := range atts {
		if a.ra == "" || a.resp == nil || a.broke || sr.possiblyCut(a) || !sr.retried(a.status) {
			continue
		}
		ra, ok := httpretry.ParseRetryAfter(a.ra, a.settled)
		if !ok {
			continue
		}
		for _, b := range atts {
			if b.origin != a.origin || !b.start.After(a.settled) {
				continue
			}
			if ra > maxRA {
				run.violate(sr, "retry-after", "attempt %d to %s after attempt %d was told Retry-After %q (over MaxRetryAfter %v)",
					b.n, b.origin.url, a.n, a.ra, maxRA)
			} else if b.start.Before(a.settled.Add(ra)) {
				run.violate(sr, "retry-after", "attempt %d to %s came %v after attempt %d was told Retry-After %q",
					b.n, b.origin.url, b.start.Sub(a.settled), a.n, a.ra)
			}
		}
	}
}

// announces reports whether e announces an attempt that goes out.
func announces(e httpretry.Event) bool {
	switch e.Kind {
	case httpretry.EventRetry, httpretry.EventFallback:
		return true
	case httpretry.EventHedge:
		return e.Reason == 0
	}
	return false
}

// checkEvents: exactly one event announces each attempt after the first,
// naming its origin; attempts are numbered in order; at most one give-up,
// and one exactly when a failure is returned; every event names the
// origin of the attempt it is about.
func (run *simRun) checkEvents(sr *simReq) {
	if sr.panicked {
		return
	}
	var ann []simEvent
	giveUps := 0
	for _, e := range sr.events {
		if announces(e.Event) {
			ann = append(ann, e)
		}
		if e.Kind == httpretry.EventGiveUp {
			giveUps++
		}
		var about *simAttempt
		switch e.Kind {
		case httpretry.EventRetry, httpretry.EventFallback, httpretry.EventGiveUp, httpretry.EventDemote,
			httpretry.EventRestore:
			about = sr.byNumber(e.Attempt)
			if about == nil {
				run.violate(sr, "event-attempt", "%s event names attempt %d, never sent", e.Kind, e.Attempt)
				continue
			}
			if e.Status != 0 && e.Status != about.status {
				run.violate(sr, "event-status", "%s event of attempt %d has status %d, the attempt got %d",
					e.Kind, e.Attempt, e.Status, about.status)
			}
		}
		switch e.Kind {
		case httpretry.EventDemote, httpretry.EventRestore:
			if len(sr.cands) < 2 {
				run.violate(sr, "demote-needs-fallback", "%s event on a request with one candidate", e.Kind)
			}
			if e.Origin != about.origin.url {
				run.violate(sr, "event-origin", "%s event names %s, attempt %d went to %s", e.Kind, e.Origin,
					e.Attempt, about.origin.url)
			}
		case httpretry.EventGiveUp:
			// A budget's refusal names the origin that refused, a hold's
			// the origin held (point 22), which may be parked at another
			// candidate than its last attempt's.
			switch {
			case sr.touched && !sr.isCandidate(e.Origin):
				run.violate(sr, "event-origin", "give-up names %s, no candidate", e.Origin)
			case !sr.touched && e.Reason != httpretry.ReasonBudget && e.Reason != httpretry.ReasonHold &&
				e.Origin != about.origin.url:
				run.violate(sr, "event-origin", "give-up names %s, attempt %d went to %s", e.Origin, e.Attempt,
					about.origin.url)
			}
		}
	}
	atts := sr.attempts
	sent := len(atts) - 1
	// The last announcement may be followed by no attempt: a wait that
	// could not be had ends the request.
	switch {
	case sr.touched:
		run.checkHeldEvents(sr, ann)
	case len(ann) != sent && !(len(ann) == sent+1 && ann[len(ann)-1].Kind == httpretry.EventRetry && giveUps == 1) &&
		!(len(ann) == sent+1 && ann[len(ann)-1].Kind == httpretry.EventFallback && giveUps == 1):
		run.violate(sr, "one-event-per-attempt", "%d attempts after the first, %d events announcing one", sent, len(ann))
	default:
		for i := 0; i < min(len(ann), sent); i++ {
			a := sr.byNumber(i + 2)
			if a == nil {
				continue // reported by attempt-numbers
			}
			if e := ann[i]; e.Origin != a.origin.url {
				run.violate(sr, "event-origin", "%s event names %s, attempt %d went to %s", e.Kind, e.Origin, a.n,
					a.origin.url)
			} else if e.Kind == httpretry.EventHedge && e.Attempt != a.n {
				run.violate(sr, "event-attempt", "hedge event numbers copy %d, it was attempt %d", e.Attempt, a.n)
			}
		}
	}
	if giveUps > 1 {
		run.violate(sr, "one-give-up", "%d give-up events", giveUps)
	}
	if sr.passesThrough() {
		return
	}
	failure := sr.err != nil && sr.pol.RetryIf == nil || sr.status != 0 && sr.retried(sr.status)
	answer := sr.err == nil && !sr.retried(sr.status)
	if failure && giveUps != 1 {
		run.violate(sr, "give-up-iff-failure", "a failure returned (%d, %v) with %d give-up events", sr.status, sr.err, giveUps)
	}
	if answer && giveUps != 0 {
		run.violate(sr, "give-up-iff-failure", "an answer %d returned with a give-up event", sr.status)
	}
}

// keepable reports whether a's response is one the loop keeps in memory
// when it lets go of it (at most 4 KiB, whole).
func keepable(a *simAttempt) bool {
	return a.resp != nil && len(a.resp.Data) <= 4<<10 && a.resp.Cut < 0 && !a.broke
}

// checkAnswerKept: a request that ends on an error returns instead the
// answer it last got, when the contract says so: its last attempt's
// response (point 1: "returns the last response"), or with fallbacks the
// latest failed answer of at most 4 KiB (point 13). Only requests that
// are not hedged: a round's losers are let go by design.
func (run *simRun) checkAnswerKept(sr *simReq) {
	if sr.err == nil || sr.panicked || sr.pol.Hedge != (httpretry.Hedge{}) || sr.ctx.Err() != nil ||
		sr.passesThrough() || len(sr.attempts) == 0 {
		return
	}
	last := sr.attempts[0]
	for _, a := range sr.attempts {
		if a.n > last.n {
			last = a
		}
	}
	if last.resp != nil && !last.broke && !sr.possiblyCut(last) && (last.resp.Whole() || !held(sr)) {
		// A failed answer held while the request waits is read into
		// memory first (point 22): one whose body breaks is lost.
		run.violate(sr, "last-response-returned", "the last attempt %d got %d, RoundTrip returned %v",
			last.n, last.status, sr.err)
		return
	}
	if len(sr.cands) < 2 {
		return
	}
	for _, a := range sr.attempts {
		if keepable(a) && !sr.possiblyCut(a) {
			run.violate(sr, "answer-beats-error", "attempt %d got %d (%d bytes), RoundTrip returned %v",
				a.n, a.status, len(a.resp.Data), sr.err)
			return
		}
	}
}

// checkEnd checks what only the end of the run shows: bodies closed,
// uploads whole, budgets settled, and the scenario's liveness.
func (run *simRun) checkEnd() {
	for _, u := range run.unknown {
		run.violate(nil, "candidates", "the base was sent to %s, no origin of the run", u)
	}
	for _, b := range run.bodies {
		sr := b.att.req
		switch {
		case b.Closes() == 0:
			run.violate(sr, "response-closed", "the %d response of attempt %d (body %d) was never closed",
				b.att.status, b.att.n, b.id)
		case b.Closes() > 1:
			run.violate(sr, "response-closed", "the %d response of attempt %d (body %d, %d bytes) was closed %d times",
				b.att.status, b.att.n, b.id, len(b.Data), b.Closes())
		}
	}
	for _, sr := range run.reqs {
		if snap := sr.atReturn; snap != nil {
			run.checkCalls(snap)
			if !run.cfg.nested {
				run.checkEvents(snap)
			}
		}
		if sr.callerBody != nil && sr.callerBody.closes == 0 {
			run.violate(sr, "request-body-closed", "the caller's request body was never closed")
		}
		for i, b := range sr.getBodies {
			if b.closes == 0 {
				run.violate(sr, "request-body-closed", "body %d from GetBody was never closed", i)
			}
		}
		run.checkUploads(sr)
		run.checkHedgeEvents(sr)
		run.checkCopiesHome(sr)
		run.checkUpgrade(sr)
		run.checkErrorPrefixes(sr)
		run.checkDemoteOff(sr)
		if sr.respBody >= 0 && sr.plan.readResp && sr.panicVal == nil {
			if b := run.bodies[sr.respBody]; b.att.pre {
				run.checkWholeBody(sr, b)
			} else if b.obj != nil && run.resumable(sr, b.att) != "" {
				run.tallyResumed(sr)
				run.checkResumed(sr, b)
			} else {
				if b.obj != nil {
					run.tally["object bodies not resumable"]++
				}
				run.checkPlainBody(sr, b)
			}
		}
		run.checkResumeRequests(sr)
		run.checkCloseEndsRead(sr)
		run.checkPrefetchCuts(sr)
	}
	run.checkScenario()
}

// checkPlainBody: a body that is not resumed is what the origin sent, or
// a prefix of it that ends where the body broke.
func (run *simRun) checkPlainBody(sr *simReq, b *simBody) {
	whole := b.Data
	if b.Cut >= 0 {
		whole = b.Data[:b.Cut]
	}
	cut := b.Cut >= 0 && !(b.Break == fakeorigin.EarlyEOF || b.Cut == len(b.Data) && b.Break == fakeorigin.Stall)
	if !bytes.HasPrefix(whole, sr.respData) || sr.readEOF && len(sr.respData) != len(whole) ||
		sr.readEOF && cut && sr.bodyPanic == nil {
		run.violate(sr, "response-body", "the caller read %d bytes (EOF %v, %v) of body %d: %d bytes, cut at %d",
			len(sr.respData), sr.readEOF, sr.respErr, b.id, len(b.Data), b.Cut)
	}
}

// checkCloseEndsRead: a Close from another goroutine ends a Read in
// progress at once, whatever it waits for (a stalled body, a resume
// request, a Retry-After), but for an observer's sleep.
func (run *simRun) checkCloseEndsRead(sr *simReq) {
	if !sr.closedAside || !sr.plan.readResp || sr.readEnd.Before(sr.closedAt) {
		return
	}
	var slack time.Duration
	if run.cfg.sleepOn != nil {
		slack = run.cfg.sleepFor
	}
	if sr.readEnd.After(sr.closedAt.Add(slack)) {
		run.violate(sr, "close-ends-read", "the body was closed at %v, the Read went on until %v",
			sr.closedAt.Sub(sr.start), sr.readEnd.Sub(sr.start))
	}
}

// resumable is the validator that the contract pins the body of a, the
// response sr's caller got, to when it resumes it (point 21); "" if the
// body is not resumable: by the sim's own reading of the rules.
func (run *simRun) resumable(sr *simReq, a *simAttempt) string {
	rs := sr.pol.Resume
	if a.pre || rs.Max < 0 || sr.maxRetries <= 0 || sr.plan.method != "GET" || a.status != http.StatusOK ||
		a.respCL < int64(minBytes(rs)) {
		return ""
	}
	h := a.respHeader
	for _, v := range h["Content-Encoding"] {
		if v != "identity" {
			return ""
		}
	}
	if h.Get("Accept-Ranges") == "none" {
		return ""
	}
	return simValidator(h)
}

// resumeMax is how many resume requests a body may make under rs.
func resumeMax(rs httpretry.Resume) int {
	switch {
	case rs.Max == 0:
		return 3
	case rs.Max < 0:
		return 0
	}
	return rs.Max
}

// callersDoing reports whether the caller itself may have ended the body
// of sr: its context ended, it closed the body from another goroutine, or
// an observer panicked in its Read.
func (sr *simReq) callersDoing() bool {
	return sr.ctxEnded || sr.closedAside || sr.bodyPanic != nil
}

// tallyResumed counts what became of a resumable body sr's caller read.
func (run *simRun) tallyResumed(sr *simReq) {
	t := run.tally
	t["resumable bodies"]++
	t["resume requests"] += len(sr.resumeAtts)
	for _, a := range sr.resumeAtts {
		t["resume answers "+a.rbeh.String()]++
	}
	switch err := sr.respErr; {
	case sr.readEOF && len(sr.resumeAtts) > 0:
		t["resumed to EOF"]++
	case errors.Is(err, httpretry.ErrBodyChanged):
		t["ended ErrBodyChanged"]++
		if ranPastErr(err) {
			t["ended ErrBodyChanged, an answer past its end"]++
		}
	case err != nil && ranPastErr(err):
		t["ended past the end"]++
	case err != nil:
		t["ended in another error"]++
	}
	for _, e := range sr.events {
		if e.body && e.Kind == httpretry.EventGiveUp {
			t["body give-up "+e.Reason.String()]++
		}
	}
}

// checkResumed: a resumable body read to its end is the version its
// response carried, byte for byte; one that ends in an error is a prefix
// of it, never a byte of another nor one past its end, and its error
// wraps the latest break (ErrBodyChanged exactly when the last resume
// request met another version, a range not asked for or a body that is
// not its range). A body that ran past its end, the first with no resume,
// ends in an error that says so, never io.EOF.
func (run *simRun) checkResumed(sr *simReq, b *simBody) {
	run.mu.Lock()
	want := b.obj.versions[b.ver]
	breaks := append([]error(nil), sr.breaks...)
	run.mu.Unlock()
	got := sr.respData
	eof := sr.readEOF
	var changed bool
	if n := len(sr.resumeAtts); n > 0 {
		last := sr.resumeAtts[n-1]
		changed = last.changed && !sr.possiblyCut(last)
	}
	// The first body sent bytes past its end, and no resume replaced it.
	pastEnd := len(sr.resumeAtts) == 0 && len(b.Data) > len(want) && (b.Cut < 0 || b.Cut > len(want))
	switch {
	case eof && changed && !run.cfg.nested:
		run.violate(sr, "body-changed", "the caller read to io.EOF, though the last resume request met another "+
			"version or range")
	case eof && pastEnd:
		run.violate(sr, "past-end", "the caller read to io.EOF a body that ran %d bytes past its end",
			len(b.Data)-len(want))
	}
	switch {
	case eof && !bytes.Equal(got, want):
		run.violate(sr, "resumed-identical", "the caller read %d bytes to EOF, not v%d of the object (%d bytes)%s",
			len(got), b.ver, len(want), firstDiff(got, want))
		return
	case !bytes.HasPrefix(want, got):
		run.violate(sr, "resumed-prefix", "the caller read %d bytes (%v), not a prefix of v%d of the object "+
			"(%d bytes)%s", len(got), sr.respErr, b.ver, len(want), firstDiff(got, want))
		return
	}
	err := sr.respErr
	if err == nil || sr.callersDoing() {
		return
	}
	if pastEnd {
		if !ranPastErr(err) {
			run.violate(sr, "past-end", "a body that ran past its end ended with %v", err)
		}
		return
	}
	told := false
	for _, e := range sr.events {
		told = told || e.body && (e.Kind == httpretry.EventResume || e.Kind == httpretry.EventGiveUp)
	}
	if !told {
		run.violate(sr, "resume-or-say-why", "a resumable body ended with %v, with no resume or give-up event", err)
	}
	var lastBreak error
	if len(breaks) > 0 {
		lastBreak = breaks[len(breaks)-1]
	}
	switch {
	case lastBreak == nil:
		run.violate(sr, "resumed-error", "the body ended with %v, and never broke", err)
	case lastBreak == fakeorigin.ErrStalled && !idleErr(err) || lastBreak != fakeorigin.ErrStalled && !errors.Is(err, lastBreak):
		run.violate(sr, "resumed-error", "the body ended with %v, which does not wrap its latest break %v", err,
			lastBreak)
	}
	if is := errors.Is(err, httpretry.ErrBodyChanged); is != changed && !run.cfg.nested {
		run.violate(sr, "body-changed", "the body ended with %v; the last resume request met another version "+
			"or range: %v", err, changed)
	}
}

// idleErr reports whether err says a body delivered no byte for Idle:
// the package's own error, known here only by its text.
func idleErr(err error) bool {
	return strings.Contains(err.Error(), "no byte for Resume.Idle")
}

// ranPastErr reports whether err says a body ran past the end its headers
// declare: the package's own error, known here only by its text.
func ranPastErr(err error) bool {
	return strings.Contains(err.Error(), "runs past the end its headers declare")
}

func firstDiff(got, want []byte) string {
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			return fmt.Sprintf("; they differ first at byte %d", i)
		}
	}
	return ""
}

// checkResumeRequests: the resume requests of sr's body, as the base saw
// them: none unless the body is resumable, at most Resume.Max, each to
// the body's origin, the caller's request with Range: bytes=N- (or N-E)
// from the bytes delivered and If-Range the validator; one EventResume
// each; within the request's deadline, the caller's end and the
// Retry-After they were told.
func (run *simRun) checkResumeRequests(sr *simReq) {
	atts := sr.resumeAtts
	n := 0
	for _, e := range sr.events {
		if e.Kind == httpretry.EventResume {
			n++
		}
	}
	if len(atts) == 0 && n == 0 {
		return
	}
	var b *simBody
	if sr.respBody >= 0 {
		b = run.bodies[sr.respBody]
	}
	if b == nil || b.obj == nil || run.resumable(sr, b.att) == "" {
		run.violate(sr, "resume-eligible", "%d resume requests and %d EventResume for a body that is not resumable",
			len(atts), n)
		return
	}
	validator := run.resumable(sr, b.att)
	size := len(b.Data)
	// Nested, only the outer resumes (point 20): its Resume.Max bounds
	// every resume request the base saw, the inner's included.
	if m := resumeMax(sr.pol.Resume); len(atts) > m {
		run.violate(sr, "resume-max", "%d resume requests, Resume.Max %d", len(atts), m)
	}
	if !run.cfg.nested {
		if n != len(atts) && n != len(atts)+1 {
			run.violate(sr, "resume-events", "%d resume requests, %d EventResume", len(atts), n)
		}
		for i, a := range atts {
			if want := len(sr.attempts) + i + 1; a.n != want {
				run.violate(sr, "resume-numbers", "resume request %d is attempt %d, not %d", i+1, a.n, want)
			}
		}
	}
	for _, a := range atts {
		if a.origin != b.att.origin {
			run.violate(sr, "resume-origin", "resume attempt %d went to %s, the body came from %s", a.n,
				a.origin.url, b.att.origin.url)
		}
		if a.method != "GET" || strings.TrimPrefix(a.url, a.origin.url) != sr.plan.path {
			run.violate(sr, "resume-request", "resume attempt %d is %s %s for GET %s", a.n, a.method, a.url, sr.url)
		}
		whole := fmt.Sprintf("bytes=%d-", a.delivered)
		if a.rangeHdr != whole && a.rangeHdr != whole+strconv.Itoa(size-1) {
			run.violate(sr, "resume-range", "resume attempt %d has Range %q, %d bytes of %d delivered", a.n,
				a.rangeHdr, a.delivered, size)
		}
		if a.ifRange != validator {
			run.violate(sr, "resume-if-range", "resume attempt %d has If-Range %q, the validator is %q", a.n,
				a.ifRange, validator)
		}
		for k, v := range sr.snap.header {
			if !reflect.DeepEqual(a.header[k], v) {
				run.violate(sr, "headers", "resume attempt %d has %s: %q, the caller's %q", a.n, k, a.header[k], v)
			}
		}
		for k := range a.header {
			if _, ok := sr.snap.header[k]; !ok && k != "Range" && k != "If-Range" {
				run.violate(sr, "headers", "resume attempt %d has a header %s the caller did not set", a.n, k)
			}
		}
		if !sr.deadline.IsZero() && a.start.After(sr.deadline) {
			run.violate(sr, "no-attempt-after-deadline", "resume attempt %d started %v after the deadline",
				a.n, a.start.Sub(sr.deadline))
		}
		if cb := sr.callerEnd(); !cb.IsZero() && a.start.After(cb) {
			run.violate(sr, "no-attempt-after-end", "resume attempt %d started %v after the request's end at %v",
				a.n, a.start.Sub(cb), cb.Sub(sr.start))
		}
		if pt := run.perTry(); pt > 0 && a.headers.Sub(a.start) > pt {
			run.violate(sr, "per-try-timeout", "resume attempt %d waited %v for headers, PerTryTimeout %v",
				a.n, a.headers.Sub(a.start), pt)
		}
	}
	if !run.cfg.nested {
		run.checkRetryAfterOf(sr, atts)
	}
}

// checkHedgeEvents: an EventHedge without a Reason is a copy that was
// sent, so the base saw an attempt of its number; one with a Reason is a
// copy that was due and not sent, so no copy of its number went out: an
// attempt that took the number later is a resend or a fallback announced
// after it (point 20). Checked once the run is over, every copy in flight
// having reached the base by then.
func (run *simRun) checkHedgeEvents(sr *simReq) {
	if run.cfg.nested {
		return // the base sees the inner's numbers
	}
	for i, e := range sr.events {
		if e.Kind != httpretry.EventHedge {
			continue
		}
		a := sr.byNumber(e.Attempt)
		switch {
		case e.Reason == 0 && a == nil:
			run.violate(sr, "hedge-sent", "copy %d was told as sent (origin %s), the base never saw it",
				e.Attempt, e.Origin)
		case e.Reason != 0 && a != nil && !sr.touched:
			// Read by the order of announcements, which a held resend
			// given up breaks (point 22).
			if k, j := sr.announcement(a.n); k == httpretry.EventHedge || j < i {
				run.violate(sr, "hedge-refused", "copy %d was told as not sent (%s), attempt %d went to %s "+
					"announced by %s", e.Attempt, e.Reason, a.n, a.origin.url, k)
			}
		}
	}
}

// checkCopiesHome: under Hedge.SameOrigin no copy goes to a fallback,
// only to the request's own origin (point 23).
func (run *simRun) checkCopiesHome(sr *simReq) {
	if run.cfg.nested || !sr.pol.Hedge.SameOrigin {
		return
	}
	run.tally["requests under SameOrigin"]++
	if sr.touched {
		// Copies are told from resends by the order of announcements,
		// which a held resend given up breaks (point 22); and a copy to
		// an origin whose streak reached Hold is not sent.
		return
	}
	for _, a := range sr.attempts {
		if k, _ := sr.announcement(a.n); k == httpretry.EventHedge && a.origin != sr.own {
			run.violate(sr, "copies-home", "copy %d went to %s under SameOrigin, not %s", a.n, a.origin.url,
				sr.own.url)
		}
	}
}

// checkUpgrade: a request that asks to switch protocols is never hedged:
// no copy is sent, nor even due; and it is resent only when its attempt
// got no response (point 21).
func (run *simRun) checkUpgrade(sr *simReq) {
	if !sr.plan.upgrade {
		return
	}
	run.tally["upgrade requests"]++
	for _, e := range sr.events {
		if e.Kind == httpretry.EventHedge {
			run.violate(sr, "upgrade-not-hedged", "an Upgrade request has a hedge event (attempt %d, reason %s)",
				e.Attempt, e.Reason)
		}
	}
	for _, a := range sr.attempts {
		if a.resp == nil || a.broke || sr.possiblyCut(a) {
			continue
		}
		for _, b := range sr.attempts {
			if b.n > a.n {
				run.violate(sr, "upgrade-answer-final", "attempt %d of an Upgrade request got %d, attempt %d followed",
					a.n, a.status, b.n)
			}
		}
	}
}

// checkProbeCold: the primary's first answer after its outage, slow on a
// cold connection, is its probe's verdict: an EventRestore of that
// attempt once it answers, and no demotion of the primary from then on,
// whatever copy overtook it.
func (run *simRun) checkProbeCold() {
	primary := run.cfg.origins[0]
	var cold *simAttempt
	for _, sr := range run.reqs[coldFrom:] {
		for _, a := range sr.attempts {
			if a.origin == primary && (cold == nil || a.start.Before(cold.start)) {
				cold = a
			}
		}
	}
	if cold == nil {
		run.violate(nil, "probe-own-verdict", "no request probed the primary after its outage")
		return
	}
	restored := false
	for _, sr := range run.reqs {
		for _, e := range sr.events {
			switch {
			case e.Origin != primary.url:
			case e.Kind == httpretry.EventDemote && !e.at.Before(cold.start):
				run.violate(sr, "probe-own-verdict", "the primary, answering since %v, was demoted at %v "+
					"(attempt %d, %v)", cold.start.Sub(run.t0), e.at.Sub(run.t0), e.Attempt, e.Err)
			case e.Kind == httpretry.EventRestore && sr == cold.req && e.Attempt == cold.n:
				restored = true
				if !e.at.Equal(cold.settled) {
					run.violate(sr, "probe-own-verdict", "the probe answered at %v, restored at %v",
						cold.settled.Sub(run.t0), e.at.Sub(run.t0))
				}
			}
		}
	}
	if !restored {
		run.violate(cold.req, "probe-own-verdict", "the probe (attempt %d, %s) answered and did not restore the primary",
			cold.n, cold.beh)
	}
	if overtaken := cold.req.respBody >= 0 && run.bodies[cold.req.respBody].att.origin != primary; overtaken {
		run.tally["cold probes overtaken"]++
	}
}

// checkDemoteOff: a policy whose Demote.After is negative demotes no
// origin, whatever For and Max hold (point 20).
func (run *simRun) checkDemoteOff(sr *simReq) {
	if sr.pol.Demote.After >= 0 {
		return
	}
	for _, e := range sr.events {
		if e.Kind == httpretry.EventDemote {
			run.violate(sr, "demote-off", "attempt %d demoted %s under Demote %+v", e.Attempt, e.Origin,
				sr.pol.Demote)
		}
	}
}

// checkUploads: every body an origin received is the caller's, byte for
// byte, or a prefix of it where the upload was cut.
func (run *simRun) checkUploads(sr *simReq) {
	for _, a := range sr.attempts {
		if !a.reached || !sr.plan.hasBody {
			continue
		}
		want := sr.plan.body
		if !a.hadBody {
			if len(want) > 0 {
				run.violate(sr, "body-identical", "attempt %d carried no body, the caller's has %d bytes", a.n, len(want))
			}
			continue
		}
		if !bytes.HasPrefix(want, a.got) || a.gotEOF && len(a.got) != len(want) {
			run.violate(sr, "body-identical", "attempt %d delivered %d bytes (end: %v, %v), not a prefix of the caller's %d",
				a.n, len(a.got), a.gotEOF, a.readErr, len(want))
		}
	}
}

// checkBudgets compares each origin's BudgetStats with what the requests
// did, at the end of a run that lies inside one window (so that nothing
// has left it): the requests recorded, the resends granted, and the
// bound max(share, floor).
func (run *simRun) checkBudgets() {
	if run.cfg.nested {
		return
	}
	cfgB := run.cfg.policies[0].Budget
	if cfgB.Disabled {
		return
	}
	w, _ := run.budgetWindows()
	if time.Since(run.t0) >= w-w/10 {
		return
	}
	percent, floor := cfgB.Percent, cfgB.MinRetries
	if percent == 0 {
		percent = 20
	}
	if floor == 0 {
		floor = 10
	}
	floor = max(floor, 0)
	// A demotion lasts at most Demote.Max (30 s by default), or what a
	// Retry-After asked, at most MaxRetryAfter (30 s by default).
	longest := 30 * time.Second
	for _, p := range run.cfg.policies {
		longest = max(longest, p.Demote.Max, p.Demote.For, p.MaxRetryAfter)
	}
	for ri, reg := range run.registries {
		// Where the hold may have acted (point 22), a parked request's
		// probes draw on nothing and are counted nowhere, its releases are
		// charged past the bound, and an announcement may have no attempt:
		// what is read by the order of announcements is not checked, and
		// the counts are bounds.
		engaged := run.engaged(ri)
		if engaged {
			run.tally["budget checks relaxed: the hold may have acted"]++
		}
		stats := map[string]httpretry.BudgetStats{}
		reg.Range(func(host string, s httpretry.BudgetStats) bool {
			stats[host] = s
			if s.DemotedFor > longest {
				run.violate(nil, "demotion-bound", "%s is demoted for %v, longer than %v", host, s.DemotedFor, longest)
			}
			return true
		})
		var reqs []*simReq
		for _, sr := range run.reqs {
			if run.regOf[sr.tr] == ri {
				reqs = append(reqs, run.asReturned(sr)) // a probe may still run on
			}
		}
		retries, drawn := 0, 0
		for _, s := range stats {
			retries += s.Retries
		}
		// The learned copies sent, charged to the origin of their round,
		// and the loosest cap on them any policy of the run applies.
		copies := map[*simOrigin]int{}
		capShare := 0.0
		for _, sr := range reqs {
			q := sr.pol.Hedge.Quantile
			if q == 0 {
				continue
			}
			capShare = max(capShare, 2*(1-q))
			for _, a := range sr.attempts {
				if k, _ := sr.announcement(a.n); k == httpretry.EventHedge {
					copies[sr.roundOrigin(a.n)]++
				}
			}
		}
		// A resend is charged to the origin it goes to; a copy to the
		// origin of its round's first attempt, wherever it goes (point 20).
		charged := map[*simOrigin]int{}
		for _, sr := range reqs {
			// A resume request is charged to its origin as a resend is.
			drawn += sr.drawnSent() + len(sr.resumeAtts)
			for _, a := range sr.resumeAtts {
				charged[a.origin]++
			}
			for _, a := range sr.attempts {
				switch k, _ := sr.announcement(a.n); k {
				case httpretry.EventRetry:
					charged[a.origin]++
				case httpretry.EventHedge:
					charged[sr.roundOrigin(a.n)]++
				}
			}
		}
		for _, o := range run.cfg.origins {
			s := stats[o.key]
			upper, lower, recorded, unsent := 0, 0, 0, 0
			for _, sr := range reqs {
				// Exactly: a request is recorded once by each origin it
				// goes to, unless it passes through untouched (no
				// resend, no fallback, no time bound); and by one it was
				// about to go to when an observer panicked, or its give-up
				// came before the attempt announced there.
				switch {
				case sr.firstTo(o) != nil:
					if !sr.passesThrough() || sr.pol.PerTryTimeout != 0 || sr.pol.Deadline != 0 {
						recorded++
					}
				case sr.panicked || sr.announcedTo(o):
					unsent++
				}
				for _, c := range sr.cands {
					if c == o {
						upper++
					}
				}
				// A copy to a candidate the request had not been to is a
				// request there too (point 20).
				if sr.firstTo(o) != nil && !sr.passesThrough() {
					lower++
				}
			}
			if s.Requests > upper {
				run.violate(nil, "budget-requests", "%s records %d requests, only %d had it as a candidate",
					o.key, s.Requests, upper)
			}
			if s.Requests < lower && !engaged {
				run.violate(nil, "budget-requests", "%s records %d requests, %d requests sent to it",
					o.key, s.Requests, lower)
			}
			if run.cfg.twoWindows {
				run.tally["two windows: origins counted exactly"]++
			}
			if run.cfg.twoWindows && !engaged && (s.Requests < recorded || s.Requests > recorded+unsent) {
				run.violate(nil, "two-windows-counted", "%s, under two windows, counts %d requests, "+
					"%d were recorded (and %d more may have been)", o.key, s.Requests, recorded, unsent)
			}
			if s.Copies != copies[o] && !engaged {
				run.violate(nil, "budget-copies", "%s counts %d learned copies, %d were sent in rounds it began",
					o.key, s.Copies, copies[o])
			}
			if limit := max(int(math.Ceil(capShare*float64(s.Requests)*(1-1e-9))), 1); s.Copies > limit {
				run.violate(nil, "copy-cap-bound", "%s counts %d learned copies in a window of %d requests "+
					"(cap %d)", o.key, s.Copies, s.Requests, limit)
			}
			for _, sr := range reqs {
				for _, e := range sr.events {
					if e.Kind == httpretry.EventHedge && e.Reason == httpretry.ReasonCopyCap &&
						e.Origin == o.url && s.Copies == 0 {
						run.violate(sr, "copy-cap-refused", "copy %d refused for the cap of %s, "+
							"which counts no learned copy", e.Attempt, o.key)
					}
				}
			}
			if s.Retries != charged[o] && !engaged {
				run.violate(nil, "budget-charged-to", "%s granted %d resends, %d were resends to it or copies "+
					"in rounds it began", o.key, s.Retries, charged[o])
			}
			if bound := max(percent*s.Requests/100, floor); s.Retries > bound && !engaged {
				run.violate(nil, "budget-bound", "%s granted %d resends in a window of %d requests (bound %d)",
					o.key, s.Retries, s.Requests, bound)
			}
		}
		if engaged {
			// Every charge is an attempt after a request's first, or a
			// resume request.
			sent := 0
			for _, sr := range reqs {
				sent += max(len(sr.attempts)-1, 0) + len(sr.resumeAtts)
			}
			if retries > sent {
				run.violate(nil, "budget-charged", "%d resends charged, %d attempts after a request's first sent",
					retries, sent)
			}
			continue
		}
		if retries < drawn {
			run.violate(nil, "budget-charged", "%d resends and copies sent, %d charged", drawn, retries)
		}
		if retries > drawn {
			run.violate(nil, "budget-charged", "%d resends and copies sent, %d charged", drawn, retries)
		}
	}
}

// firstTo is sr's first attempt to o, nil if none went there.
func (sr *simReq) firstTo(o *simOrigin) *simAttempt {
	var first *simAttempt
	for _, a := range sr.attempts {
		if a.origin == o && (first == nil || a.n < first.n) {
			first = a
		}
	}
	return first
}

// announcement is the kind of the event that announced attempt n and
// its index in sr.events; 0 and -1 for the first attempt or none.
func (sr *simReq) announcement(n int) (httpretry.EventKind, int) {
	k := 0
	for i, e := range sr.events {
		if announces(e.Event) {
			if k+2 == n {
				return e.Kind, i
			}
			k++
		}
	}
	return 0, -1
}

// roundOrigin is the origin of the first attempt of the round that
// attempt n belongs to: n's own unless n is a copy, else that of the
// latest attempt before it that no copy announced; nil if not sent.
func (sr *simReq) roundOrigin(n int) *simOrigin {
	for m := n; m >= 1; m-- {
		if k, _ := sr.announcement(m); k != httpretry.EventHedge {
			if a := sr.byNumber(m); a != nil {
				return a.origin
			}
			return nil
		}
	}
	return nil
}

// drawnSent counts sr's attempts drawn on the pool that were sent:
// resends and copies, each charged to a budget.
func (sr *simReq) drawnSent() int {
	n, ann := 0, 0
	for _, e := range sr.events {
		if !announces(e.Event) {
			continue
		}
		ann++
		if ann <= len(sr.attempts)-1 && e.Kind != httpretry.EventFallback {
			n++
		}
	}
	return n
}

// checkScenario checks the liveness a scenario's run must show.
func (run *simRun) checkScenario() {
	switch run.cfg.scenario {
	case "hedge-fallback":
		w := run.cfg.policies[0].Budget.Window
		if last := run.reqs[len(run.reqs)-1]; last.start.Sub(run.t0) < hedgeWindows*w {
			run.violate(last, "hedging-goes-on", "the run spans %v, not %d windows of %v", last.start.Sub(run.t0),
				hedgeWindows, w)
		}
		for _, sr := range run.reqs {
			if sr.idx%stallEvery != 0 {
				continue
			}
			sent := 0
			for _, e := range sr.events {
				switch {
				case e.Kind != httpretry.EventHedge:
				case e.Reason != 0:
					run.violate(sr, "hedging-goes-on",
						"request %d stalled at %v and its copy was refused (%s, origin %s) with the budget to spare",
						sr.idx, sr.start.Sub(run.t0), e.Reason, e.Origin)
				default:
					sent++
				}
			}
			if sent == 0 {
				run.violate(sr, "hedging-goes-on", "request %d stalled at %v and no copy was sent", sr.idx,
					sr.start.Sub(run.t0))
			}
		}
	case "blackhole-demote":
		n := 0
		tail := run.reqs[len(run.reqs)-blackHoleTail:]
		for _, sr := range tail {
			for _, a := range sr.attempts {
				if a.origin.idx == 0 {
					n++
				}
			}
		}
		if n > blackHoleTail/8 {
			run.violate(nil, "black-hole-demoted",
				"the black-holed primary got %d attempts from the last %d requests", n, blackHoleTail)
		}
		after := run.cfg.policies[0].Demote.After
		if after == 0 {
			after = 5
		}
		by := blackHoleFrom + blackHoleAfter*after
		demotedAt := -1
		for _, sr := range run.reqs[:by] {
			for _, e := range sr.events {
				if demotedAt < 0 && e.Kind == httpretry.EventDemote && e.Origin == run.cfg.origins[0].url {
					demotedAt = sr.idx
				}
			}
		}
		if demotedAt < 0 {
			run.violate(nil, "black-hole-demoted", "the primary, black-holed from request %d, was not demoted "+
				"by request %d (Demote.After %d)", blackHoleFrom, by-1, after)
		}
		onset := run.reqs[blackHoleFrom-1].learned
		for _, sr := range run.reqs[blackHoleFrom:] {
			if sr.learned > onset {
				run.violate(sr, "learned-delay-steady", "the black-holed primary's learned delay rose from %v "+
					"to %v", onset, sr.learned)
				break
			}
		}
	case "probe-cold":
		run.checkProbeCold()
	case "demote-return":
		restored := false
		for _, sr := range run.reqs {
			for _, e := range sr.events {
				restored = restored || e.Kind == httpretry.EventRestore
			}
		}
		last := run.reqs[len(run.reqs)-1]
		if !restored || len(last.attempts) == 0 || last.attempts[0].origin.idx != 0 {
			run.violate(last, "demoted-comes-back", "the primary, healthy since %v, was not restored (restore event: %v)",
				demoteOutage, restored)
		}
	}
}

// checkRetryOn: RetryOn holds only failures, 400-599 (point 20), so that
// Validate refuses any other status; p is returned without them.
func (run *simRun) checkRetryOn(p httpretry.Policy) httpretry.Policy {
	var keep, bad []int
	for _, s := range p.RetryOn {
		if s >= 400 && s <= 599 {
			keep = append(keep, s)
		} else {
			bad = append(bad, s)
		}
	}
	if len(bad) == 0 {
		return p
	}
	if err := p.Validate(); err == nil {
		run.violate(nil, "retry-on-failures-only", "Validate accepts RetryOn %v", p.RetryOn)
	}
	if keep == nil {
		keep = []int{}
	}
	p.RetryOn = keep
	return p
}

// checkHedgeRetries: a copy is a resend, so a Hedge under MaxRetries 0 is
// refused by Validate and by ParseConfig of its JSON, under
// "default.hedge" (point 23); p is returned without the hedge.
func (run *simRun) checkHedgeRetries(p httpretry.Policy) httpretry.Policy {
	if p.MaxRetries != 0 || p.Hedge == (httpretry.Hedge{}) {
		return p
	}
	const why = "a copy is a resend: maxRetries must be at least 1"
	if err := p.Validate(); err == nil || !strings.Contains(err.Error(), "Hedge "+why) {
		run.violate(nil, "hedge-needs-retries", "Validate of %+v under MaxRetries 0: %v", p.Hedge, err)
	}
	j, err := json.Marshal(p)
	if err == nil {
		_, err = httpretry.ParseConfig([]byte(`{"default": ` + string(j) + `}`))
	}
	if err == nil || !strings.Contains(err.Error(), "default.hedge: "+why) {
		run.violate(nil, "hedge-needs-retries", "ParseConfig of %s: %v", j, err)
	}
	run.tally["hedges refused under maxRetries 0"]++
	p.Hedge = httpretry.Hedge{}
	return p
}

// checkAlone: every struct of the JSON schema reads and writes its own
// JSON (point 23). Alone, the Budget, Hedge, Demote and Resume of p, a
// policy read from JSON, write what j, the JSON it was read from, holds
// under their names, and read back as themselves; a Config of p reads
// back as itself.
func (run *simRun) checkAlone(p httpretry.Policy, j []byte) {
	var members map[string]json.RawMessage
	if err := json.Unmarshal(j, &members); err != nil {
		run.violate(nil, "json-alone", "the policy's JSON %s: %v", j, err)
		return
	}
	jsonAlone(run, "budget", p.Budget, members["budget"])
	jsonAlone(run, "hedge", p.Hedge, members["hedge"])
	jsonAlone(run, "demote", p.Demote, members["demote"])
	jsonAlone(run, "resume", p.Resume, members["resume"])

	c := httpretry.Config{Default: p, Hosts: map[string]httpretry.Policy{"o0.sim": p}}
	cj, err := json.Marshal(c)
	var back httpretry.Config
	if err == nil {
		err = json.Unmarshal(cj, &back)
	}
	if err != nil || !reflect.DeepEqual(c, back) {
		run.violate(nil, "json-alone", "a Config writes %s, read back as %+v: %v", cj, back, err)
	}
}

// jsonAlone checks v, the member name of a policy, written alone and read
// back; inPolicy is its text in the policy's JSON.
func jsonAlone[T comparable](run *simRun, name string, v T, inPolicy json.RawMessage) {
	j, err := json.Marshal(v)
	if err != nil || string(j) != string(inPolicy) {
		run.violate(nil, "json-alone", "%s alone writes %s (%v), in the policy %s", name, j, err, inPolicy)
		return
	}
	var back T
	if err := json.Unmarshal(j, &back); err != nil || back != v {
		run.violate(nil, "json-alone", "%s alone writes %s, read back as %+v: %v", name, j, back, err)
	}
}

// checkSweep: once every host has been idle for a whole window, a host
// whose floor credit is full, with no demotion standing and no learned
// hedge delay, is forgotten by the next sweep (DESIGN 8, 15, 17, 18).
func (run *simRun) checkSweep() {
	cfgB := run.cfg.policies[0].Budget
	_, w := run.budgetWindows()
	floor := cfgB.MinRetries
	if floor == 0 {
		floor = 10
	}
	floor = max(floor, 0)
	if cfgB.Disabled {
		floor = -1 // no budget: any credit reads as full
	}
	// The sweep runs when a host is added, at most every 10 s; a budget's
	// ticker may open one more slot after its last request.
	idle := w + 2*(w/10) + 11*time.Second
	time.Sleep(idle)
	for ri, reg := range run.registries {
		reg.For("sweep.sim", cfgB)
		// An origin's demotion stands if its latest verdict demoted it;
		// verdicts at one instant may have come in either order.
		standing := map[string]bool{}
		latest := map[string]time.Time{}
		quantile := map[string]bool{}
		for _, sr := range run.reqs {
			if run.regOf[sr.tr] != ri {
				continue
			}
			for _, e := range sr.events {
				if e.Kind != httpretry.EventDemote && e.Kind != httpretry.EventRestore {
					continue
				}
				demote := e.Kind == httpretry.EventDemote
				switch t := latest[e.Origin]; {
				case e.at.After(t):
					latest[e.Origin], standing[e.Origin] = e.at, demote
				case e.at.Equal(t):
					standing[e.Origin] = standing[e.Origin] || demote
				}
			}
			if sr.pol.Hedge.Quantile > 0 {
				for _, c := range sr.cands {
					quantile[c.key] = true
				}
			}
		}
		reg.Range(func(host string, s httpretry.BudgetStats) bool {
			if host == "sweep.sim" || s.DemotedFor != 0 || s.HedgeAfter != 0 || floor >= 0 && s.Credit != floor {
				return true
			}
			for _, o := range run.cfg.origins {
				if o.key == host && standing[o.url] {
					return true // an expired demotion not yet probed stands
				}
			}
			run.violate(nil, "idle-host-forgotten", "%s, idle for %v with its credit full, is still held: %+v",
				host, idle, s)
			return true
		})
	}
}

// announcedTo reports whether an event of sr announced an attempt to o.
func (sr *simReq) announcedTo(o *simOrigin) bool {
	for _, e := range sr.events {
		if announces(e.Event) && e.Origin == o.url {
			return true
		}
	}
	return false
}

// budgetWindows returns the shortest and the longest budget Window of
// the run's transports, 0 read as the default 10 s: two differ when
// twoWindows.
func (run *simRun) budgetWindows() (shortest, longest time.Duration) {
	for _, p := range run.cfg.policies {
		w := p.Budget.Window
		if w == 0 {
			w = 10 * time.Second
		}
		if shortest == 0 || w < shortest {
			shortest = w
		}
		longest = max(longest, w)
	}
	return shortest, longest
}

// checkErrorPrefixes: an Event's error never starts with "httpretry: "
// (the base's error as it came, or httpretry's own bare), and the error
// RoundTrip returns carries the prefix once, first (point 23). A learned
// copy the cap refused is told as ReasonCopyCap only under a learned
// delay with a budget.
func (run *simRun) checkErrorPrefixes(sr *simReq) {
	if run.cfg.nested {
		return // the inner httpretry is the outer's base: its errors come prefixed
	}
	for _, e := range sr.events {
		if e.Err != nil && strings.HasPrefix(e.Err.Error(), "httpretry: ") {
			run.violate(sr, "event-error-prefix", "%s event of attempt %d carries %q", e.Kind, e.Attempt, e.Err)
		}
		if e.Reason == httpretry.ReasonCopyCap {
			run.tally["copies refused by the cap"]++
		}
		if e.Reason == httpretry.ReasonCopyCap && (e.Kind != httpretry.EventHedge || sr.pol.Hedge.Quantile == 0 ||
			sr.pol.Budget.Disabled) {
			run.violate(sr, "copy-cap-reason", "%s event of attempt %d says copy-cap under %+v", e.Kind,
				e.Attempt, sr.pol.Hedge)
		}
	}
	if sr.err != nil && sr.panicVal == nil {
		if msg := sr.err.Error(); !strings.HasPrefix(msg, "httpretry: ") || strings.Count(msg, "httpretry: ") != 1 {
			run.violate(sr, "error-prefix", "RoundTrip returned %q", msg)
		}
	}
}

// waitingAt reports whether sr was between attempts at t: it had sent
// one, and none was in flight (an attempt that came back at t came back
// because of what happened at t).
func (sr *simReq) waitingAt(t time.Time) bool {
	if len(sr.attempts) == 0 {
		return false
	}
	for _, a := range sr.attempts {
		if !a.back || !a.start.Before(t) || !a.settled.Before(t) {
			return false
		}
	}
	return true
}

// oneTryBound is when RoundTrip returns at the latest for sr's one
// attempt under PerTryTimeout pt: pt after the start, or when its answer,
// its headers come by then, was read whole (point 24).
func (sr *simReq) oneTryBound(pt time.Duration) time.Time {
	bound := sr.start.Add(pt)
	for _, a := range sr.attempts {
		if a.pre && a.back && a.settled.After(bound) {
			bound = a.settled
		}
	}
	return bound
}

// held reports whether the hold acted on sr: an event of its names it.
func held(sr *simReq) bool {
	for _, e := range sr.events {
		if e.Reason == httpretry.ReasonHold {
			return true
		}
	}
	return false
}

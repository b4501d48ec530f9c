package httpretry

import (
	"fmt"
	"io"
	"net/http"
	"time"
)

// Hedge sends speculative copies of a slow request, to cut the tail
// latency that one slow replica gives every caller. Only requests that may
// be resent and whose body can be replayed are hedged; every copy is
// charged to the host's retry budget and counts against MaxRetries, so one
// request never costs the upstream more than 1 + MaxRetries calls. The zero
// value sends no copies.
type Hedge struct {
	// After is how long an attempt may go without response headers before
	// another copy is sent; 0 turns hedging off.
	After time.Duration
	// Max is the number of copies sent at most beside the attempt they
	// hedge, at most 16; 0 means 1 when After is set.
	Max int
}

func (h Hedge) problems() []string {
	var bad []string
	if h.After < 0 {
		bad = append(bad, fmt.Sprintf("Hedge.After %v is negative", h.After))
	}
	if h.Max < 0 || h.Max > MaxRetriesLimit {
		bad = append(bad, fmt.Sprintf("Hedge.Max %d is outside 0..%d", h.Max, MaxRetriesLimit))
	}
	if h.Max > 0 && h.After == 0 {
		bad = append(bad, fmt.Sprintf("Hedge.Max %d needs Hedge.After", h.Max))
	}
	return bad
}

// copies is the number of hedged copies allowed beside one attempt.
func (h Hedge) copies() int {
	if h.After <= 0 {
		return 0
	}
	return max(h.Max, 1)
}

// hedges reports whether this request's attempts are hedged: the policy
// asks for it, a resend is safe, and every copy can have its own body.
func (c *call) hedges() bool {
	if c.p.hedge.copies() == 0 || !c.resendable {
		return false
	}
	r := c.req
	return r.Body == nil || r.Body == http.NoBody || r.GetBody != nil || c.body != nil && c.body.limit > 0
}

// outcome is what one attempt of a hedged round came back with.
type outcome struct {
	a    *attempt
	resp *http.Response
	err  error
}

// round sends attempt n and, while it goes without response headers for
// Hedge.After, copies of it, each granted by the budget and counted
// against MaxRetries. The first outcome that is not a retryable failure
// wins and the other attempts are canceled, their responses discarded, before
// round returns: no attempt outlives it but the winner. If every attempt
// fails, the last failure is returned for the retry loop to judge.
func (c *call) round(n int, body io.ReadCloser) (*attempt, *http.Response, error) {
	if !c.hedged {
		return c.send(n, body)
	}
	outcomes := make(chan outcome, 1+c.p.hedge.copies())
	var inflight []*attempt
	launch := func(n int, body io.ReadCloser) {
		a, r := c.newAttempt(n, body)
		inflight = append(inflight, a)
		go func() {
			resp, err := c.do(a, r)
			outcomes <- outcome{a, resp, err}
		}()
	}
	launch(n, body)
	timer := time.NewTimer(c.p.hedge.After)
	defer timer.Stop()
	copies, hedging := 0, true
	var last outcome
	for pending := 1; pending > 0; {
		select {
		case o := <-outcomes:
			pending--
			if last.a != nil {
				last.a.discard(last.resp)
			}
			if o.err == nil && !c.p.retryOn.has(o.resp.StatusCode) {
				cancelLosers(o.a, inflight, outcomes, pending)
				return o.a, o.resp, nil
			}
			last = o
			// The upstream is failing, not slow: more copies would only
			// add to its load.
			hedging = false
		case <-timer.C:
			if !hedging {
				continue
			}
			next := n + len(inflight)
			if reason := c.grantHedge(); reason != 0 {
				c.emit(Event{Kind: EventHedge, Attempt: next, Reason: reason})
				hedging = false
				continue
			}
			body, ok := c.nextBody()
			if !ok {
				c.emit(Event{Kind: EventHedge, Attempt: next, Reason: ReasonBodyNotReplayable})
				hedging = false
				continue
			}
			c.emit(Event{Kind: EventHedge, Attempt: next})
			c.sent++
			launch(next, body)
			pending++
			if copies++; copies < c.p.hedge.copies() {
				timer.Reset(c.p.hedge.After)
			}
		}
	}
	return last.a, last.resp, last.err
}

// grantHedge decides whether another copy may be sent; it charges the
// budget when it may.
func (c *call) grantHedge() Reason {
	if c.sent > c.maxRetries {
		return ReasonExhausted
	}
	if !c.deadline.IsZero() && !time.Now().Before(c.deadline) {
		return ReasonDeadline
	}
	if c.budget != nil && !c.budget.TryReserve() {
		return ReasonBudget
	}
	return 0
}

// cancelLosers cancels every attempt but the winner and waits for the
// pending ones to come back, discarding what they bring.
func cancelLosers(winner *attempt, inflight []*attempt, outcomes <-chan outcome, pending int) {
	for _, a := range inflight {
		if a != winner {
			a.end()
		}
	}
	for ; pending > 0; pending-- {
		o := <-outcomes
		o.a.discard(o.resp)
	}
}

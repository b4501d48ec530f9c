package main

import (
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/httpretry/httpretry"
)

func init() {
	perTry := httpretry.DefaultPolicy()
	perTry.PerTryTimeout = 200 * time.Millisecond
	scenarios = []scenario{
		{title: "1. A flaky endpoint: two 503s, then 200",
			run: one(httpretry.DefaultPolicy(), request{http.MethodGet, "/flaky", "", ""})},
		{title: "2. Rate limited: 429 with Retry-After: 1\n" +
			"   (waited, plus a random spread so that a crowd does not come back at once)",
			run: one(httpretry.DefaultPolicy(), request{http.MethodGet, "/ratelimited", "", ""})},
		{title: "3. A slow endpoint, bounded by PerTryTimeout 200ms",
			run: one(perTry, request{http.MethodGet, "/slow", "", ""})},
		{title: "4. A POST without Idempotency-Key is not resent",
			run: one(httpretry.DefaultPolicy(), request{http.MethodPost, "/orders/a", "", "2 apples"})},
		{title: "5. A POST with Idempotency-Key is resent with the same body",
			run: one(httpretry.DefaultPolicy(), request{http.MethodPost, "/orders/b", "order-7f3a", "3 pears"})},
		{title: "6. A burst against a dead upstream: the budget stops the storm", run: burst},
		{title: "7. One request in ten stalls: hedging after 20ms cuts the tail", run: tail},
		{title: "8. Failover: the primary is down, the standby answers;\n" +
			"   an unkeyed POST the primary received is not failed over", run: failover},
		{title: "9. One attempt in fifty stalls 300 ms: hedging after the origin's learned 95th percentile", run: learnedTail},
		{title: "10. A failing origin goes to the back: the primary goes down and comes back", run: demote},
		{title: "11. A download cut twice mid-body: resumed from the byte it reached, not from 0", run: resume},
	}
}

func header(p httpretry.Policy) {
	fmt.Fprintf(out, "  policy: MaxRetries %d, backoff %v\n", p.MaxRetries, p.Backoff)
}

// one is a scenario of a single request through a fresh transport with
// policy p, told attempt by attempt.
func one(p httpretry.Policy, r request) func(*flakyServer) {
	return func(srv *flakyServer) {
		header(p)
		var l log
		c, _ := client(p, &l)
		send(c, &l, srv, r)
	}
}

// burst sends 100 concurrent GETs to an upstream that always fails. Without
// a budget each would be sent 4 times; the default budget allows as resends
// 20 % of the requests of the last 10 s, and beyond that share at most 10
// in the window from its floor credit. But after 2 failures in a row a
// resend waits for evidence, and the 100 failures of the burst are that
// evidence (DESIGN point 22): only the first resend, decided after one
// failure, goes.
func burst(srv *flakyServer) {
	p := httpretry.DefaultPolicy()
	p.Backoff = httpretry.ExponentialJitter(10*time.Millisecond, 50*time.Millisecond)
	header(p)
	var l log
	c, _ := client(p, &l)
	const clients = 100
	before := srv.calls.Load()
	var wg sync.WaitGroup
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := c.Get(srv.url + "/down")
			if err == nil {
				resp.Body.Close()
			}
		}()
	}
	wg.Wait()
	reasons := map[httpretry.Reason]int{}
	for _, e := range l.take() {
		if e.Kind == httpretry.EventGiveUp {
			reasons[e.Reason]++
		}
	}
	calls := srv.calls.Load() - before
	fmt.Fprintf(out, "  %d concurrent GET /down, every call answered 503\n", clients)
	fmt.Fprintf(out, "    resends sent: %d of the %d that MaxRetries %d allows\n",
		calls-clients, clients*p.MaxRetries, p.MaxRetries)
	fmt.Fprintf(out, "    gave up: %d requests when the upstream kept failing (hold),\n", reasons[httpretry.ReasonHold])
	fmt.Fprintf(out, "      %d when the budget refused a resend, %d when MaxRetries ran out\n",
		reasons[httpretry.ReasonBudget], reasons[httpretry.ReasonExhausted])
	fmt.Fprintf(out, "    => server saw %d calls for %d requests: amplification %.2f (no budget: up to %d)\n",
		calls, clients, float64(calls)/clients, clients*(p.MaxRetries+1))
}

// tail sends 40 sequential GETs to an endpoint where one request in ten
// stalls for 500 ms, first without hedging, then with Hedge{After: 20ms}.
func tail(srv *flakyServer) {
	const requests = 40
	for _, hedge := range []httpretry.Hedge{{}, {After: 20 * time.Millisecond, Max: 1}} {
		p := httpretry.DefaultPolicy()
		p.Hedge = hedge
		var l log
		c, rt := client(p, &l)
		before := srv.calls.Load()
		var took []time.Duration
		for range requests {
			start := time.Now()
			resp, err := c.Get(srv.url + "/tail")
			if err == nil {
				resp.Body.Close()
			}
			took = append(took, time.Since(start))
		}
		rt.CloseIdleConnections()
		hedges := 0
		for _, e := range l.take() {
			if e.Kind == httpretry.EventHedge && e.Reason == 0 {
				hedges++
			}
		}
		slices.Sort(took)
		name := "without hedging"
		if hedge.After > 0 {
			name = "with Hedge{After: 20ms, Max: 1}"
		}
		fmt.Fprintf(out, "  %d GET /tail %s\n", requests, name)
		fmt.Fprintf(out, "    => median %v, slowest %v; %d copies sent; server saw %d calls\n",
			took[requests/2].Round(10*time.Microsecond), took[requests-1].Round(time.Millisecond),
			hedges, srv.calls.Load()-before)
	}
}

// Package httpretrytest helps test code that uses httpretry. Its
// Transport is a base http.RoundTripper that answers each attempt from a
// script (statuses, Retry-After, resets, refused connections, stalls, cut
// bodies) and records every attempt it receives, with its number and the
// instant it arrived.
//
//	base := httpretrytest.Script(httpretrytest.Status(503), httpretrytest.Status(200))
//	client := &http.Client{Transport: httpretry.New(base)}
//	// ... then len(base.Attempts()) == 2.
//
// # Virtual time
//
// A RetryTransport and its Budgets run inside a testing/synctest bubble:
// their waits, Retry-After, per-try timeouts and hedge delays are timers
// of the bubble, so they take no real time, and the instants a Transport
// records are exact. Every goroutine they start ends with its request,
// so synctest.Test returns once the test's requests have. A budget keeps
// one timer while its host is busy and stops it after a tenth of its
// window with no request (1 s by default); one still set when the test
// returns never fires, since a bubble's clock stops with its test.
//
// Create the transport, and the Budgets it charges, inside the bubble of
// the test that uses them. Every bubble starts at the same instant
// (midnight UTC, 2000-01-01), so a budget shared by several bubbles
// counts their requests in one window; and a budget's timer belongs to
// the bubble that started it: Go stops the program when code outside that
// bubble resets or stops it.
package httpretrytest

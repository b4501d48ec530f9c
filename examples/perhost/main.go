// Command perhost shows per-host policies: two loopback servers, one
// treated as a payments API (few resends, bounded in time, keyed POSTs),
// the other with the defaults, and one budget registry shared by a
// transport rebuilt as on a configuration reload.
//
//	go run ./examples/perhost
package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"time"

	"github.com/httpretry/httpretry"
)

func main() {
	catalog, catalogCalls := failing("catalog")
	defer catalog.Close()
	payments, paymentCalls := failing("payments")
	defer payments.Close()
	paymentsHost := strings.TrimPrefix(payments.URL, "http://")

	budgets := httpretry.NewBudgets()
	build := func(paymentRetries int) *http.Client {
		every := httpretry.DefaultPolicy()
		every.Backoff = httpretry.Fixed(10 * time.Millisecond)
		return &http.Client{Transport: httpretry.New(nil,
			httpretry.WithBudgets(budgets),
			httpretry.WithPolicy(every),
			httpretry.WithHostPolicy(paymentsHost, httpretry.Policy{
				MaxRetries:         paymentRetries,
				Backoff:            httpretry.NoBackoff(),
				PerTryTimeout:      time.Second,
				Deadline:           3 * time.Second,
				AutoIdempotencyKey: true,
			}),
		)}
	}

	c := build(1)
	post(c, catalog.URL)
	post(c, payments.URL)
	fmt.Printf("catalog: a POST without a key is sent once: %d call(s)\n", catalogCalls.Load())
	fmt.Printf("payments: AutoIdempotencyKey makes it resendable, MaxRetries 1: %d call(s)\n", paymentCalls.Load())

	c = build(2) // a reload: new policies, same budgets
	post(c, payments.URL)
	stats := budgets.For(paymentsHost, httpretry.BudgetConfig{}).Stats()
	fmt.Printf("after the reload, payments: %d more call(s); its budget counted %d requests and %d resends\n",
		paymentCalls.Load()-2, stats.Requests, stats.Retries)
}

func post(c *http.Client, url string) {
	resp, err := c.Post(url, "text/plain", strings.NewReader("pay 10 EUR"))
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	resp.Body.Close()
}

// failing answers every request with 503 and counts them.
func failing(name string) (*httptest.Server, *atomic.Int32) {
	var calls atomic.Int32
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		calls.Add(1)
		http.Error(w, name+" is down", http.StatusServiceUnavailable)
	})), &calls
}

package httpretry_test

import (
	"fmt"
	"time"

	"github.com/httpretry/httpretry"
)

func ExampleBudgets_Range() {
	budgets := httpretry.NewBudgets()
	cfg := httpretry.BudgetConfig{Percent: 20, MinRetries: 5, Window: time.Minute}
	api := budgets.For("api.example.com", cfg)
	for range 10 {
		api.Record()
	}
	for range 3 {
		api.TryReserve() // two from the share of 10 requests, one from the floor's credit
	}
	budgets.For("Auth.Example.com:443", cfg).Record()

	budgets.Range(func(host string, s httpretry.BudgetStats) bool {
		fmt.Printf("%s: %d requests, %d resends, allowance %d, credit %d\n",
			host, s.Requests, s.Retries, s.Allowance, s.Credit)
		return true
	})
	// Output:
	// api.example.com: 10 requests, 3 resends, allowance 2, credit 4
	// auth.example.com: 1 requests, 0 resends, allowance 0, credit 5
}

func ExampleBudgets_String() {
	budgets := httpretry.NewBudgets()
	// expvar.Publish("httpretry", budgets) serves the same at /debug/vars.
	b := budgets.For("api.example.com", httpretry.BudgetConfig{})
	b.Record()
	b.TryReserve()
	fmt.Println(budgets)
	// Output: {"api.example.com":{"requests":1,"retries":1,"allowance":0,"credit":9,"copies":0,"hedgeAfter":"0s","demotedFor":"0s","streak":0,"parked":0}}
}

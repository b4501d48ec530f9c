package httpretry

import (
	"net/http"
	"testing"
	"time"
)

// BenchmarkHedgedRound is a hedged round whose first attempt answers at
// once, through an http.Client, with a fixed delay and with a learned one
// (DESIGN point 17): the learned round adds an atomic load of the delay
// and a record of the answer, and must add no allocation. The stub
// answers long before any delay, so no copy is sent; the learned row is
// warm after its first 32 rounds.
func BenchmarkHedgedRound(b *testing.B) {
	for _, tc := range []struct {
		name  string
		hedge Hedge
	}{
		{"after", Hedge{After: 50 * time.Millisecond, Max: 1}},
		{"quantile", Hedge{Quantile: 0.95, After: 50 * time.Millisecond, Max: 1}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			p := DefaultPolicy()
			p.Hedge = tc.hedge
			c := &http.Client{Transport: New(stubTransport{}, WithPolicy(p))}
			req, _ := http.NewRequest(http.MethodGet, "http://api.example.com/items", nil)
			b.ReportAllocs()
			for b.Loop() {
				resp, err := c.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				resp.Body.Close()
			}
		})
	}
}

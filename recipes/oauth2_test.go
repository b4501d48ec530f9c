package recipes_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/oauth2"

	"github.com/httpretry/httpretry"
)

// freshTokens stands for a token source whose token has expired by the time
// each attempt asks: every call gives a new one.
type freshTokens struct{ n atomic.Int32 }

func (s *freshTokens) Token() (*oauth2.Token, error) {
	return &oauth2.Token{AccessToken: fmt.Sprintf("token-%d", s.n.Add(1))}, nil
}

// Example_oauth2 shows why httpretry goes outside oauth2.Transport: each
// attempt then asks the token source, which refreshes a token that expired
// during a long wait; inside it, every resend repeats the first attempt's
// token.
func Example_oauth2() {
	var mu sync.Mutex
	var seen []string
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
		mu.Unlock()
		if calls.Add(1)%2 == 1 { // every request fails once
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()

	p := quickPolicy()
	for _, c := range []struct {
		name string
		rt   func(ts oauth2.TokenSource) http.RoundTripper
	}{
		{"httpretry outside oauth2 (the recipe)", func(ts oauth2.TokenSource) http.RoundTripper {
			return httpretry.New(&oauth2.Transport{Source: ts}, httpretry.WithPolicy(p))
		}},
		{"httpretry inside oauth2", func(ts oauth2.TokenSource) http.RoundTripper {
			return &oauth2.Transport{Source: ts, Base: httpretry.New(nil, httpretry.WithPolicy(p))}
		}},
	} {
		mu.Lock()
		seen = nil
		mu.Unlock()
		client := &http.Client{Transport: c.rt(&freshTokens{})}
		resp, err := client.Get(srv.URL)
		if err != nil {
			fmt.Println(err)
			return
		}
		resp.Body.Close()
		client.CloseIdleConnections()
		mu.Lock()
		fmt.Printf("%s: %d, attempts carried %v\n", c.name, resp.StatusCode, seen)
		mu.Unlock()
	}
	// Output:
	// httpretry outside oauth2 (the recipe): 200, attempts carried [token-1 token-2]
	// httpretry inside oauth2: 200, attempts carried [token-1 token-1]
}

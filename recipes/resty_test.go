package recipes_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"

	"github.com/go-resty/resty/v2"

	"github.com/httpretry/httpretry"
)

// Example_resty shows resty with its own retries off and httpretry as its
// transport. httpretry records no body here (MaxReplayBytes -1), and the
// upload is still resent whole: resty read it into memory to set GetBody.
func Example_resty() {
	var mu sync.Mutex
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		if len(got) == 0 {
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusServiceUnavailable)
		} else {
			w.WriteHeader(http.StatusCreated)
		}
		got = append(got, fmt.Sprintf("%s %q", r.Method, body))
	}))
	defer srv.Close()

	p := quickPolicy()
	p.MaxReplayBytes = -1
	client := resty.New().
		SetRetryCount(0). // resty's own retries off (0 is its default)
		SetTransport(httpretry.New(nil, httpretry.WithPolicy(p)))
	defer client.GetClient().CloseIdleConnections()

	resp, err := client.R().
		SetHeader("Idempotency-Key", "order-7").                 // a POST may be resent only with a key
		SetBody(io.MultiReader(strings.NewReader("an upload"))). // a reader with no GetBody of its own
		Post(srv.URL)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("status", resp.StatusCode())
	mu.Lock()
	defer mu.Unlock()
	for _, g := range got {
		fmt.Println(" ", g)
	}
	// Output:
	// status 201
	//   POST "an upload"
	//   POST "an upload"
}

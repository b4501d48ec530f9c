package httpretrytest_test

import (
	"fmt"
	"net/http"

	"github.com/httpretry/httpretry"
	"github.com/httpretry/httpretry/httpretrytest"
)

// A test of code that uses httpretry: a scripted upstream that fails
// twice, a fresh budget, and the attempts it received.
func Example() {
	base := httpretrytest.Script(
		httpretrytest.Status(503).RetryAfter(0), // examples run in real time
		httpretrytest.Reset(),
		httpretrytest.Status(200).Body("ok"),
	)
	p := httpretry.DefaultPolicy()
	p.Backoff = httpretry.NoBackoff()
	client := &http.Client{Transport: httpretry.New(base,
		httpretry.WithPolicy(p), httpretry.WithBudgets(httpretry.NewBudgets()))}

	resp, err := client.Get("http://api.example.com/items")
	if err != nil {
		fmt.Println(err)
		return
	}
	resp.Body.Close()
	fmt.Println(resp.StatusCode)
	for _, a := range base.Attempts() {
		fmt.Println(a.N, a.Method, a.URL)
	}
	// Output:
	// 200
	// 1 GET http://api.example.com/items
	// 2 GET http://api.example.com/items
	// 3 GET http://api.example.com/items
}

// Scripts chosen by request: each pattern, in http.ServeMux's syntax,
// has its own sequence of answers.
func ExampleTransport_On() {
	base := httpretrytest.Script(httpretrytest.Status(404)).
		On("GET /items/{id}", httpretrytest.Status(502), httpretrytest.Status(200)).
		On("backup.example.com/", httpretrytest.Refused())
	for _, url := range []string{
		"http://api.example.com/items/7",
		"http://api.example.com/items/7",
		"http://api.example.com/users",
		"http://backup.example.com/items/7",
	} {
		resp, err := base.RoundTrip(must(http.NewRequest(http.MethodGet, url, nil)))
		if err != nil {
			fmt.Println(url, err)
			continue
		}
		resp.Body.Close()
		fmt.Println(url, resp.StatusCode)
	}
	// Output:
	// http://api.example.com/items/7 502
	// http://api.example.com/items/7 200
	// http://api.example.com/users 404
	// http://backup.example.com/items/7 dial tcp: connect: connection refused
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

package httpretry_test

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/httpretry/httpretry"
)

func ExampleWithLogger() {
	// An upstream that answers 503 to its first two requests, then 200.
	calls := 0
	upstream := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		calls++
		code := http.StatusOK
		if calls <= 2 {
			code = http.StatusServiceUnavailable
		}
		return &http.Response{StatusCode: code, Body: io.NopCloser(strings.NewReader("")), Request: r}, nil
	})

	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		Level: slog.LevelDebug,
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey && len(groups) == 0 {
				return slog.Attr{} // drop the time, to keep the output stable
			}
			return a
		},
	}))
	p := httpretry.DefaultPolicy()
	p.Backoff = httpretry.Fixed(10 * time.Millisecond)
	client := &http.Client{Transport: httpretry.New(upstream, httpretry.WithPolicy(p), httpretry.WithLogger(logger))}

	// The query, the user info and the headers never reach the log.
	resp, err := client.Get("https://user:secret@api.example.com/items?token=secret")
	if err != nil {
		fmt.Println(err)
		return
	}
	resp.Body.Close()
	fmt.Println("GET:", resp.StatusCode)

	// A POST without an idempotency key is not resent: a give-up, at Warn.
	calls = 0
	resp, err = client.Post("https://api.example.com/pay", "application/json", strings.NewReader("{}"))
	if err != nil {
		fmt.Println(err)
		return
	}
	resp.Body.Close()
	fmt.Println("POST:", resp.StatusCode)
	// Output:
	// level=DEBUG msg="httpretry retry" method=GET url=https://api.example.com/items attempt=1 status=503 delay=10ms origin=https://api.example.com
	// level=DEBUG msg="httpretry retry" method=GET url=https://api.example.com/items attempt=2 status=503 delay=10ms origin=https://api.example.com
	// GET: 200
	// level=WARN msg="httpretry give-up" method=POST url=https://api.example.com/pay attempt=1 status=503 reason=not-idempotent origin=https://api.example.com
	// POST: 503
}

package bench

import (
	"net/http"
	"testing"

	"github.com/httpretry/httpretry/internal/fakeorigin"
)

// StartLoopback starts h on 127.0.0.1 and on no other address: every server
// in this module is reached over loopback only. The caller closes it.
func StartLoopback(h http.Handler) (*fakeorigin.Server, error) {
	return fakeorigin.Start(h)
}

// Answers of this module's upstreams: a short 200, as a healthy upstream
// gives, and a short 503.
var (
	okAnswer    = fakeorigin.Answer{Header: http.Header{"Content-Type": {"text/plain"}}, Body: []byte("ok\n")}
	unavailable = fakeorigin.Answer{Status: http.StatusServiceUnavailable,
		Header: http.Header{"Content-Type": {"text/plain"}}, Body: []byte("unavailable\n")}
)

// NewOKServer starts a loopback server that answers 200 "ok" to everything.
func NewOKServer() (*fakeorigin.Server, error) {
	return StartLoopback(fakeorigin.New(fakeorigin.Always(okAnswer)).Quiet())
}

// LoopbackGET returns a benchmark of sequential GETs to url through an
// http.Client whose transport is rt, each response read and closed so that
// one kept-alive connection carries them all.
func LoopbackGET(url string, rt http.RoundTripper) func(*testing.B) {
	return func(b *testing.B) {
		client := &http.Client{Transport: rt}
		req, err := http.NewRequest(http.MethodGet, url, nil)
		if err != nil {
			b.Fatal(err)
		}
		// One request outside the timer dials the connection.
		if err := send(client, req); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if err := send(client, req); err != nil {
				b.Fatal(err)
			}
		}
	}
}

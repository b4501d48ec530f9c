package bench

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
)

// StartLoopback starts h on 127.0.0.1 and on no other address: every server
// in this module is reached over loopback only. The caller closes it.
func StartLoopback(h http.Handler) (*httptest.Server, error) {
	return startLoopback(&http.Server{Handler: h})
}

// startLoopback is StartLoopback for a server configured by the caller,
// for instance with a ConnState hook.
func startLoopback(cfg *http.Server) (*httptest.Server, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("bench: listen on loopback: %w", err)
	}
	s := &httptest.Server{Listener: l, Config: cfg}
	s.Start()
	return s, nil
}

// okHandler answers every request with a short 200, as a healthy upstream.
func okHandler(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain")
	_, _ = w.Write([]byte("ok\n"))
}

// NewOKServer starts a loopback server that answers 200 "ok" to everything.
func NewOKServer() (*httptest.Server, error) {
	return StartLoopback(http.HandlerFunc(okHandler))
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

package bench

import (
	"net/http"
	"net/http/httptest"
)

// inProcessBase serves each request with h in the caller's goroutine, a
// network that takes no time.
type inProcessBase struct{ h http.Handler }

func (b inProcessBase) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		defer r.Body.Close()
	}
	if err := r.Context().Err(); err != nil {
		return nil, err
	}
	rec := httptest.NewRecorder()
	b.h.ServeHTTP(rec, r)
	resp := rec.Result()
	resp.Request = r
	return resp, nil
}

func (inProcessBase) CloseIdleConnections() {}

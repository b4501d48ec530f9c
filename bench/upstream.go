package bench

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"time"
)

// RequestIDHeader carries the client request's number, so that an upstream
// can tell which attempts belong to which call: every resend of a request
// repeats its headers.
const RequestIDHeader = "X-Bench-Request"

// Upstream is a loopback server that answers 503 during an outage and 200
// after it, and counts the requests and connections it receives, in total
// and per RequestIDHeader. It is safe for concurrent use.
type Upstream struct {
	// URL is the server's base URL, on 127.0.0.1.
	URL string

	srv     *httptest.Server
	downFor time.Duration
	start   atomic.Pointer[time.Time]
	total   atomic.Int64
	conns   atomic.Int64
	perID   []atomic.Int32
}

// NewUpstream starts an Upstream that can attribute requests numbered
// 0 to ids-1. It answers 503 for downFor after Begin (a negative downFor:
// for ever) and 200 otherwise; before Begin it is down.
func NewUpstream(ids int, downFor time.Duration) (*Upstream, error) {
	u := &Upstream{downFor: downFor, perID: make([]atomic.Int32, ids)}
	srv, err := startLoopback(&http.Server{
		Handler: http.HandlerFunc(u.serve),
		ConnState: func(_ net.Conn, s http.ConnState) {
			if s == http.StateNew {
				u.conns.Add(1)
			}
		},
	})
	if err != nil {
		return nil, err
	}
	u.srv, u.URL = srv, srv.URL
	return u, nil
}

// Begin starts the outage clock at now.
func (u *Upstream) Begin(now time.Time) { u.start.Store(&now) }

// Requests returns how many requests arrived, attributed or not.
func (u *Upstream) Requests() int64 { return u.total.Load() }

// Connections returns how many connections clients opened.
func (u *Upstream) Connections() int64 { return u.conns.Load() }

// RequestsFor returns how many attempts of request id arrived.
func (u *Upstream) RequestsFor(id int) int {
	if id < 0 || id >= len(u.perID) {
		return 0
	}
	return int(u.perID[id].Load())
}

// Close shuts the server down and closes its connections.
func (u *Upstream) Close() { u.srv.Close() }

func (u *Upstream) serve(w http.ResponseWriter, r *http.Request) {
	u.total.Add(1)
	if id, err := strconv.Atoi(r.Header.Get(RequestIDHeader)); err == nil && id >= 0 && id < len(u.perID) {
		u.perID[id].Add(1)
	}
	w.Header().Set("Content-Type", "text/plain")
	if u.down(time.Now()) {
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte("unavailable\n"))
		return
	}
	_, _ = w.Write([]byte("ok\n"))
}

func (u *Upstream) down(now time.Time) bool {
	start := u.start.Load()
	if start == nil || u.downFor < 0 {
		return true
	}
	return now.Sub(*start) < u.downFor
}

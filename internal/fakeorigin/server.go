package fakeorigin

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

// ServeHTTP answers r over a real connection: a reset is a TCP RST, a
// cut aborts the connection after flushing the bytes before it, a stall
// flushes them and waits. Refuse and DialHang cannot happen to a request
// a server has accepted: the connection is reset, or held, unread.
func (o *Origin) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	q, a := o.begin(r)
	ctx := r.Context()
	switch a.Fault {
	case Refuse:
		ResetConn(w)
		return
	case DialHang:
		<-ctx.Done()
		return
	}
	o.record(q)
	if sleep(ctx, a.After) != nil {
		return
	}
	switch a.Fault {
	case Reset:
		ResetConn(w)
		return
	case BlackHole:
		<-ctx.Done()
		return
	}
	if a.Serve != nil {
		// The origin read the body; the handler reads it again, and has
		// the connection itself, to hijack.
		body, _ := q.ReadBody()
		r.Body = io.NopCloser(bytes.NewReader(body))
		a.Serve(w, r)
		return
	}
	for k, v := range a.Header {
		w.Header()[k] = v
	}
	cw := &cutWriter{ResponseWriter: w, o: o, a: a, ctx: ctx}
	switch {
	case a.Content:
		a.serveContent(cw, r)
	default:
		if a.Status != 0 {
			cw.WriteHeader(a.Status)
		}
		cw.Write(a.Body)
	}
}

// cutWriter sends a.Cut body bytes, flushes them, then breaks as a.Break
// says; it counts what it sends in o.served.
type cutWriter struct {
	http.ResponseWriter
	o       *Origin
	a       Answer
	ctx     context.Context
	written int
	past    bool // a stall that ended: the rest goes on whole
	gone    bool // reset: the connection is no longer the handler's
}

var errGone = errors.New("fakeorigin: the connection was reset")

func (w *cutWriter) Flush() { http.NewResponseController(w.ResponseWriter).Flush() }

func (w *cutWriter) Write(p []byte) (int, error) {
	if w.gone {
		return 0, errGone
	}
	if w.a.Break == Whole || w.past || w.written+len(p) < w.a.Cut {
		return w.write(p)
	}
	k := w.a.Cut - w.written
	n, err := w.write(p[:k])
	if err != nil {
		return n, err
	}
	w.Flush()
	switch w.a.Break {
	case ResetBody:
		ResetConn(w.ResponseWriter)
		w.gone = true
		return n, errGone
	case Stall:
		if w.a.Resume <= 0 || sleep(w.ctx, w.a.Resume) != nil {
			panic(http.ErrAbortHandler)
		}
		w.past = true
		m, err := w.write(p[k:])
		return n + m, err
	}
	panic(http.ErrAbortHandler)
}

func (w *cutWriter) write(p []byte) (int, error) {
	n, err := w.ResponseWriter.Write(p)
	w.written += n
	w.o.served.Add(int64(n))
	return n, err
}

// ResetConn drops the connection under a handler with a TCP RST, as a
// crashing upstream does.
func ResetConn(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	conn.Close()
}

// Server is a loopback server that counts its connections.
type Server struct {
	*httptest.Server
	conns atomic.Int64 // ever accepted
	open  atomic.Int64 // open now
}

// Start serves h on 127.0.0.1, and on no other address, with the
// configure functions applied to its http.Server first. The caller
// closes it.
func Start(h http.Handler, configure ...func(*http.Server)) (*Server, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("fakeorigin: listen on loopback: %w", err)
	}
	s := &Server{}
	cfg := &http.Server{Handler: h}
	for _, c := range configure {
		c(cfg)
	}
	own := cfg.ConnState
	cfg.ConnState = func(c net.Conn, st http.ConnState) {
		switch st {
		case http.StateNew:
			s.conns.Add(1)
			s.open.Add(1)
		case http.StateClosed, http.StateHijacked:
			s.open.Add(-1)
		}
		if own != nil {
			own(c, st)
		}
	}
	s.Server = &httptest.Server{Listener: l, Config: cfg}
	s.Start()
	return s, nil
}

// Serve is Start for a test, which fails if the server cannot start; the
// server is closed when the test ends.
func Serve(t testing.TB, h http.Handler, configure ...func(*http.Server)) *Server {
	t.Helper()
	s, err := Start(h, configure...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// Conns returns how many connections the server accepted.
func (s *Server) Conns() int64 { return s.conns.Load() }

// Open returns how many connections are open now.
func (s *Server) Open() int64 { return s.open.Load() }

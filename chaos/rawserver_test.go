package chaos

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// rawServer is a loopback TCP server that answers with hand-written bytes,
// so that a test can send what no well-behaved HTTP server would.
type rawServer struct {
	ln     net.Listener
	script func(c *rawConn)
	done   chan struct{}
	wg     sync.WaitGroup

	accepted atomic.Int64
	open     atomic.Int64

	mu       sync.Mutex
	conns    map[net.Conn]struct{}
	requests []rawRequest
}

// rawRequest is what the server saw of one request.
type rawRequest struct {
	at       time.Time
	method   string
	id       string
	bodySum  string // "" when the body was not read
	wantSum  string
	complete bool // the body was read to its end
}

// rawConn is one accepted connection handed to a script.
type rawConn struct {
	net.Conn
	br  *bufio.Reader
	n   int // 1-based order of acceptance
	srv *rawServer
}

// newRawServer listens on 127.0.0.1 and runs script for each connection;
// it closes every connection and waits for every script when the test
// ends.
func newRawServer(t testing.TB, script func(c *rawConn)) *rawServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s := &rawServer{ln: ln, script: script, done: make(chan struct{}), conns: map[net.Conn]struct{}{}}
	s.wg.Add(1)
	go s.accept()
	t.Cleanup(s.close)
	return s
}

// URL is the server's base URL.
func (s *rawServer) URL() string { return "http://" + s.ln.Addr().String() }

func (s *rawServer) accept() {
	defer s.wg.Done()
	for {
		conn, err := s.ln.Accept()
		if err != nil {
			return
		}
		n := int(s.accepted.Add(1))
		s.open.Add(1)
		s.mu.Lock()
		s.conns[conn] = struct{}{}
		s.mu.Unlock()
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer func() {
				conn.Close()
				s.mu.Lock()
				delete(s.conns, conn)
				s.mu.Unlock()
				s.open.Add(-1)
			}()
			s.script(&rawConn{Conn: conn, br: bufio.NewReader(conn), n: n, srv: s})
		}()
	}
}

func (s *rawServer) close() {
	close(s.done)
	s.ln.Close()
	s.mu.Lock()
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// seen returns a copy of the requests the server read.
func (s *rawServer) seen() []rawRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]rawRequest(nil), s.requests...)
}

// readHead reads a request's head and records its arrival.
func (c *rawConn) readHead() (*http.Request, error) {
	req, err := http.ReadRequest(c.br)
	if err != nil {
		return nil, err
	}
	c.srv.mu.Lock()
	c.srv.requests = append(c.srv.requests, rawRequest{
		at: time.Now(), method: req.Method, id: req.Header.Get(hdrID), wantSum: req.Header.Get(hdrBodySum),
	})
	c.srv.mu.Unlock()
	return req, nil
}

// readBody reads the body of req to its end and records its digest; a cut
// body is recorded as incomplete, never as a wrong one.
func (c *rawConn) readBody(req *http.Request) error {
	b, err := io.ReadAll(req.Body)
	c.srv.mu.Lock()
	defer c.srv.mu.Unlock()
	last := &c.srv.requests[len(c.srv.requests)-1]
	if err == nil {
		last.complete = true
		last.bodySum = bodySum(b)
	}
	return err
}

// readRequest reads a whole request.
func (c *rawConn) readRequest() (*http.Request, error) {
	req, err := c.readHead()
	if err != nil {
		return nil, err
	}
	return req, c.readBody(req)
}

// write sends raw bytes, ignoring errors: the peer may be gone on purpose.
func (c *rawConn) write(s string) { _, _ = io.WriteString(c.Conn, s) }

// sleep waits d or until the server closes, and reports whether it was
// the full d.
func (c *rawConn) sleep(d time.Duration) bool {
	select {
	case <-time.After(d):
		return true
	case <-c.srv.done:
		return false
	}
}

// reset closes the connection with a TCP RST rather than a FIN.
func (c *rawConn) reset() {
	if tc, ok := c.Conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	c.Conn.Close()
}

// drain reads until the peer closes, so that a script can hold a
// connection open like a server that never answers.
func (c *rawConn) drain() { _, _ = io.Copy(io.Discard, c.br) }

package httpretrytest

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Answer is how a Transport answers one attempt: a response, or an error,
// perhaps after a delay. Status, Content, Reset, Refused, Stall and Error
// make one; its methods return a changed copy, so one Answer can start
// many. The zero Answer is a 200 with an empty body.
type Answer struct {
	status  int
	header  http.Header
	body    string
	content bool // serve body as http.ServeContent does, honouring Range
	cut     bool // the body breaks after cutAt bytes
	cutAt   int
	after   time.Duration
	stall   bool
	err     error
}

// Status answers with a response of status code and an empty body.
func Status(code int) Answer { return Answer{status: code} }

// Content answers as http.ServeContent serves body under the strong
// validator etag (a quoted string, such as `"v1"`): a 200 with the whole
// body and Accept-Ranges, or a 206 with the range a Range request asks
// for, if its If-Range, if any, names etag. It is the origin a resumed
// body needs (httpretry.Resume).
func Content(etag, body string) Answer {
	return Answer{header: http.Header{"Etag": {etag}}, body: body, content: true}
}

// Reset fails the attempt as a connection the server reset does, with a
// *net.OpError wrapping syscall.ECONNRESET: the request may have reached
// the server.
func Reset() Answer {
	return Error(&net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)})
}

// Refused fails the attempt as a refused dial does, with a *net.OpError
// (Op "dial") wrapping syscall.ECONNREFUSED: the request provably never
// left, so httpretry may resend even a POST.
func Refused() Answer {
	return Error(&net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)})
}

// Error fails the attempt with err.
func Error(err error) Answer { return Answer{err: err} }

// Stall never answers: the attempt ends when its request's context does,
// with the context's error. It is the upstream that a per-try timeout, a
// deadline or a hedged copy is for.
func Stall() Answer { return Answer{stall: true} }

// Header returns a copy of a that also sends the header key with value.
func (a Answer) Header(key, value string) Answer {
	a.header = a.header.Clone()
	if a.header == nil {
		a.header = http.Header{}
	}
	a.header.Add(key, value)
	return a
}

// RetryAfter returns a copy of a that sends Retry-After: d in seconds,
// rounded up to a whole second as the header's delay form requires.
func (a Answer) RetryAfter(d time.Duration) Answer {
	secs := (d + time.Second - 1) / time.Second
	return a.Header("Retry-After", strconv.FormatInt(int64(secs), 10))
}

// Body returns a copy of a whose response has body s.
func (a Answer) Body(s string) Answer {
	a.body = s
	return a
}

// CutAfter returns a copy of a whose response body breaks after n bytes:
// the next Read fails with io.ErrUnexpectedEOF, as a body whose connection
// closes early does, while the response's ContentLength still declares
// the whole.
func (a Answer) CutAfter(n int) Answer {
	a.cut, a.cutAt = true, max(n, 0)
	return a
}

// After returns a copy of a that answers only after d: its response
// headers, or its error, arrive d after the attempt. An attempt whose
// context ends first fails with the context's error.
func (a Answer) After(d time.Duration) Answer {
	a.after = d
	return a
}

// respond answers r as a says.
func (a Answer) respond(r *http.Request) (*http.Response, error) {
	ctx := r.Context()
	if a.stall {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	if err := sleep(ctx, a.after); err != nil {
		return nil, err
	}
	if a.err != nil {
		return nil, a.err
	}
	code, header, body := a.status, a.header.Clone(), a.body
	if a.content {
		code, header, body = serveContent(r, header, body)
	}
	if code == 0 {
		code = http.StatusOK
	}
	if header == nil {
		header = http.Header{}
	}
	var rd io.Reader = strings.NewReader(body)
	if a.cut && a.cutAt < len(body) {
		rd = io.MultiReader(strings.NewReader(body[:a.cutAt]), errReader{io.ErrUnexpectedEOF})
	}
	return &http.Response{
		Status:        fmt.Sprintf("%d %s", code, http.StatusText(code)),
		StatusCode:    code,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        header,
		Body:          io.NopCloser(rd),
		ContentLength: int64(len(body)),
		Request:       r,
	}, nil
}

// sleep waits d, or until ctx ends, then with its error.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// serveContent is what http.ServeContent answers r with for body under
// header, which holds its ETag.
func serveContent(r *http.Request, header http.Header, body string) (int, http.Header, string) {
	w := httptest.NewRecorder()
	maps.Copy(w.Header(), header)
	http.ServeContent(w, r, "", time.Time{}, strings.NewReader(body))
	return w.Code, w.Header(), w.Body.String()
}

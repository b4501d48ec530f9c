package bench

import (
	"bytes"
	"io"
	"net/http"
	"testing"
)

// PayloadSize is the body of the POST cases: 1 MiB, which is also
// httpretry's default MaxReplayBytes, so that its plain-reader case is
// buffered rather than refused.
const PayloadSize = 1 << 20

// stubURL is never dialled: StubTransport answers every request itself.
const stubURL = "http://stub.invalid/resource"

// payload is shared read-only by every POST case.
var payload = make([]byte, PayloadSize)

// Case is one request shape measured against every library.
type Case struct {
	Name string
	// Bench returns a benchmark that sends the request through an
	// http.Client whose transport is rt.
	Bench func(rt http.RoundTripper) func(*testing.B)
}

// OverheadCases returns the in-process cases of scenario 1, whose base is
// a StubTransport.
func OverheadCases() []Case {
	return []Case{
		{Name: "GET", Bench: BenchGET},
		{Name: "POSTGetBody", Bench: BenchPOSTGetBody},
		{Name: "POSTReader", Bench: BenchPOSTReader},
	}
}

// BenchGET sends one GET whose first attempt succeeds. The request is built
// once, so that the figure is the client and middleware cost alone.
func BenchGET(rt http.RoundTripper) func(*testing.B) {
	return func(b *testing.B) {
		client := &http.Client{Transport: rt}
		req, err := http.NewRequest(http.MethodGet, stubURL, nil)
		if err != nil {
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

// BenchPOSTGetBody sends a 1 MiB POST built from a *bytes.Reader, so that
// net/http sets GetBody and a middleware can replay without a copy. It
// carries an Idempotency-Key, so that httpretry treats it as resendable
// and must make its body replayable, as the peers do for every method.
func BenchPOSTGetBody(rt http.RoundTripper) func(*testing.B) {
	return func(b *testing.B) {
		client := &http.Client{Transport: rt}
		b.ReportAllocs()
		b.SetBytes(PayloadSize)
		for b.Loop() {
			req, err := http.NewRequest(http.MethodPost, stubURL, bytes.NewReader(payload))
			if err != nil {
				b.Fatal(err)
			}
			req.Header.Set("Idempotency-Key", "bench-post")
			if err := send(client, req); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchPOSTReader sends the same POST from a reader net/http does not
// recognise, so GetBody is nil and a middleware that may resend it has to
// keep what it sends. Its length is given, as it is for a file.
func BenchPOSTReader(rt http.RoundTripper) func(*testing.B) {
	return func(b *testing.B) {
		client := &http.Client{Transport: rt}
		b.ReportAllocs()
		b.SetBytes(PayloadSize)
		for b.Loop() {
			req, err := http.NewRequest(http.MethodPost, stubURL, &plainReader{b: payload})
			if err != nil {
				b.Fatal(err)
			}
			req.ContentLength = PayloadSize
			req.Header.Set("Idempotency-Key", "bench-post")
			if err := send(client, req); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// send does what a caller does with a response: read it to the end and
// close it, so that connections are reused and wrapped bodies finish.
func send(client *http.Client, req *http.Request) error {
	_, err := sendStatus(client, req)
	return err
}

// plainReader reads a byte slice and offers nothing else: no Len, Seek or
// WriteTo for net/http or a middleware to take a shortcut through.
type plainReader struct {
	b   []byte
	off int
}

func (r *plainReader) Read(p []byte) (int, error) {
	if r.off >= len(r.b) {
		return 0, io.EOF
	}
	n := copy(p, r.b[r.off:])
	r.off += n
	return n, nil
}

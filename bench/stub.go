package bench

import (
	"io"
	"net/http"
)

// StubTransport is an in-process base transport that answers 200 at once.
//
// It reads every request body to the end and closes it, as a real transport
// would, so that a middleware's copy of the body shows in B/op; it returns a
// fresh response per call, so that every library pays for the same
// response. It is safe for concurrent use.
type StubTransport struct{}

// RoundTrip consumes the request body and returns an empty 200 response.
func (StubTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		_, err := io.Copy(io.Discard, req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
	}
	return &http.Response{
		Status:     "200 OK",
		StatusCode: http.StatusOK,
		Proto:      "HTTP/1.1",
		ProtoMajor: 1,
		ProtoMinor: 1,
		Header:     http.Header{},
		Body:       http.NoBody,
		Request:    req,
	}, nil
}

package bench

import (
	"bytes"
	"flag"
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// closeRecorder notes whether it was read to the end and closed.
type closeRecorder struct {
	io.Reader
	closed bool
}

func (c *closeRecorder) Close() error { c.closed = true; return nil }

func TestStubTransportConsumesAndCloses(t *testing.T) {
	body := &closeRecorder{Reader: bytes.NewReader(make([]byte, 3000))}
	req, err := http.NewRequest(http.MethodPost, stubURL, body)
	require.NoError(t, err)
	resp, err := StubTransport{}.RoundTrip(req)
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Same(t, req, resp.Request)
	assert.True(t, body.closed)
	n, _ := body.Read(make([]byte, 1))
	assert.Zero(t, n, "read to the end")
	resp2, err := StubTransport{}.RoundTrip(req)
	require.NoError(t, err)
	assert.NotSame(t, resp, resp2, "a fresh response per call")
}

func TestPlainReaderHidesEverything(t *testing.T) {
	var r io.Reader = &plainReader{b: []byte("abc")}
	_, isSeeker := r.(io.Seeker)
	_, isWriterTo := r.(io.WriterTo)
	assert.False(t, isSeeker)
	assert.False(t, isWriterTo)
	got, err := io.ReadAll(r)
	require.NoError(t, err)
	assert.Equal(t, "abc", string(got))
	req, err := http.NewRequest(http.MethodPost, stubURL, &plainReader{b: payload})
	require.NoError(t, err)
	assert.Nil(t, req.GetBody, "net/http cannot replay a plain reader")
}

// TestEveryCaseRunsForEveryLibrary runs each benchmark once per library,
// so that a broken case shows up in go test and not only in make bench.
func TestEveryCaseRunsForEveryLibrary(t *testing.T) {
	bt := flag.Lookup("test.benchtime")
	require.NotNil(t, bt)
	old := bt.Value.String()
	require.NoError(t, flag.Set("test.benchtime", "1x"))
	defer func() { _ = flag.Set("test.benchtime", old) }()

	srv, err := NewOKServer()
	require.NoError(t, err)
	defer srv.Close()
	base := NewLoopbackBase()
	defer base.CloseIdleConnections()
	for _, l := range Libraries() {
		for _, c := range OverheadCases() {
			r := testing.Benchmark(c.Bench(l.Wrap(StubTransport{})))
			assert.Equal(t, 1, r.N, "%s/%s failed", c.Name, l.Name)
		}
		r := testing.Benchmark(LoopbackGET(srv.URL, l.Wrap(base)))
		assert.Equal(t, 1, r.N, "LoopbackGET/%s failed", l.Name)
	}
}

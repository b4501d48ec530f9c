package fakeorigin

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// both runs f against o in memory and over loopback, with the base each
// way needs.
func both(t *testing.T, script Script, f func(t *testing.T, o *Origin, base http.RoundTripper, url string)) {
	t.Run("memory", func(t *testing.T) {
		o := New(script)
		f(t, o, o, "http://origin.test")
	})
	t.Run("loopback", func(t *testing.T) {
		o := New(script)
		srv := Serve(t, o)
		tr := &http.Transport{}
		t.Cleanup(tr.CloseIdleConnections)
		f(t, o, tr, srv.URL)
	})
}

func get(t *testing.T, base http.RoundTripper, url string, header ...string) (*http.Response, error) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url+"/x", strings.NewReader("sent"))
	require.NoError(t, err)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	return base.RoundTrip(req)
}

func TestAnswersInOrderAndRecords(t *testing.T) {
	both(t, Sequence(Status(503).RetryAfter("2"), Answer{Body: []byte("ok")}), func(t *testing.T, o *Origin, base http.RoundTripper, url string) {
		for i, want := range []struct {
			status int
			ra     string
			body   string
		}{{503, "2", "Service Unavailable"}, {200, "", "ok"}, {200, "", "ok"}} {
			resp, err := get(t, base, url)
			require.NoError(t, err)
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			require.NoError(t, err)
			assert.Equal(t, want.status, resp.StatusCode, "request %d", i+1)
			assert.Equal(t, want.ra, resp.Header.Get("Retry-After"))
			assert.Equal(t, want.body, string(b))
		}
		atts := o.Attempts()
		require.Len(t, atts, 3)
		for i, a := range atts {
			assert.Equal(t, i+1, a.N)
			assert.Equal(t, "sent", string(a.Body))
			assert.NoError(t, a.BodyErr)
			assert.Equal(t, http.MethodGet, a.Method)
		}
		assert.Equal(t, int64(len("Service Unavailable")+4), o.Served())
	})
}

func TestResetAndBlackHole(t *testing.T) {
	both(t, Sequence(Answer{Fault: Reset}, Answer{Fault: BlackHole}), func(t *testing.T, o *Origin, base http.RoundTripper, url string) {
		_, err := get(t, base, url)
		require.Error(t, err)
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		_, err = base.RoundTrip(req)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Equal(t, 2, o.Requests())
	})
}

func TestRefusedInMemory(t *testing.T) {
	o := New(Always(Answer{Fault: Refuse}))
	_, err := get(t, o, "http://origin.test")
	var op *net.OpError
	require.ErrorAs(t, err, &op)
	assert.Equal(t, "dial", op.Op)
	assert.ErrorIs(t, err, syscall.ECONNREFUSED)
	assert.Empty(t, o.Attempts()[0].Body, "a refused request is never read")
}

func TestCutBodies(t *testing.T) {
	data := []byte(strings.Repeat("abcdefgh", 512))
	both(t, Sequence(Answer{Body: data, Break: Abort, Cut: 1000}, Answer{Body: data, Break: Stall, Cut: 10}),
		func(t *testing.T, o *Origin, base http.RoundTripper, url string) {
			resp, err := get(t, base, url)
			require.NoError(t, err)
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			assert.ErrorIs(t, err, io.ErrUnexpectedEOF)
			assert.Equal(t, data[:1000], b)

			ctx, cancel := context.WithCancel(context.Background())
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
			resp, err = base.RoundTrip(req)
			require.NoError(t, err)
			got := make([]byte, 10)
			_, err = io.ReadFull(resp.Body, got)
			require.NoError(t, err)
			assert.Equal(t, data[:10], got)
			time.AfterFunc(20*time.Millisecond, cancel)
			_, err = resp.Body.Read(got)
			assert.Error(t, err, "a stalled body fails once its request ends")
			resp.Body.Close()
		})
}

func TestStallResumesOverLoopback(t *testing.T) {
	data := []byte(strings.Repeat("x", 5000))
	o := New(Always(Answer{Body: data, Break: Stall, Cut: 100, Resume: 10 * time.Millisecond}))
	srv := Serve(t, o)
	resp, err := http.Get(srv.URL)
	require.NoError(t, err)
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	assert.Equal(t, data, b)
	assert.Equal(t, int64(len(data)), o.Served())
	http.DefaultTransport.(*http.Transport).CloseIdleConnections()
}

func TestContentHonoursRangeAndValidator(t *testing.T) {
	data := []byte("0123456789")
	h := http.Header{"Etag": {`"v1"`}}
	both(t, Always(Answer{Header: h, Body: data, Content: true}), func(t *testing.T, o *Origin, base http.RoundTripper, url string) {
		for _, c := range []struct {
			ifRange string
			status  int
			body    string
		}{{`"v1"`, 206, "456789"}, {`"v0"`, 200, "0123456789"}} {
			resp, err := get(t, base, url, "Range", "bytes=4-", "If-Range", c.ifRange)
			require.NoError(t, err)
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			require.NoError(t, err)
			assert.Equal(t, c.status, resp.StatusCode)
			assert.Equal(t, c.body, string(b))
		}
	})
}

func TestLatencyInVirtualTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o := New(Always(Answer{After: 3 * time.Second}))
		start := time.Now()
		resp, err := get(t, o, "http://origin.test")
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, 3*time.Second, time.Since(start))
		assert.Equal(t, 1, resp.Body.(*Body).Closes())
	})
}

func TestServerCountsConnections(t *testing.T) {
	srv := Serve(t, New(nil))
	tr := &http.Transport{}
	for range 3 {
		resp, err := tr.RoundTrip(must(http.NewRequest(http.MethodGet, srv.URL, nil)))
		require.NoError(t, err)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	tr.CloseIdleConnections()
	assert.Equal(t, int64(1), srv.Conns(), "one kept-alive connection")
	assert.Eventually(t, func() bool { return srv.Open() == 0 }, 5*time.Second, time.Millisecond)
	assert.True(t, strings.HasPrefix(srv.Listener.Addr().String(), "127.0.0.1:"))
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func TestServeReadsTheBodyAgain(t *testing.T) {
	echo := Answer{Serve: func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Echo", "1")
		w.WriteHeader(http.StatusAccepted)
		io.Copy(w, r.Body)
	}}
	both(t, Always(echo), func(t *testing.T, o *Origin, base http.RoundTripper, url string) {
		resp, err := get(t, base, url)
		require.NoError(t, err)
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		assert.Equal(t, http.StatusAccepted, resp.StatusCode)
		assert.Equal(t, "1", resp.Header.Get("X-Echo"))
		assert.Equal(t, "sent", string(b))
		assert.Equal(t, "sent", string(o.Attempts()[0].Body))
	})
}

func TestFaultsBeforeAnAnswer(t *testing.T) {
	for _, f := range []Fault{Refuse, DialHang} {
		both(t, Always(Answer{Fault: f}), func(t *testing.T, o *Origin, base http.RoundTripper, url string) {
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
			_, err := base.RoundTrip(req)
			require.Error(t, err, "fault %d", f)
			assert.Equal(t, 1, o.Requests())
		})
	}
}

func TestBodyBreaks(t *testing.T) {
	data := []byte("0123456789")
	for _, c := range []struct {
		name   string
		brk    Break
		joined bool
		want   error  // what the Read at the cut returns
		noted  error  // what OnBreak hears
		first  string // what the first Read returns
	}{
		{"abort", Abort, false, io.ErrUnexpectedEOF, io.ErrUnexpectedEOF, "0123"},
		{"reset joined", ResetBody, true, syscall.ECONNRESET, syscall.ECONNRESET, "0123"},
		{"early EOF", EarlyEOF, false, io.EOF, io.ErrUnexpectedEOF, "0123"},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := NewBody(context.Background(), data)
			b.Cut, b.Break, b.Joined = 4, c.brk, c.joined
			var noted []error
			b.OnBreak = func(err error) { noted = append(noted, err) }
			p := make([]byte, 100)
			n, err := b.Read(p)
			assert.Equal(t, c.first, string(p[:n]))
			if !c.joined {
				require.NoError(t, err)
				n, err = b.Read(p)
				assert.Zero(t, n)
			}
			assert.ErrorIs(t, err, c.want)
			require.Len(t, noted, 1)
			assert.ErrorIs(t, noted[0], c.noted)
			assert.False(t, b.Whole())
			require.NoError(t, b.Close())
			_, err = b.Read(p)
			assert.ErrorIs(t, err, errClosed)
		})
	}
	b := NewBody(context.Background(), data)
	b.Cut, b.Break = len(data), EarlyEOF
	assert.True(t, b.Whole(), "an early EOF at the very end is the end")
	got, err := io.ReadAll(b)
	require.NoError(t, err)
	assert.Equal(t, data, got)
}

func TestStalledBodyEndsWhenClosed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := NewBody(context.Background(), []byte("abc"))
		b.Cut, b.Break = 1, Stall
		var noted error
		b.OnBreak = func(err error) { noted = err }
		p := make([]byte, 10)
		n, err := b.Read(p)
		require.NoError(t, err)
		require.Equal(t, 1, n)
		done := make(chan error)
		go func() {
			_, err := b.Read(p)
			done <- err
		}()
		synctest.Wait()
		assert.ErrorIs(t, noted, ErrStalled)
		b.Close()
		assert.ErrorIs(t, <-done, errClosed)
	})
}

func TestResetBodyOverLoopback(t *testing.T) {
	data := []byte(strings.Repeat("z", 100_000))
	o := New(Always(Answer{Body: data, Break: ResetBody, Cut: 70_000}))
	srv := Serve(t, o)
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	resp, err := tr.RoundTrip(must(http.NewRequest(http.MethodGet, srv.URL, nil)))
	require.NoError(t, err)
	got, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Error(t, err)
	assert.LessOrEqual(t, len(got), 70_000)
	assert.Equal(t, int64(70_000), o.Served())
}

package chaos

import (
	"crypto/sha256"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/httpretry/httpretry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestResumeThroughNetworkFaults downloads a file from a real
// http.FileServer through toxiproxy while the proxy cuts the body
// (limit_data), or, once 256 KiB have been read, resets the connection
// (reset_peer, which drops what it holds) or stalls it (timeout, with
// Resume.Idle); a bandwidth limit keeps the rest of the body on the wire
// when they come. The faults are taken away when httpretry announces its
// resume, so that the resume request meets a healthy path: each case is
// one break and one resume, and the body read must hash as the file does.
func TestResumeThroughNetworkFaults(t *testing.T) {
	const size = 4 << 20
	dir := t.TempDir()
	data := make([]byte, size)
	r := rand.New(rand.NewPCG(4, 20))
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	path := filepath.Join(dir, "blob.bin")
	require.NoError(t, os.WriteFile(path, data, 0o600))
	// A file modified in the last minute has no strong validator: the
	// FileServer sends Last-Modified only.
	old := time.Now().Add(-time.Hour)
	require.NoError(t, os.Chtimes(path, old, old))
	want := sha256.Sum256(data)
	srv := httptest.NewServer(http.FileServer(http.Dir(dir)))
	t.Cleanup(srv.Close)

	for _, tt := range []struct {
		name   string
		toxics []toxic
		later  bool // add the toxics once 256 KiB of the body have been read
		idle   time.Duration
	}{
		{name: "limit_data", toxics: []toxic{{Type: "limit_data", Attributes: map[string]any{"bytes": 1 << 20}}}},
		{name: "reset_peer mid-body", later: true,
			toxics: []toxic{{Type: "reset_peer", Attributes: map[string]any{"timeout": 0}}}},
		{name: "timeout stalls", later: true, idle: 300 * time.Millisecond,
			toxics: []toxic{{Type: "timeout", Attributes: map[string]any{"timeout": 0}}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			proxy := newFaultProxy(t, srv.Listener.Addr().String())
			if tt.later {
				// KB/s: 4 MiB take about half a second.
				proxy.add(toxic{Type: "bandwidth", Attributes: map[string]any{"rate": 8 << 10}})
			} else {
				for _, tx := range tt.toxics {
					proxy.add(tx)
				}
			}
			var (
				mu     sync.Mutex
				events []httpretry.Event
			)
			observe := func(e httpretry.Event) {
				mu.Lock()
				defer mu.Unlock()
				events = append(events, e)
				if e.Kind == httpretry.EventResume && len(events) == 1 {
					proxy.reset() // the resume request meets a healthy path
				}
			}
			p := httpretry.DefaultPolicy()
			p.Resume.Idle = tt.idle
			p.Backoff = httpretry.NoBackoff()
			base := newBase()
			rt := newRetrying(t, base, p, httpretry.WithObserver(observe))
			req, err := http.NewRequest(http.MethodGet, proxy.URL()+"/blob.bin", nil)
			require.NoError(t, err)
			resp, err := rt.RoundTrip(req)
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, resp.StatusCode)
			h := sha256.New()
			if tt.later {
				_, err := io.CopyN(h, resp.Body, 256<<10)
				require.NoError(t, err)
				for _, tx := range tt.toxics {
					proxy.add(tx)
				}
			}
			n, err := io.Copy(h, resp.Body)
			resp.Body.Close()
			require.NoError(t, err)
			if tt.later {
				n += 256 << 10
			}
			assert.Equal(t, int64(size), n)
			assert.Equal(t, want, [32]byte(h.Sum(nil)), "the file, byte for byte")
			mu.Lock()
			defer mu.Unlock()
			require.Len(t, events, 1, "one break, one resume")
			e := events[0]
			assert.Equal(t, httpretry.EventResume, e.Kind)
			assert.Greater(t, e.Offset, int64(0))
			assert.Less(t, e.Offset, int64(size))
			assert.Equal(t, int64(2), base.calls.Load(), "the request and one resume")
			t.Logf("%s: broke after %d bytes (%v), resumed", tt.name, e.Offset, e.Err)
		})
	}
}

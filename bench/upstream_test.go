package bench

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestStartLoopbackListensOnLoopbackOnly(t *testing.T) {
	srv, err := NewOKServer()
	require.NoError(t, err)
	defer srv.Close()
	assert.True(t, strings.HasPrefix(srv.URL, "http://127.0.0.1:"), srv.URL)
}

func TestUpstreamCountsExactly(t *testing.T) {
	const ids, each = 20, 3
	up, err := NewUpstream(ids, -1)
	require.NoError(t, err)
	defer up.Close()
	base := NewLoopbackBase()
	defer base.CloseIdleConnections()
	client := &http.Client{Transport: base}

	var wg sync.WaitGroup
	for id := range ids {
		wg.Go(func() {
			for range each {
				ok, err := getOnce(context.Background(), client, up.URL, id)
				assert.NoError(t, err)
				assert.False(t, ok, "the upstream is down for ever")
			}
		})
	}
	wg.Wait()
	// One request without an id, and one out of range: counted in total
	// only.
	_, err = getOnce(context.Background(), client, up.URL, -1)
	require.NoError(t, err)
	_, err = getOnce(context.Background(), client, up.URL, ids)
	require.NoError(t, err)

	assert.Equal(t, int64(ids*each+2), up.Requests())
	for id := range ids {
		assert.Equal(t, each, up.RequestsFor(id), "id %d", id)
	}
	assert.Zero(t, up.RequestsFor(ids))

	// Without keep-alives every request opens a connection of its own, so
	// the connection count must grow by exactly the number of requests.
	before := up.Connections()
	oneShot := &http.Transport{DisableKeepAlives: true}
	defer oneShot.CloseIdleConnections()
	for range 5 {
		_, err := getOnce(context.Background(), &http.Client{Transport: oneShot}, up.URL, 0)
		require.NoError(t, err)
	}
	assert.Equal(t, before+5, up.Connections())
}

func TestUpstreamRecovers(t *testing.T) {
	up, err := NewUpstream(1, 50*time.Millisecond)
	require.NoError(t, err)
	defer up.Close()
	base := NewLoopbackBase()
	defer base.CloseIdleConnections()
	client := &http.Client{Transport: base}

	ok, err := getOnce(context.Background(), client, up.URL, 0)
	require.NoError(t, err)
	assert.False(t, ok, "down before Begin")
	start := time.Now()
	up.Begin(start)
	ok, err = getOnce(context.Background(), client, up.URL, 0)
	require.NoError(t, err)
	if time.Since(start) < 50*time.Millisecond {
		assert.False(t, ok, "down during the outage")
	}
	time.Sleep(time.Until(start.Add(60 * time.Millisecond)))
	ok, err = getOnce(context.Background(), client, up.URL, 0)
	require.NoError(t, err)
	assert.True(t, ok, "up after the outage")
}

package bench

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every first response cut: a plain client gets no body whole, the
// download again from 0 and httpretry get each one, httpretry with no byte
// served twice.
func TestRunResumeCutsEveryFirstResponse(t *testing.T) {
	cfg := ResumeConfig{Size: 256 << 10, GETs: 10, Cut: 1, Seed: 1}
	clients := ResumeClients(0)
	want := map[string]int{"plain": 0, "restart from 0 (3 times)": 10, "httpretry, Budget.Percent 100": 10, NameRetryableHTTP: 0}
	for _, c := range clients {
		intact, ok := want[c.Name]
		if !ok {
			continue
		}
		r, err := RunResume(cfg, c)
		require.NoError(t, err)
		assert.Equal(t, intact, r.Intact, c.Name)
		switch c.Name {
		case "httpretry, Budget.Percent 100":
			assert.Equal(t, int64(20), r.Requests)
			assert.Equal(t, int64(10*cfg.Size), r.Served, "no byte twice")
			assert.Equal(t, r.Served, r.Delivered)
		case "plain":
			assert.Equal(t, int64(10), r.Requests)
		}
	}
}

// A stalled first response costs Idle, not the stall, with Resume.Idle.
func TestRunResumeStallWithIdle(t *testing.T) {
	cfg := ResumeConfig{Size: 256 << 10, GETs: 4, StallShare: 1, Stall: time.Minute, Seed: 1}
	r, err := RunResume(cfg, ResumeClients(100 * time.Millisecond)[3])
	require.NoError(t, err)
	assert.Equal(t, 4, r.Intact)
	assert.Equal(t, int64(8), r.Requests)
	assert.Less(t, r.TimePerGET(), 30*time.Second, "far less than the stall")
}

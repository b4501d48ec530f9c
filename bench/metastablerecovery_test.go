package bench

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// syntheticTimeline judges a run of 2 s of warm-up and 10 s of horizon,
// 5 s sustain, with a request every 10 ms answered in 5 ms, but those
// sent within a bad interval: they fail, their attempt done after 300 ms.
func syntheticTimeline(bad ...[2]time.Duration) metastableTimeline {
	cfg := MetastableConfig{Capacity: 200, Cut: 200 * time.Millisecond, Load: 0.5, WarmUp: 2 * time.Second,
		Trigger: time.Second, TriggerShare: 0.2, Horizon: 10 * time.Second, Sustain: 5 * time.Second}
	var reqs []metastableRequest
	var att []metastableAttempt
	for at := time.Duration(0); at < cfg.length(); at += 10 * time.Millisecond {
		sojourn, ok := 5*time.Millisecond, true
		for _, b := range bad {
			if at >= b[0] && at < b[1] {
				sojourn, ok = 300*time.Millisecond, false
			}
		}
		reqs = append(reqs, metastableRequest{sent: at, ok: ok})
		att = append(att, metastableAttempt{at: at, done: at + sojourn})
	}
	return newMetastableTimeline(cfg, reqs, att)
}

func TestMetastableRecovery(t *testing.T) {
	s := time.Second
	tests := []struct {
		name      string
		bad       [][2]time.Duration
		upBefore  bool
		recovered bool
		recovery  time.Duration
	}{
		{"no trouble", nil, true, true, 0},
		// The window from 4.4 s holds the last 10 bad attempts of its 100:
		// 90 % in time, 90 % goodput. From 4.39 s, 11 of them.
		{"down for 2.5 s", [][2]time.Duration{{2 * s, 4500 * time.Millisecond}}, true, true, 2400 * time.Millisecond},
		{"never back", [][2]time.Duration{{2 * s, 12 * s}}, true, false, 0},
		{"back for a while, then down for good", [][2]time.Duration{{2 * s, 3 * s}, {10 * s, 12 * s}}, true, false, 0},
		{"a second blip, then back", [][2]time.Duration{{2 * s, 3 * s}, {5 * s, 6 * s}}, true, true, 3900 * time.Millisecond},
		{"down in the warm-up", [][2]time.Duration{{500 * time.Millisecond, 700 * time.Millisecond}}, false, true, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tl := syntheticTimeline(tt.bad...)
			assert.Equal(t, tt.upBefore, tl.upBefore())
			d, ok := tl.recovery()
			assert.Equal(t, tt.recovered, ok)
			assert.Equal(t, tt.recovery, d)
		})
	}
}

func TestMetastableRecoveryCountsGoodput(t *testing.T) {
	// Attempts all in time, but no request succeeds after 4 s: a client
	// that stopped sending, or gave everything up, has not recovered.
	tl := syntheticTimeline()
	cfg := tl.cfg
	var reqs []metastableRequest
	var att []metastableAttempt
	for at := time.Duration(0); at < cfg.length(); at += 10 * time.Millisecond {
		reqs = append(reqs, metastableRequest{sent: at, ok: at < 4*time.Second})
		att = append(att, metastableAttempt{at: at, done: at + 5*time.Millisecond})
	}
	tl = newMetastableTimeline(cfg, reqs, att)
	_, ok := tl.recovery()
	assert.False(t, ok)
	assert.True(t, tl.upBefore())
}

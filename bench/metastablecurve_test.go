package bench

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// runs returns one run per figure: recovered in that many seconds, or
// not at all for a negative one.
func runs(secs ...float64) []MetastableRun {
	out := make([]MetastableRun, len(secs))
	for i, s := range secs {
		if s >= 0 {
			out[i] = MetastableRun{Recovered: true, Recovery: time.Duration(s * float64(time.Second)), Attempts: 3, Requests: 2}
		}
	}
	return out
}

func TestMetastableLoadMedian(t *testing.T) {
	tests := []struct {
		name string
		runs []MetastableRun
		want time.Duration
		ok   bool
	}{
		{"none", nil, 0, false},
		{"all recovered", runs(3, 1, 2), 2 * time.Second, true},
		{"a minority down", runs(3, -1, 1), 3 * time.Second, true},
		{"a majority down", runs(-1, 1, -1), 0, false},
		{"even: the later middle", runs(1, 2, 3, 4), 3 * time.Second, true},
		{"even: half down", runs(1, -1, 2, -1), 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := MetastableLoad{Runs: tt.runs}
			d, ok := l.Median()
			assert.Equal(t, tt.ok, ok)
			if ok {
				assert.Equal(t, tt.want, d)
			}
		})
	}
	l := MetastableLoad{Runs: runs(3, -1, 1)}
	assert.Equal(t, 2, l.Recovered())
	assert.InDelta(t, 1.5, l.Amplification(), 1e-9)
}

func TestMetastableEdge(t *testing.T) {
	up, down := runs(1), runs(-1)
	curve := func(rs ...[]MetastableRun) []MetastableLoad {
		out := make([]MetastableLoad, len(rs))
		for i, r := range rs {
			out[i] = MetastableLoad{Load: 0.25 + 0.05*float64(i), Runs: r}
		}
		return out
	}
	edge, ok := MetastableEdge(curve(up, up, up, down, down))
	assert.True(t, ok)
	assert.InDelta(t, 0.35, edge, 1e-9)
	edge, ok = MetastableEdge(curve(up, down, up))
	assert.True(t, ok)
	assert.InDelta(t, 0.25, edge, 1e-9, "the first load down ends the edge")
	_, ok = MetastableEdge(curve(down, up))
	assert.False(t, ok)
}

func TestMetastableCurve(t *testing.T) {
	var seen []MetastableConfig
	run := func(c MetastableClient, cfg MetastableConfig) (MetastableRun, error) {
		seen = append(seen, cfg)
		return MetastableRun{Client: c.Name, Config: cfg, Arrivals: cfg.Arrivals()}, nil
	}
	cfg := MetastableScenario(0, 0)
	curve, err := MetastableCurve(run, MetastableClient{Name: "x"}, cfg, []float64{0.5, 0.8}, []uint64{1, 2, 3})
	require.NoError(t, err)
	require.Len(t, curve, 2)
	assert.Len(t, seen, 6)
	for i, l := range curve {
		require.Len(t, l.Runs, 3)
		for j, r := range l.Runs {
			assert.Equal(t, l.Load, r.Config.Load)
			assert.Equal(t, uint64(j+1), r.Config.Seed)
			assert.Nil(t, r.Arrivals, "dropped")
			assert.Equal(t, "x", r.Client)
		}
		assert.InDelta(t, []float64{0.5, 0.8}[i], l.Load, 0)
	}

	boom := errors.New("boom")
	_, err = MetastableCurve(func(MetastableClient, MetastableConfig) (MetastableRun, error) { return MetastableRun{}, boom },
		MetastableClient{}, cfg, []float64{0.5}, []uint64{1})
	assert.ErrorIs(t, err, boom)
}

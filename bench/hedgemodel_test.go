package bench

import (
	"context"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Each model's P95 is its distribution's: within 1 % of the 95th
// percentile of 200,000 draws.
func TestHedgeModelsP95(t *testing.T) {
	for _, m := range []HedgeModel{ModelM1(1), ModelM1(4), ModelS(), ModelL()} {
		t.Run(m.Name, func(t *testing.T) {
			ds := make([]time.Duration, 200_000)
			for i := range ds {
				ds[i] = m.Draw(uniforms(7, uint64(i)))
			}
			slices.Sort(ds)
			assert.InEpsilon(t, float64(m.P95), float64(ds[len(ds)*95/100]), 0.01)
		})
	}
}

func TestUniformsArePure(t *testing.T) {
	a1, a2 := uniforms(3, 42)
	b1, b2 := uniforms(3, 42)
	assert.Equal(t, [2]float64{a1, a2}, [2]float64{b1, b2})
	c1, c2 := uniforms(3, 43)
	assert.NotEqual(t, a1, c1)
	// Consecutive attempts share no draw: one's slowness does not decide
	// where the next falls.
	assert.NotEqual(t, a2, c1)
	assert.NotEqual(t, a1, c2)
	for n := range uint64(10_000) {
		u1, u2 := uniforms(1, n)
		require.True(t, u1 >= 0 && u1 < 1 && u2 >= 0 && u2 < 1)
	}
}

// An attempt the model holds for an hour returns its context's error as
// soon as the context ends.
func TestModelBaseHonoursCancellation(t *testing.T) {
	base := &ModelBase{Seed: 1, Scale: 1}
	base.SetModel(HedgeModel{Draw: func(float64, float64) time.Duration { return time.Hour }})
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+hedgeHost+"/", nil)
	require.NoError(t, err)
	go cancel()
	resp, err := base.RoundTrip(req)
	assert.Nil(t, resp)
	assert.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, int64(1), base.Calls())
}

// The harness at a small size and a fiftieth of the models' time: every
// request of every phase ends with a 2xx, unhedged rows make exactly one
// call per request, hedged rows at most two. Timings are not asserted.
func TestRunHedgeCounts(t *testing.T) {
	cfg := HedgeConfig{Requests: 100, Clients: 20, Scale: 0.02, Seed: 1}
	if !testing.Short() {
		cfg.Requests = 1000
	}
	for _, c := range HedgeContenders() {
		for _, sc := range HedgeScenarios() {
			t.Run(c.Name+"/"+sc.Name, func(t *testing.T) {
				phases := RunHedge(cfg, sc, c)
				require.Len(t, phases, len(sc.Phases))
				for i, ph := range phases {
					assert.Equal(t, sc.Phases[i].Name, ph.Model.Name)
					assert.Zero(t, ph.Errors)
					assert.Len(t, ph.Latencies, cfg.Requests)
					if c.Name == "no hedging" {
						assert.Equal(t, int64(cfg.Requests), ph.Calls)
						assert.Zero(t, ph.Converged)
					} else {
						assert.GreaterOrEqual(t, ph.Calls, int64(cfg.Requests))
						assert.LessOrEqual(t, ph.Calls, int64(2*cfg.Requests))
					}
				}
			})
		}
	}
}

package bench

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRunHerd(t *testing.T) {
	const clients = 20
	t.Run("bare never resends", func(t *testing.T) {
		r, err := RunHerd(lib(t, NameBare), clients)
		require.NoError(t, err)
		assert.Equal(t, clients, r.Clients)
		assert.Zero(t, r.Resent)
		assert.Zero(t, r.Share)
	})
	t.Run("jitter alone resends all", func(t *testing.T) {
		r, err := RunHerd(lib(t, NameHTTPRetryNoBudget), clients)
		require.NoError(t, err)
		assert.Equal(t, clients, r.Resent)
		assert.Greater(t, r.Share, 0.0)
		assert.LessOrEqual(t, r.Share, 1.0)
		assert.LessOrEqual(t, r.P50, r.P99)
		// Full jitter over [0, 100 ms], plus scheduling on a busy machine.
		assert.Less(t, r.P99, time.Second)
	})
	t.Run("the budget resends a part", func(t *testing.T) {
		// The window alone (Hold -1, as before point 22).
		r, err := RunHerd(lib(t, NameHTTPRetryNoHold), clients)
		require.NoError(t, err)
		// A window grants at most max(share, MinRetries): 20 requests
		// have a share of 4, and a fresh floor credit pays up to 10.
		assert.Greater(t, r.Resent, 0)
		assert.LessOrEqual(t, r.Resent, 10)
	})
}

func TestRunHerdRejectsNoClients(t *testing.T) {
	_, err := RunHerd(lib(t, NameBare), 0)
	assert.Error(t, err)
}

func TestRunHerdRetryAfterSeparateClients(t *testing.T) {
	const clients = 10
	for _, name := range []string{NameHTTPRetry, NameFailsafe} {
		t.Run(name, func(t *testing.T) {
			r, err := RunHerdWith(lib(t, name), HerdConfig{Clients: clients, RetryAfter: "1", Separate: true})
			require.NoError(t, err)
			// Each client has a budget of its own, whose floor grants its
			// one resend; none comes back before the second it was asked
			// to wait.
			assert.Equal(t, clients, r.Resent)
			assert.GreaterOrEqual(t, r.Min, time.Second)
			assert.LessOrEqual(t, r.Min, r.P50)
			assert.Less(t, r.P99, 3*time.Second)
		})
	}
}

package httpretry

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Point 20's rules: features compose. Each test here failed on 224d90d.

// A Go literal means what its JSON means, field by field: every field but
// MaxRetries left zero resolves as a key left out of JSON does.
func TestLiteralMeansItsJSON(t *testing.T) {
	for _, tc := range []struct {
		name string
		lit  Policy
		json string
	}{
		{"maxRetries alone", Policy{MaxRetries: 2}, `{"maxRetries": 2}`},
		{"demotion off", Policy{MaxRetries: 2, Demote: Demote{After: -1}}, `{"maxRetries": 2, "demote": {"after": -1}}`},
		{"demote after 0", Policy{MaxRetries: 1, Demote: Demote{For: 3e9}}, `{"maxRetries": 1, "demote": {"after": 0, "for": "3s"}}`},
		{"strict budget", Policy{MaxRetries: 3, Budget: BudgetConfig{MinRetries: -1}}, `{"budget": {"minRetries": -1}}`},
		{"never record", Policy{MaxRetries: 3, MaxReplayBytes: -1}, `{"maxReplayBytes": -1}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.NoError(t, tc.lit.Validate())
			var p Policy
			require.NoError(t, json.Unmarshal([]byte(tc.json), &p))
			require.NoError(t, p.Validate())
			assert.Equal(t, resolvePolicy(p), resolvePolicy(tc.lit))
		})
	}
	// And DefaultPolicy is the zero policy with MaxRetries 3.
	assert.Equal(t, resolvePolicy(DefaultPolicy()), resolvePolicy(Policy{MaxRetries: 3}))
}

package main

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseRequiredRoot(t *testing.T) {
	const head = "module github.com/httpretry/httpretry/otelretry\n\ngo 1.25.0\n\nreplace github.com/httpretry/httpretry => ../\n\n"
	tests := []struct {
		name    string
		require string
		want    string
		wantErr string
	}{
		{"release", "require github.com/httpretry/httpretry v0.2.0\n", "v0.2.0", ""},
		{"prerelease", "require github.com/httpretry/httpretry v0.3.0-rc.1\n", "v0.3.0-rc.1", ""},
		{"among others", "require (\n\tgithub.com/stretchr/testify v1.12.1\n\tgithub.com/httpretry/httpretry v1.4.2\n)\n", "v1.4.2", ""},
		{"pseudo-version of a commit", "require github.com/httpretry/httpretry v0.0.0-20261201065307-224d90d68209\n", "v0.0.0-20261201065307-224d90d68209", ""},
		{"pseudo-version after a tag", "require github.com/httpretry/httpretry v0.2.1-0.20261201093000-0123456789ab\n", "v0.2.1-0.20261201093000-0123456789ab", ""},
		{"zero pseudo-version", "require github.com/httpretry/httpretry v0.0.0-00010101000000-000000000000\n", "", "the zero pseudo-version, which names no commit"},
		{"build metadata", "require github.com/httpretry/httpretry v0.2.0+incompatible\n", "", "not a version the go command gives a commit"},
		{"no require", "require github.com/stretchr/testify v1.12.1\n", "", "does not require github.com/httpretry/httpretry"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseRequiredRoot("otelretry/go.mod", []byte(head+tt.require))
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

// TestOtelretryRequiresAFetchableVersion reads this repository's
// otelretry/go.mod: users get the httpretry it requires, never the tree its
// replace names.
func TestOtelretryRequiresAFetchableVersion(t *testing.T) {
	_, err := requiredRoot(filepath.Join("..", "..", "otelretry", "go.mod"))
	require.NoError(t, err)
}

func TestPseudoVersion(t *testing.T) {
	// 224d90d, as the go command named it when it fetched that commit.
	c := commit{
		hash: "224d90d682098a7ae7d55f4b62ae4dd8f2c616b9",
		time: time.Date(2026, 12, 1, 7, 53, 7, 0, time.FixedZone("CET", 3600)),
	}
	assert.Equal(t, "v0.0.0-20261201065307-224d90d68209", c.pseudoVersion(), "the committer time in UTC")
}

package main

import (
	"path/filepath"
	"testing"

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
		{"zero pseudo-version", "require github.com/httpretry/httpretry v0.0.0-00010101000000-000000000000\n", "", "a pseudo-version: users who go get otelretry cannot fetch it"},
		{"pseudo-version of a commit", "require github.com/httpretry/httpretry v0.2.1-0.20261201093000-0123456789ab\n", "", "a pseudo-version"},
		{"build metadata", "require github.com/httpretry/httpretry v0.2.0+incompatible\n", "", "not a release version"},
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

// TestOtelretryRequiresARelease reads this repository's otelretry/go.mod:
// users get the httpretry it requires, never the tree its replace names.
func TestOtelretryRequiresARelease(t *testing.T) {
	_, err := requiredRoot(filepath.Join("..", "..", "otelretry", "go.mod"))
	require.NoError(t, err)
}

package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestInstallLines(t *testing.T) {
	const readme = "# httpretry\n\n" +
		"```sh\ngo get github.com/httpretry/httpretry@v9.9.9   # not the install section\n```\n\n" +
		"## Install\n\n" +
		"```sh\n" +
		"go get github.com/httpretry/httpretry@latest\n" +
		"go get github.com/httpretry/httpretry/otelretry@latest   # OpenTelemetry metrics\n" +
		"go get go.opentelemetry.io/otel@v1.46.0\n" +
		"```\n\n" +
		"`go get github.com/httpretry/httpretry@v0.0.1` in prose is not a command.\n\n" +
		"```go\n## Install\n```\n\n" +
		"## Try it\n\n```sh\ngo get github.com/httpretry/httpretry@v8.8.8\n```\n"
	lines, err := installLines(readme)
	require.NoError(t, err)
	assert.Equal(t, [][]string{
		{"github.com/httpretry/httpretry@latest"},
		{"github.com/httpretry/httpretry/otelretry@latest"},
	}, lines, "the install section's go get lines of this repository's modules, comments dropped")
	assert.Equal(t, 1, otelLine(lines))
}

func TestInstallLinesMissing(t *testing.T) {
	tests := []struct {
		name, readme, wantErr string
	}{
		{"no section", "# httpretry\n\n```sh\ngo get github.com/httpretry/httpretry@latest\n```\n", `no "## Install" section`},
		{"no line", "## Install\n\nRun go get.\n\n```sh\ngo get example.com/other@latest\n```\n", "has no `go get github.com/httpretry/httpretry...` line"},
		{"no otelretry", "## Install\n\n```sh\ngo get github.com/httpretry/httpretry@latest\n```\n", "no `go get github.com/httpretry/httpretry/otelretry@...` line"},
		{"a line outside a code block", "## Install\n\ngo get github.com/httpretry/httpretry/otelretry@latest\n", "has no `go get"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := installLines(tt.readme)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.wantErr)
		})
	}
}

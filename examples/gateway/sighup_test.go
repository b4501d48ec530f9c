//go:build unix

package main

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRunReloadsOnSIGHUP: with polling off, kill -HUP reloads the file.
func TestRunReloadsOnSIGHUP(t *testing.T) {
	one := newUpstream(t, "one", 200)
	two := newUpstream(t, "two", 200)
	const config = `{"routes": [{"prefix": "/", "upstream": %q}]}`
	path := filepath.Join(t.TempDir(), "gateway.json")
	writeConfig(t, path, config, one.URL)
	rg := startRun(t, path, "-poll", "0")

	_, body := rg.get(t, "/")
	assert.Equal(t, "one", body)
	writeConfig(t, path, config, two.URL)
	require.NoError(t, syscall.Kill(os.Getpid(), syscall.SIGHUP))
	rg.logs.wait(t, "config loaded", 2)
	_, body = rg.get(t, "/")
	assert.Equal(t, "two", body)
	assert.NoError(t, rg.stop(t))
}

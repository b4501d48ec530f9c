package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/mod/module"
	"golang.org/x/mod/zip"
)

func TestPublishWritesAFileProxy(t *testing.T) {
	const goMod = "module example.com/Upper\n\ngo 1.25\n"
	repo := gitRepo(t, map[string]string{
		"go.mod":     goMod,
		"u.go":       "package upper\n",
		"sub/go.mod": "module example.com/Upper/sub\n",
		"sub/s.go":   "package sub\n",
	}, "go.mod", "u.go", "sub/go.mod", "sub/s.go")
	proxy := t.TempDir()
	now := time.Date(2026, 12, 1, 9, 30, 15, 500, time.FixedZone("CET", 3600))

	n, err := publish(proxy, repo, "", "example.com/Upper", "v1.2.3", now)
	require.NoError(t, err)
	assert.Equal(t, 2, n)

	dir := filepath.Join(proxy, "example.com", "!upper", "@v") // the escaped path
	read := func(name string) string {
		t.Helper()
		data, err := os.ReadFile(filepath.Join(dir, name))
		require.NoError(t, err)
		return string(data)
	}
	assert.Equal(t, "v1.2.3\n", read("list"))
	assert.JSONEq(t, `{"Version": "v1.2.3", "Time": "2026-12-01T08:30:15Z"}`, read("v1.2.3.info"))
	assert.Equal(t, goMod, read("v1.2.3.mod"))

	checked, err := zip.CheckZip(module.Version{Path: "example.com/Upper", Version: "v1.2.3"}, filepath.Join(dir, "v1.2.3.zip"))
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"example.com/Upper@v1.2.3/go.mod", "example.com/Upper@v1.2.3/u.go"}, checked.Valid,
		"the nested module is left out")
}

func TestPublishRefusesAnotherModulePath(t *testing.T) {
	repo := gitRepo(t, map[string]string{"go.mod": "module example.com/other\n"}, "go.mod")
	_, err := publish(t.TempDir(), repo, "", "example.com/m", "v1.0.0", time.Now())
	require.Error(t, err)
	assert.Contains(t, err.Error(), `declares module "example.com/other", not "example.com/m"`)
}

func TestFileURL(t *testing.T) {
	assert.Equal(t, "file:///tmp/proxy", fileURL("/tmp/proxy"))
}

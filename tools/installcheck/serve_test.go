package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// gitRepo makes a git repository in a temporary directory whose history
// is one commit per entry of commits (path to contents), and returns it
// with the commits' hashes.
func gitRepo(t *testing.T, commits ...map[string]string) (string, []string) {
	t.Helper()
	dir := t.TempDir()
	sh(t, dir, "git", "init", "-q", "--initial-branch=work")
	var hashes []string
	for i, files := range commits {
		writeFiles(t, dir, files)
		sh(t, dir, "git", "add", "-A")
		sh(t, dir, "git", "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "commit "+string(rune('a'+i)))
		hashes = append(hashes, sh(t, dir, "git", "rev-parse", "HEAD"))
	}
	return dir, hashes
}

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for p, data := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
		require.NoError(t, os.WriteFile(full, []byte(data), 0o644))
	}
}

func sh(t *testing.T, dir string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s %v: %s", name, args, out)
	return strings.TrimSpace(string(out))
}

func TestServeRepoHoldsHEADOnMainAndNoTag(t *testing.T) {
	repo, hashes := gitRepo(t,
		map[string]string{"go.mod": "module example.com/m\n"},
		map[string]string{"m.go": "package m\n"})
	sh(t, repo, "git", "tag", "v0.2.0", hashes[0])
	sh(t, repo, "git", "branch", "other", hashes[0])
	writeFiles(t, repo, map[string]string{"m.go": "package m // changed, not committed\n", "new.go": "package m\n"})

	bare := filepath.Join(t.TempDir(), "repo.git")
	require.NoError(t, serveRepo(bare, repo))
	assert.Equal(t, "refs/heads/main", sh(t, bare, "git", "for-each-ref", "--format=%(refname)"),
		"main only: no tag, not the other branch")
	assert.Equal(t, "refs/heads/main", sh(t, bare, "git", "symbolic-ref", "HEAD"), "main is the default branch")
	assert.Equal(t, hashes[1], sh(t, bare, "git", "rev-parse", "main"))
	assert.Equal(t, "package m", sh(t, bare, "git", "show", "main:m.go"), "committed content, not the working tree")
	assert.Equal(t, hashes[0], sh(t, bare, "git", "rev-parse", "main~1"), "HEAD's history, where a pseudo-version may point")

	require.NoError(t, tagRepo(bare, map[string]string{"v0.3.0": hashes[1], "otelretry/v0.3.0": hashes[1]}))
	assert.Equal(t, "otelretry/v0.3.0\nv0.3.0", sh(t, bare, "git", "tag", "--list"))
}

func TestHeadCommit(t *testing.T) {
	repo, _ := gitRepo(t, map[string]string{"go.mod": "module example.com/m\n"})
	cmd := exec.Command("git", "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "--amend", "--no-edit")
	cmd.Dir = repo
	cmd.Env = append(os.Environ(), "GIT_COMMITTER_DATE=2026-12-01T07:53:07+01:00", "GIT_AUTHOR_DATE=2020-01-01T00:00:00Z")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)

	c, err := headCommit(repo)
	require.NoError(t, err)
	assert.Equal(t, sh(t, repo, "git", "rev-parse", "HEAD"), c.hash)
	assert.Equal(t, "v0.0.0-20261201065307-"+c.hash[:12], c.pseudoVersion(), "the committer's time, not the author's, in UTC")
}

func TestRequiredTag(t *testing.T) {
	repo, hashes := gitRepo(t,
		map[string]string{"go.mod": "module example.com/m\n"},
		map[string]string{"m.go": "package m\n"})
	_, err := requiredTag(repo, "v0.2.0", "v0.2.0")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no tag v0.2.0 marks a commit: users cannot fetch it")

	sh(t, repo, "git", "-c", "user.name=t", "-c", "user.email=t@example.com", "tag", "-a", "-m", "httpretry v0.2.0", "v0.2.0", hashes[0])
	rev, err := requiredTag(repo, "v0.2.0", "v0.2.0")
	require.NoError(t, err)
	assert.Equal(t, hashes[0], rev, "the commit an annotated tag marks")

	sh(t, repo, "git", "checkout", "-q", "--orphan", "elsewhere")
	sh(t, repo, "git", "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "unrelated")
	_, err = requiredTag(repo, "v0.2.0", "v0.2.0")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "not in HEAD's history")
}

func TestBaseTag(t *testing.T) {
	assert.Equal(t, "v0.2.0", baseTag("v0.2.0"))
	assert.Equal(t, "v0.3.0", baseTag("v0.3.1-0.20261201202717-df43c6996f55"), "after the v0.3.0 release")
	assert.Equal(t, "v0.4.0-rc.1", baseTag("v0.4.0-rc.1.0.20261201202717-df43c6996f55"), "after a pre-release")
	assert.Equal(t, "", baseTag("v0.0.0-20261201065307-224d90d68209"), "no tag before it")
}

func TestReleaseTags(t *testing.T) {
	tags, err := releaseTags("v0.3.0", "abc")
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"v0.3.0": "abc", "otelretry/v0.3.0": "abc"}, tags)
	for _, v := range []string{"0.3.0", "v0.3", "v0.3.0-rc.1", ""} {
		_, err := releaseTags(v, "abc")
		assert.Error(t, err, v)
	}
}

func TestIsShallow(t *testing.T) {
	repo, _ := gitRepo(t,
		map[string]string{"go.mod": "module example.com/m\n"},
		map[string]string{"m.go": "package m\n"})
	shallow, err := isShallow(repo)
	require.NoError(t, err)
	assert.False(t, shallow)

	clone := filepath.Join(t.TempDir(), "clone")
	sh(t, repo, "git", "clone", "-q", "--depth=1", fileURL(repo), clone)
	shallow, err = isShallow(clone)
	require.NoError(t, err)
	assert.True(t, shallow)
}

func TestUserEnv(t *testing.T) {
	env := userEnv("/tmp/ic/gopath", "/tmp/ic/gitconfig", "/home/dev/go/pkg/mod/cache/download")
	got := make(map[string]string)
	for _, kv := range env {
		k, v, ok := strings.Cut(kv, "=")
		require.True(t, ok, kv)
		_, dup := got[k]
		require.False(t, dup, "%s set twice", k)
		got[k] = v
	}
	for k, v := range map[string]string{
		"GOPATH":              "/tmp/ic/gopath",
		"GOMODCACHE":          "/tmp/ic/gopath/pkg/mod",
		"GOFLAGS":             "-modcacherw",
		"GOPROXY":             "file:///home/dev/go/pkg/mod/cache/download",
		"GOPRIVATE":           "github.com/httpretry",
		"GONOPROXY":           "github.com/httpretry",
		"GONOSUMDB":           "github.com/httpretry",
		"GOSUMDB":             "off",
		"GOVCS":               "github.com/httpretry:git,*:off",
		"GOWORK":              "off",
		"GOENV":               "off",
		"GIT_CONFIG_GLOBAL":   "/tmp/ic/gitconfig",
		"GIT_CONFIG_NOSYSTEM": "1",
		"GIT_ALLOW_PROTOCOL":  "https:file",
	} {
		assert.Equal(t, v, got[k], k)
	}
	assert.NotContains(t, got["GOPROXY"], "direct", "no module but this repository's may come from the network")
}

func TestWriteGitConfig(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gitconfig")
	require.NoError(t, writeGitConfig(path, "/tmp/ic/repo.git"))
	cmd := exec.Command("git", "config", "--file", path, "--get-regexp", `^url\.`)
	out, err := cmd.Output()
	require.NoError(t, err)
	assert.Equal(t, "url.file:///tmp/ic/repo.git.insteadof https://github.com/httpretry/httpretry\n", string(out))
}

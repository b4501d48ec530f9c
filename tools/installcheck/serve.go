package main

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"
)

// commit is the commit that the served repository's main points at.
type commit struct {
	hash string
	time time.Time // the committer's, which a pseudo-version names
}

// pseudoVersion is the version that the go command gives c when no tag
// marks it or any commit before it: v0.0.0-yyyymmddhhmmss-abcdefabcdef,
// the committer time in UTC and the hash's first 12 digits.
func (c commit) pseudoVersion() string {
	return module.PseudoVersion("v0", "", c.time, c.hash[:12])
}

// git runs git in dir and returns its standard output, trimmed. Its error
// quotes the command and everything git said.
func git(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("git %s in %s: %v: %s", strings.Join(args, " "), dir, err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(stdout.String()), nil
}

// headCommit returns the commit HEAD of the repository at repo names.
func headCommit(repo string) (commit, error) {
	out, err := git(repo, "show", "-s", "--format=%H %ct", "HEAD")
	if err != nil {
		return commit{}, err
	}
	hash, ct, _ := strings.Cut(out, " ")
	sec, err := strconv.ParseInt(ct, 10, 64)
	if err != nil {
		return commit{}, fmt.Errorf("the commit time of HEAD, %q: %v", ct, err)
	}
	return commit{hash: hash, time: time.Unix(sec, 0).UTC()}, nil
}

// isShallow reports whether the repository at repo is a shallow clone,
// whose history may lack the commit that otelretry's pseudo-version names.
func isShallow(repo string) (bool, error) {
	out, err := git(repo, "rev-parse", "--is-shallow-repository")
	return out == "true", err
}

// serveRepo makes at bare the repository that the go command fetches the
// module path from: HEAD of repo and its history, as branch main and its
// default, and no other branch. It holds commits only, never the working
// tree, and no tag: tagRepo adds the ones a release would push.
func serveRepo(bare, repo string) error {
	if _, err := git(filepath.Dir(bare), "init", "-q", "--bare", "--initial-branch=main", bare); err != nil {
		return err
	}
	_, err := git(bare, "fetch", "-q", "--no-tags", repo, "HEAD:refs/heads/main")
	return err
}

// tagRepo adds tags (name to commit) to the served repository at bare.
func tagRepo(bare string, tags map[string]string) error {
	for name, rev := range tags {
		if _, err := git(bare, "tag", name, rev); err != nil {
			return err
		}
	}
	return nil
}

// tagList names tags for a report, in order, or says there are none.
func tagList(tags map[string]string) string {
	if len(tags) == 0 {
		return "none"
	}
	names := slices.Sorted(maps.Keys(tags))
	return strings.Join(names, ", ")
}

// releaseTags returns the tags that a release of version at HEAD pushes
// (CONTRIBUTING.md): the root's and otelretry's.
func releaseTags(version, head string) (map[string]string, error) {
	if !semver.IsValid(version) || semver.Canonical(version) != version || semver.Prerelease(version) != "" {
		return nil, fmt.Errorf("-release %q: give the version to release, vX.Y.Z", version)
	}
	return map[string]string{version: head, "otelretry/" + version: head}, nil
}

// baseTag returns the tag of this repository that the go command needs to
// resolve version of httpretry: the release itself, or the one that a
// pseudo-version after a release is based on, vX.Y.(Z+1)-0.… on vX.Y.Z;
// none for v0.0.0-…, which names a commit with no tag before it.
func baseTag(version string) string {
	if !module.IsPseudoVersion(version) {
		return version
	}
	base, err := module.PseudoVersionBase(version)
	if err != nil {
		return ""
	}
	return base
}

// requiredTag returns the commit of the local tag that otelretry's require
// of httpretry at version needs, so that the served repository holds it
// as the origin does once a release's tags are pushed. The tag must exist
// and be in HEAD's history.
func requiredTag(repo, version, tag string) (string, error) {
	rev, err := git(repo, "rev-parse", "-q", "--verify", "refs/tags/"+tag+"^{commit}")
	if err != nil {
		return "", fmt.Errorf("otelretry/go.mod requires %s %s, and no tag %s marks a commit: users cannot fetch it; between releases require the pseudo-version of a commit on main (CONTRIBUTING.md)", rootPath, version, tag)
	}
	if _, err := git(repo, "merge-base", "--is-ancestor", rev, "HEAD"); err != nil {
		return "", fmt.Errorf("otelretry/go.mod requires %s %s, and tag %s is not in HEAD's history", rootPath, version, tag)
	}
	return rev, nil
}

// writeGitConfig writes the git configuration that the go command's git
// runs with: it fetches the module path from the served repository at bare
// in place of GitHub (userEnv allows the file protocol this takes).
func writeGitConfig(path, bare string) error {
	conf := fmt.Sprintf("[url %q]\n\tinsteadOf = https://%s\n", fileURL(bare), rootPath)
	return os.WriteFile(path, []byte(conf), 0o644)
}

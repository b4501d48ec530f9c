// Command installcheck proves, offline, that a user can install httpretry
// and otelretry from this repository exactly as it is published: branch
// main and no tag.
//
// It serves HEAD (committed content only, never the working tree) and its
// history as branch main of a scratch git repository with no tags, and
// points the module path at it with a git URL rewrite, so that the go
// command in direct mode fetches it as it would fetch it from GitHub. With
// a fresh GOPATH and module cache and no checksum database for this path,
// in a scratch module with no replace, it runs the go get line of
// otelretry from README.md's install section alone, checks the versions it
// resolved, then builds and runs a program that uses httpretry.New and
// otelretry.Observer; then, in a second scratch module, the README's whole
// install block, and the program again. Every other module (otel and its
// dependencies) comes from a file proxy, the download cache of the local
// module cache, which go mod download in HEAD's otelretry fills (from the
// network only when it lacks something).
//
// Once a release is out, otelretry requires its tag vX.Y.Z, or a
// pseudo-version based on it: the served repository then holds that one
// tag, taken from the local repository. A shallow clone is skipped, with a
// message that says so, as it cannot hold the history a pseudo-version
// names (-shallow fail fails instead).
//
// Run it from the repository's root with make installcheck, or:
//
//	cd tools/installcheck && go run . -repo ../..
//
// With -release vX.Y.Z it also tags HEAD vX.Y.Z and otelretry/vX.Y.Z in the
// served repository, as pushing a release's tags does (make release-check).
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/mod/semver"
)

const rootPath = "github.com/httpretry/httpretry"

func main() {
	repo := flag.String("repo", ".", "the repository's root `dir`")
	keep := flag.Bool("keep", false, "keep the served repository, module cache and scratch modules, to look into a failure")
	release := flag.String("release", "", "also serve the tags of a release of `vX.Y.Z` at HEAD, as pushing them will")
	shallow := flag.String("shallow", "skip", "what to do in a shallow clone, whose history may lack the commit otelretry requires: `skip|fail`")
	flag.Parse()
	if *shallow != "skip" && *shallow != "fail" {
		fmt.Fprintf(os.Stderr, "installcheck: -shallow %q: want skip or fail\n", *shallow)
		os.Exit(2)
	}
	if err := run(*repo, *keep, *release, *shallow == "fail", os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "installcheck: FAIL: %v\n", err)
		os.Exit(1)
	}
}

func run(repo string, keep bool, release string, failShallow bool, out io.Writer) error {
	start := time.Now()
	repo, err := filepath.Abs(repo)
	if err != nil {
		return err
	}
	// A shallow clone (CI's may be one) cannot serve the history that a
	// pseudo-version names, and offline it cannot deepen itself: that is
	// no fault of the code, so the check says loudly that it did not run.
	if shallow, err := isShallow(repo); err != nil {
		return err
	} else if shallow {
		reason := fmt.Sprintf("%s is a shallow clone, whose history may lack the commit that otelretry's require names; run git fetch --unshallow, then make installcheck", repo)
		if failShallow {
			return errors.New(reason)
		}
		fmt.Fprintf(out, "installcheck: SKIPPED, NOTHING CHECKED: %s\n", reason)
		return nil
	}
	head, err := headCommit(repo)
	if err != nil {
		return err
	}

	tmp, err := os.MkdirTemp("", "installcheck-")
	if err != nil {
		return err
	}
	if keep {
		fmt.Fprintf(out, "installcheck: keeping %s\n", tmp)
	} else {
		defer os.RemoveAll(tmp)
	}

	bare := filepath.Join(tmp, "repo.git")
	if err := serveRepo(bare, repo); err != nil {
		return err
	}
	// HEAD as committed: its README's install lines, its otelretry/go.mod.
	checkout := filepath.Join(tmp, "head")
	if _, err := git(tmp, "clone", "-q", "--no-tags", bare, checkout); err != nil {
		return err
	}
	readme, err := os.ReadFile(filepath.Join(checkout, "README.md"))
	if err != nil {
		return err
	}
	lines, err := installLines(string(readme))
	if err != nil {
		return err
	}
	required, err := requiredRoot(filepath.Join(checkout, "otelretry", "go.mod"))
	if err != nil {
		return err
	}

	w := want{otel: head.pseudoVersion(), rootAlone: required}
	rootLatest := head.pseudoVersion()
	var tags map[string]string
	switch {
	case release != "":
		if tags, err = releaseTags(release, head.hash); err != nil {
			return err
		}
		w.otel, rootLatest = release, release
	case baseTag(required) != "":
		// Without its tag, let go get fail as it does for users. With it,
		// httpretry@latest is the tag, and the install block ends at the
		// newer of it and the pseudo-version after it that otelretry may
		// require.
		tag := baseTag(required)
		if rev, err := requiredTag(repo, required, tag); err != nil {
			fmt.Fprintf(out, "installcheck: %v\n", err)
		} else {
			tags = map[string]string{tag: rev}
			rootLatest = tag
		}
	}
	w.rootAll = rootLatest
	if semver.Compare(required, rootLatest) > 0 {
		w.rootAll = required
	}
	if err := tagRepo(bare, tags); err != nil {
		return err
	}
	fmt.Fprintf(out, "installcheck: serving %s (HEAD, committed) as main of %s, tags: %s\n", head.hash[:12], fileURL(bare), tagList(tags))

	proxy, err := downloadCache(filepath.Join(checkout, "otelretry"))
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "installcheck: every other module from %s (%.1fs)\n", fileURL(proxy), time.Since(start).Seconds())
	gopath := filepath.Join(tmp, "gopath")
	gitconfig := filepath.Join(tmp, "gitconfig")
	if err := writeGitConfig(gitconfig, bare); err != nil {
		return err
	}
	env := userEnv(gopath, gitconfig, proxy)
	modcache := filepath.Join(gopath, "pkg", "mod")
	if err := install(filepath.Join(tmp, "scratch"), modcache, env, lines, w, out); err != nil {
		return err
	}
	fmt.Fprintf(out, "installcheck: ok: README.md's install lines, from the repository as committed, with no replace (%.1fs)\n",
		time.Since(start).Seconds())
	return nil
}

// Command installcheck proves, offline, that a user can install httpretry
// and otelretry with go get, as the go command would fetch them.
//
// It zips the root module and otelretry from the working tree at the
// httpretry version that otelretry/go.mod requires (both go out together),
// the way the go command zips a tagged commit: tracked and new files that
// .gitignore lets through, nested modules left out, the repository's
// LICENSE added to otelretry. It serves the zips from a file module proxy,
// falls back to the download cache of the local module cache for every
// other module (otel and its dependencies; go mod download in otelretry
// fills it), and in a scratch module with no replace and a fresh module
// cache runs go get of otelretry alone, then builds and runs a program that
// uses otelretry.Observer with an httpretry transport.
//
// Run it from the repository's root with make installcheck, or:
//
//	cd tools/installcheck && go run . -repo ../..
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

const rootPath = "github.com/httpretry/httpretry"

// published lists the modules users install, by their directory in the
// repository.
var published = []struct{ dir, path string }{
	{"", rootPath},
	{"otelretry", rootPath + "/otelretry"},
}

func main() {
	repo := flag.String("repo", ".", "the repository's root `dir`")
	keep := flag.Bool("keep", false, "keep the temporary proxy, module cache and scratch module, to look into a failure")
	flag.Parse()
	if err := run(*repo, *keep, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "installcheck: FAIL: %v\n", err)
		os.Exit(1)
	}
}

func run(repo string, keep bool, out io.Writer) error {
	start := time.Now()
	repo, err := filepath.Abs(repo)
	if err != nil {
		return err
	}
	version, err := requiredRoot(filepath.Join(repo, "otelretry", "go.mod"))
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

	proxy := filepath.Join(tmp, "proxy")
	for _, m := range published {
		n, err := publish(proxy, repo, m.dir, m.path, version, start)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "installcheck: %s@%s: %d files in the zip\n", m.path, version, n)
	}

	cache, err := downloadCache(filepath.Join(repo, "otelretry"))
	if err != nil {
		return err
	}
	got, err := install(filepath.Join(tmp, "scratch"), filepath.Join(tmp, "modcache"), []string{proxy, cache}, version)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "installcheck: ok: go get %s/otelretry@%s with no replace, offline, then a program using otelretry.Observer: %s (%.1fs)\n",
		rootPath, version, got, time.Since(start).Seconds())
	return nil
}

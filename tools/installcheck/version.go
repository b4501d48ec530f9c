package main

import (
	"fmt"
	"os"
	"strings"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"
)

// requiredRoot returns the httpretry version that the go.mod at path (the
// otelretry module's) requires, which is what a user who installs
// otelretry alone gets.
func requiredRoot(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	return parseRequiredRoot(path, data)
}

// parseRequiredRoot is requiredRoot on the file's contents. A replace is
// ignored in a dependency, so the require must name a version that the
// repository has: a release, or the pseudo-version of a commit. The zero
// pseudo-version, v0.0.0-00010101000000-000000000000, that a replace
// lets go mod tidy write, names no commit at all.
func parseRequiredRoot(path string, data []byte) (string, error) {
	f, err := modfile.Parse(path, data, nil)
	if err != nil {
		return "", err
	}
	for _, r := range f.Require {
		if r.Mod.Path != rootPath {
			continue
		}
		v := r.Mod.Version
		switch {
		case semver.Canonical(v) != v || semver.Build(v) != "":
			return "", fmt.Errorf("%s requires %s %s, not a version the go command gives a commit", path, rootPath, v)
		case module.IsPseudoVersion(v) && strings.HasSuffix(v, "-00010101000000-000000000000"):
			return "", fmt.Errorf("%s requires %s %s, the zero pseudo-version, which names no commit: require the pseudo-version of a commit on main (CONTRIBUTING.md)", path, rootPath, v)
		}
		return v, nil
	}
	return "", fmt.Errorf("%s does not require %s", path, rootPath)
}

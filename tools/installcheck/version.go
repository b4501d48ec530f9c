package main

import (
	"fmt"
	"os"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"
)

// requiredRoot returns the httpretry version that the go.mod at path (the
// otelretry module's) requires: the release otelretry goes out with, and so
// the version at which both modules are zipped.
func requiredRoot(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	return parseRequiredRoot(path, data)
}

// parseRequiredRoot is requiredRoot on the file's contents. A replace is
// ignored in a dependency, so the require must name a release that users
// can fetch: a pseudo-version (the zero one, v0.0.0-00010101000000-…, most
// of all) names a commit that no tag marks.
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
		case module.IsPseudoVersion(v):
			return "", fmt.Errorf("%s requires %s %s, a pseudo-version: users who go get otelretry cannot fetch it (the replace applies only here); require the release otelretry goes out with, vX.Y.Z", path, rootPath, v)
		case semver.Canonical(v) != v:
			return "", fmt.Errorf("%s requires %s %s, not a release version vX.Y.Z", path, rootPath, v)
		}
		return v, nil
	}
	return "", fmt.Errorf("%s does not require %s", path, rootPath)
}

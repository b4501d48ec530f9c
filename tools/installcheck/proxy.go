package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/zip"
)

// publish zips the module in repo/dir as path@version and writes it to the
// file module proxy at proxy. It returns how many files the zip holds.
func publish(proxy, repo, dir, path, version string, now time.Time) (int, error) {
	m := module.Version{Path: path, Version: version}
	files, err := moduleFiles(repo, dir)
	if err != nil {
		return 0, err
	}
	checked, err := zip.CheckFiles(files)
	if err != nil {
		return 0, fmt.Errorf("%s@%s cannot be zipped as the go command would: %w", path, version, err)
	}
	if err := checkNoPrograms(path, files, checked.Valid); err != nil {
		return 0, err
	}
	goMod, err := os.ReadFile(filepath.Join(repo, dir, "go.mod"))
	if err != nil {
		return 0, err
	}
	if got := modfile.ModulePath(goMod); got != path {
		return 0, fmt.Errorf("%s declares module %q, not %q", filepath.Join(dir, "go.mod"), got, path)
	}
	var zipped bytes.Buffer
	if err := zip.Create(&zipped, m, files); err != nil {
		return 0, err
	}
	return len(checked.Valid), writeVersion(proxy, m, goMod, zipped.Bytes(), now)
}

// writeVersion writes one version of a module in the layout that the go
// command reads from GOPROXY=file://proxy: under the module's escaped path,
// @v/list and the version's .info, .mod and .zip.
func writeVersion(proxy string, m module.Version, goMod, zipped []byte, now time.Time) error {
	escPath, err := module.EscapePath(m.Path)
	if err != nil {
		return err
	}
	escVersion, err := module.EscapeVersion(m.Version)
	if err != nil {
		return err
	}
	dir := filepath.Join(proxy, filepath.FromSlash(escPath), "@v")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	info, err := json.Marshal(struct {
		Version string
		Time    time.Time
	}{m.Version, now.UTC().Truncate(time.Second)})
	if err != nil {
		return err
	}
	for name, data := range map[string][]byte{
		"list":               []byte(m.Version + "\n"),
		escVersion + ".info": info,
		escVersion + ".mod":  goMod,
		escVersion + ".zip":  zipped,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// fileURL is the GOPROXY entry of a local directory.
func fileURL(dir string) string {
	return (&url.URL{Scheme: "file", Path: filepath.ToSlash(dir)}).String()
}

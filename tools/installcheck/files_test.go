package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/mod/zip"
)

// gitRepo makes a git repository in a temporary directory with files
// (path to contents), of which the ones in add are staged.
func gitRepo(t *testing.T, files map[string]string, add ...string) string {
	t.Helper()
	dir := t.TempDir()
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "git %v: %s", args, out)
	}
	git("init", "-q")
	for p, data := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
		require.NoError(t, os.WriteFile(full, []byte(data), 0o644))
	}
	if len(add) > 0 {
		git(append([]string{"add", "--"}, add...)...)
	}
	return dir
}

func paths(files []zip.File) []string {
	var ps []string
	for _, f := range files {
		ps = append(ps, f.Path())
	}
	slices.Sort(ps)
	return ps
}

func TestModuleFilesAsACommitHoldsThem(t *testing.T) {
	repo := gitRepo(t, map[string]string{
		"go.mod":       "module example.com/m\n",
		"LICENSE":      "MIT\n",
		".gitignore":   "/demo/demo\n",
		"m.go":         "package m\n",
		"gone.go":      "package m\n",
		"new.go":       "package m\n",
		"demo/main.go": "package main\n",
		"demo/demo":    "\x7fELF...",
		"sub/go.mod":   "module example.com/m/sub\n",
		"sub/s.go":     "package sub\n",
	}, "go.mod", "LICENSE", ".gitignore", "m.go", "gone.go", "demo/main.go", "sub/go.mod", "sub/s.go")
	require.NoError(t, os.Remove(filepath.Join(repo, "gone.go")))

	files, err := moduleFiles(repo, "")
	require.NoError(t, err)
	assert.Equal(t, []string{".gitignore", "LICENSE", "demo/main.go", "go.mod", "m.go", "new.go", "sub/go.mod", "sub/s.go"}, paths(files),
		"tracked files still there and new ones .gitignore lets through; not the ignored binary, not the deleted file")

	checked, err := zip.CheckFiles(files)
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{".gitignore", "LICENSE", "demo/main.go", "go.mod", "m.go", "new.go"}, checked.Valid,
		"the nested module is left out of the zip, as the go command leaves it out")

	sub, err := moduleFiles(repo, "sub")
	require.NoError(t, err)
	assert.Equal(t, []string{"LICENSE", "go.mod", "s.go"}, paths(sub),
		"a module in a subdirectory gets the repository's LICENSE, as the go command gives it")
}

func TestModuleFilesOutsideGit(t *testing.T) {
	_, err := moduleFiles(t.TempDir(), "")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "git ls-files")
}

func TestCompiledProgram(t *testing.T) {
	tests := []struct {
		name string
		head string
		want string
	}{
		{"ELF", "\x7fELF", "an ELF program"},
		{"Mach-O 64-bit", "\xcf\xfa\xed\xfe", "a Mach-O program"},
		{"Mach-O big-endian", "\xfe\xed\xfa\xce", "a Mach-O program"},
		{"Windows", "MZ\x90\x00", "a Windows program"},
		{"WebAssembly", "\x00asm", "a WebAssembly program"},
		{"Go source", "pack", ""},
		{"fuzz corpus entry", "go t", ""},
		{"short", "\x7fE", ""},
		{"empty", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := compiledProgram([]byte(tt.head))
			assert.Equal(t, tt.want != "", ok)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestCheckNoPrograms(t *testing.T) {
	repo := gitRepo(t, map[string]string{
		"go.mod":       "module example.com/m\n",
		"svccheck":     "\x7fELF\x02\x01\x01",
		"sub/go.mod":   "module example.com/m/sub\n",
		"sub/tool.exe": "MZ\x90\x00",
	}, "go.mod", "svccheck", "sub/go.mod", "sub/tool.exe")
	files, err := moduleFiles(repo, "")
	require.NoError(t, err)
	checked, err := zip.CheckFiles(files)
	require.NoError(t, err)

	err = checkNoPrograms("example.com/m", files, checked.Valid)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "svccheck is an ELF program")
	assert.NotContains(t, err.Error(), "tool.exe", "a nested module's files are not in this zip")

	assert.NoError(t, checkNoPrograms("example.com/m", files, []string{"go.mod"}))
}

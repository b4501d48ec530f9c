package main

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"

	"golang.org/x/mod/zip"
)

// diskFile is a file of the working tree, as golang.org/x/mod/zip takes it.
type diskFile struct {
	slashPath string // in the module zip
	filePath  string // on disk
	info      fs.FileInfo
}

func (f diskFile) Path() string                 { return f.slashPath }
func (f diskFile) Lstat() (fs.FileInfo, error)  { return f.info, nil }
func (f diskFile) Open() (io.ReadCloser, error) { return os.Open(f.filePath) }

// moduleFiles lists the files of the module in repo/dir as the go command
// would find them in a commit of the working tree: tracked files that are
// still there and new files that .gitignore lets through. The go command
// zips a tagged commit, so build output that .gitignore keeps out must not
// count here either, and a tracked binary must. Like the go command, it
// adds the repository's LICENSE to a module in a subdirectory that has
// none. Files of nested modules are listed: zip.Create leaves them out.
func moduleFiles(repo, dir string) ([]zip.File, error) {
	moddir := filepath.Join(repo, dir)
	cmd := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	cmd.Dir = moddir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	listed, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("listing the files of %s with git ls-files, as a commit would hold them: %v: %s", moddir, err, strings.TrimSpace(stderr.String()))
	}
	var files []zip.File
	seen := make(map[string]bool)
	for _, p := range strings.Split(string(listed), "\x00") {
		if p == "" || seen[p] {
			continue // git lists a file with conflicts once per stage
		}
		seen[p] = true
		f, err := statFile(moddir, p)
		if os.IsNotExist(err) {
			continue // tracked, but deleted in the working tree
		}
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	if dir != "" && !seen["LICENSE"] {
		f, err := statFile(repo, "LICENSE")
		if err != nil && !os.IsNotExist(err) {
			return nil, err
		}
		if err == nil {
			files = append(files, f)
		}
	}
	return files, nil
}

func statFile(dir, slashPath string) (diskFile, error) {
	p := filepath.Join(dir, filepath.FromSlash(slashPath))
	info, err := os.Lstat(p)
	if err != nil {
		return diskFile{}, err
	}
	return diskFile{slashPath: path.Clean(slashPath), filePath: p, info: info}, nil
}

// programMagic holds how compiled programs begin: ELF (Linux and most
// Unix), Mach-O (macOS, both byte orders and 32 and 64 bits), PE (Windows,
// its DOS header) and WebAssembly.
var programMagic = []struct{ prefix, kind string }{
	{"\x7fELF", "an ELF program"},
	{"\xfe\xed\xfa\xce", "a Mach-O program"},
	{"\xfe\xed\xfa\xcf", "a Mach-O program"},
	{"\xce\xfa\xed\xfe", "a Mach-O program"},
	{"\xcf\xfa\xed\xfe", "a Mach-O program"},
	{"MZ", "a Windows program"},
	{"\x00asm", "a WebAssembly program"},
}

// compiledProgram reports what kind of compiled program a file beginning
// with head is, if it is one.
func compiledProgram(head []byte) (string, bool) {
	for _, m := range programMagic {
		if bytes.HasPrefix(head, []byte(m.prefix)) {
			return m.kind, true
		}
	}
	return "", false
}

// checkNoPrograms fails on a compiled program among the files that go into
// a module zip: every go get would download it (82d1815 put an 8.5 MB one
// into otelretry).
func checkNoPrograms(modulePath string, files []zip.File, inZip []string) error {
	keep := make(map[string]bool, len(inZip))
	for _, p := range inZip {
		keep[p] = true
	}
	var found []string
	for _, f := range files {
		if !keep[f.Path()] {
			continue
		}
		head, err := readHead(f, 4)
		if err != nil {
			return err
		}
		if kind, ok := compiledProgram(head); ok {
			found = append(found, fmt.Sprintf("%s is %s", f.Path(), kind))
		}
	}
	if len(found) > 0 {
		return fmt.Errorf("the zip of %s would hold build output that every go get downloads: %s; git rm it and let .gitignore keep it out", modulePath, strings.Join(found, ", "))
	}
	return nil
}

func readHead(f zip.File, n int) ([]byte, error) {
	r, err := f.Open()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	head := make([]byte, n)
	m, err := io.ReadFull(r, head)
	if err == io.ErrUnexpectedEOF || err == io.EOF {
		err = nil
	}
	return head[:m], err
}

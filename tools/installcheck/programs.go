package main

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

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

// checkNoPrograms fails on a compiled program among the files under dir,
// the modules of this repository as the go command extracted them into
// the module cache: every go get downloads it (82d1815 put an 8.5 MB one
// into otelretry).
func checkNoPrograms(dir string) error {
	var found []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		head, err := readHead(p, 4)
		if err != nil {
			return err
		}
		if kind, ok := compiledProgram(head); ok {
			rel, _ := filepath.Rel(dir, p)
			found = append(found, fmt.Sprintf("%s is %s", filepath.ToSlash(rel), kind))
		}
		return nil
	})
	if err != nil {
		return err
	}
	if len(found) > 0 {
		return fmt.Errorf("the modules that go get downloads hold build output: %s; git rm it and let .gitignore keep it out", strings.Join(found, ", "))
	}
	return nil
}

func readHead(path string, n int) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	head := make([]byte, n)
	m, err := io.ReadFull(f, head)
	if err == io.ErrUnexpectedEOF || err == io.EOF {
		err = nil
	}
	return head[:m], err
}

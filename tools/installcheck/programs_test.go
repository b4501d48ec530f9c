package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

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
	dir := t.TempDir()
	for p, data := range map[string]string{
		"httpretry@v0.0.0-x/go.mod":              "module github.com/httpretry/httpretry\n",
		"httpretry@v0.0.0-x/empty":               "",
		"httpretry/otelretry@v0.0.0-x/svccheck":  "\x7fELF\x02\x01\x01",
		"httpretry/otelretry@v0.0.0-x/otel.go":   "package otelretry\n",
		"httpretry/otelretry@v0.0.0-x/tool.wasm": "\x00asm\x01",
	} {
		full := filepath.Join(dir, filepath.FromSlash(p))
		require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
		require.NoError(t, os.WriteFile(full, []byte(data), 0o644))
	}
	err := checkNoPrograms(dir)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "httpretry/otelretry@v0.0.0-x/svccheck is an ELF program")
	assert.Contains(t, err.Error(), "tool.wasm is a WebAssembly program")

	require.NoError(t, os.Remove(filepath.Join(dir, "httpretry", "otelretry@v0.0.0-x", "svccheck")))
	require.NoError(t, os.Remove(filepath.Join(dir, "httpretry", "otelretry@v0.0.0-x", "tool.wasm")))
	assert.NoError(t, checkNoPrograms(dir))
}

package httpretry

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The documentation's Go is compiled here, so that a renamed option or a
// changed signature breaks a test, not a reader's first hour.

// docFiles are the Markdown files whose Go snippets must compile.
func docFiles(t *testing.T) []string {
	t.Helper()
	guides, err := filepath.Glob("docs/*.md")
	require.NoError(t, err)
	require.NotEmpty(t, guides, "no guide under docs/")
	return append([]string{"README.md", "otelretry/README.md"}, guides...)
}

// TestDocsLinksResolve: every relative link of the README and
// the guides leads to a file of the repository.
func TestDocsLinksResolve(t *testing.T) {
	link := regexp.MustCompile(`\]\(([^)#\s]+)(#[^)]*)?\)`)
	for _, f := range docFiles(t) {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		for _, m := range link.FindAllStringSubmatch(string(data), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			_, err := os.Stat(filepath.Join(filepath.Dir(f), target))
			assert.NoError(t, err, "%s links to %s", f, target)
		}
	}
}

// TestEveryFileIsInTheTable: CONTRIBUTING.md's table of the root
// package's files names every non-test Go file of it, and no other.
func TestEveryFileIsInTheTable(t *testing.T) {
	data, err := os.ReadFile("CONTRIBUTING.md")
	require.NoError(t, err)
	var listed []string
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-z_]+\\.go)` \\|").FindAllStringSubmatch(string(data), -1) {
		listed = append(listed, m[1])
	}
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	var want []string
	for _, f := range files {
		if !strings.HasSuffix(f, "_test.go") {
			want = append(want, f)
		}
	}
	slices.Sort(listed)
	assert.Equal(t, want, listed, "CONTRIBUTING.md's table of files")
}

// TestEveryInternalPackageIsListed: CONTRIBUTING.md's list of the
// internal packages names every package under internal/, and no other.
func TestEveryInternalPackageIsListed(t *testing.T) {
	data, err := os.ReadFile("CONTRIBUTING.md")
	require.NoError(t, err)
	var listed []string
	for _, m := range regexp.MustCompile("(?m)^\\| `(internal/[a-z]+)` \\|").FindAllStringSubmatch(string(data), -1) {
		listed = append(listed, m[1])
	}
	dirs, err := filepath.Glob("internal/*")
	require.NoError(t, err)
	slices.Sort(listed)
	assert.Equal(t, dirs, listed, "CONTRIBUTING.md's list of internal packages")
}

// TestJSONReferenceMatchesTheDecoder: the field reference of
// docs/configuration.md names every JSON field the decoder reads, no
// more, read from the decoder's own tables (jsonFields), nested objects
// included.
func TestJSONReferenceMatchesTheDecoder(t *testing.T) {
	var want []string
	var walk func(prefix string, fields []jsonField)
	walk = func(prefix string, fields []jsonField) {
		for _, f := range fields {
			want = append(want, prefix+f.name)
			if nested, ok := f.ptr.(jsonObject); ok {
				walk(prefix+f.name+".", nested.jsonFields())
			}
		}
	}
	var p Policy
	walk("", p.jsonFields())

	data, err := os.ReadFile("docs/configuration.md")
	require.NoError(t, err)
	section := string(data)
	start := strings.Index(section, "\n## JSON field reference\n")
	require.GreaterOrEqual(t, start, 0, "docs/configuration.md has no \"## JSON field reference\"")
	section = section[start+1:]
	if end := strings.Index(section[3:], "\n## "); end >= 0 {
		section = section[:end+3]
	}
	row := regexp.MustCompile("(?m)^\\| `([a-zA-Z.]+)` \\|")
	var got []string
	for _, m := range row.FindAllStringSubmatch(section, -1) {
		got = append(got, m[1])
	}
	slices.Sort(want)
	slices.Sort(got)
	assert.Equal(t, want, got, "the JSON field reference's rows against the decoder's fields")
}

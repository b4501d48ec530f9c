package httpretry

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// commentWidth is the most columns a comment line of package code takes,
// a tab counted as 4: what go doc and a side-by-side review show whole.
const commentWidth = 80

// The package's comments stay wrapped: a paragraph edited in place and not
// rewrapped once left lines of 107 to 117 columns in the doc users read.
// Indented lines (code and command examples) are left as they are.
func TestCommentsAreWrapped(t *testing.T) {
	names, err := filepath.Glob("*.go")
	require.NoError(t, err)
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := os.Open(name)
		require.NoError(t, err)
		sc := bufio.NewScanner(f)
		for n := 1; sc.Scan(); n++ {
			line := sc.Text()
			text := strings.TrimLeft(line, "\t ")
			if !strings.HasPrefix(text, "// ") {
				continue
			}
			cols := utf8.RuneCountInString(text) + 4*(len(line)-len(text))
			assert.LessOrEqual(t, cols, commentWidth, "%s:%d: a comment line of %d columns", name, n, cols)
		}
		require.NoError(t, sc.Err())
		f.Close()
	}
}

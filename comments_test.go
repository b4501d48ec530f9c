package httpretry

import (
	"bufio"
	"fmt"
	"go/ast"
	"go/doc"
	"go/doc/comment"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"sort"
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

// Godoc prose stays as x/time/rate writes it (STYLE.md, habit 19): a
// sentence says one thing. The exported API's doc once averaged 21.1
// words a sentence, with sentences of up to 130 words.
const (
	// maxSentenceWords is the longest godoc sentence allowed, in words.
	maxSentenceWords = 40
	// maxMeanSentenceWords is the most words a godoc sentence may average.
	maxMeanSentenceWords = 15
)

// sentenceEnd splits text into sentences: a full stop, question or
// exclamation mark followed by a space.
var sentenceEnd = regexp.MustCompile(`[.!?]\s+`)

// godocSentence is one sentence of the exported API's doc, with the name
// it documents.
type godocSentence struct {
	where string
	words int
	text  string
}

// TestGodocProse measures the doc of the root package's exported API: the
// package doc and those of exported consts, vars, funcs, types, methods and
// struct fields, a const or var in a group included. Code blocks are left
// out; list items count as prose. A sentence over maxSentenceWords, or a
// mean over maxMeanSentenceWords, fails it, with the offenders listed.
func TestGodocProse(t *testing.T) {
	fset := token.NewFileSet()
	names, err := filepath.Glob("*.go")
	require.NoError(t, err)
	var files []*ast.File
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ParseComments)
		require.NoError(t, err)
		files = append(files, f)
	}
	d, err := doc.NewFromFiles(fset, files, "github.com/httpretry/httpretry")
	require.NoError(t, err)
	sentences := godocSentences(d)
	require.NotEmpty(t, sentences)

	total := 0
	for _, s := range sentences {
		total += s.words
		assert.LessOrEqual(t, s.words, maxSentenceWords, "%s: a sentence of %d words: %s", s.where, s.words, s.text)
	}
	mean := float64(total) / float64(len(sentences))
	if mean > maxMeanSentenceWords {
		sort.Slice(sentences, func(i, j int) bool { return sentences[i].words > sentences[j].words })
		var longest strings.Builder
		for _, s := range sentences[:min(len(sentences), 15)] {
			fmt.Fprintf(&longest, "\n%3d %s: %s", s.words, s.where, s.text)
		}
		t.Errorf("godoc sentences average %.1f words, more than %d; the longest:%s",
			mean, maxMeanSentenceWords, longest.String())
	}
	t.Logf("%d sentences, %.1f words a sentence", len(sentences), mean)
}

// godocSentences returns the sentences of d's exported API doc.
func godocSentences(d *doc.Package) []godocSentence {
	var out []godocSentence
	add := func(where, text string) {
		for _, para := range godocProse(d, text) {
			for _, s := range sentenceEnd.Split(para, -1) {
				if n := len(strings.Fields(s)); n > 1 {
					out = append(out, godocSentence{where, n, s})
				}
			}
		}
	}
	values := func(vs []*doc.Value) {
		for _, v := range vs {
			add(v.Names[0], v.Doc)
			for _, spec := range v.Decl.Specs {
				vspec := spec.(*ast.ValueSpec)
				if vspec.Doc != nil && vspec.Names[0].IsExported() {
					add(vspec.Names[0].Name, vspec.Doc.Text())
				}
			}
		}
	}
	add("package", d.Doc)
	values(d.Consts)
	values(d.Vars)
	for _, f := range d.Funcs {
		add(f.Name, f.Doc)
	}
	for _, typ := range d.Types {
		add(typ.Name, typ.Doc)
		values(typ.Consts)
		values(typ.Vars)
		for _, f := range typ.Funcs {
			add(f.Name, f.Doc)
		}
		for _, f := range typ.Methods {
			add(typ.Name+"."+f.Name, f.Doc)
		}
		for _, spec := range typ.Decl.Specs {
			st, ok := spec.(*ast.TypeSpec).Type.(*ast.StructType)
			if !ok {
				continue
			}
			for _, f := range st.Fields.List {
				if f.Doc != nil && len(f.Names) > 0 && f.Names[0].IsExported() {
					add(typ.Name+"."+f.Names[0].Name, f.Doc.Text())
				}
			}
		}
	}
	return out
}

// godocProse returns the paragraphs and list items of a doc comment as
// plain text, each on one line, leaving out headings and code blocks.
func godocProse(d *doc.Package, text string) []string {
	var out []string
	var plain func(*strings.Builder, []comment.Text)
	plain = func(b *strings.Builder, texts []comment.Text) {
		for _, x := range texts {
			switch x := x.(type) {
			case comment.Plain:
				b.WriteString(string(x))
			case comment.Italic:
				b.WriteString(string(x))
			case *comment.Link:
				plain(b, x.Text)
			case *comment.DocLink:
				plain(b, x.Text)
			}
		}
	}
	line := func(texts []comment.Text) string {
		var b strings.Builder
		plain(&b, texts)
		return strings.Join(strings.Fields(b.String()), " ")
	}
	for _, block := range d.Parser().Parse(text).Content {
		switch block := block.(type) {
		case *comment.Paragraph:
			out = append(out, line(block.Text))
		case *comment.List:
			for _, item := range block.Items {
				for _, c := range item.Content {
					if p, ok := c.(*comment.Paragraph); ok {
						out = append(out, line(p.Text))
					}
				}
			}
		}
	}
	return out
}

package recipes

import (
	"bufio"
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/scanner"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// The documentation's Go is compiled here, so that a renamed option or a
// changed signature breaks a test, not a reader's first hour. It lives in
// this module because this module requires every SDK a recipe names, and
// its own tests have compiled them already when this one runs.

// docFiles are the Markdown files of the repository whose Go snippets
// must compile, relative to this directory.
func docFiles(t *testing.T) []string {
	t.Helper()
	guides, err := filepath.Glob("../docs/*.md")
	check(t, err)
	if len(guides) == 0 {
		t.Fatal("no guide under docs/")
	}
	return append([]string{"../README.md", "../otelretry/README.md"}, guides...)
}

// check ends the test on err.
func check(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// snippet is one ```go block of a Markdown file.
type snippet struct {
	file string
	line int    // of the opening fence
	code string // the block's text
	// params declares the names a fragment uses without defining them, as
	// a parameter list: the comment <!-- snippet: ctx context.Context -->
	// on the line before the fence gives it.
	params string
}

func (s snippet) String() string { return fmt.Sprintf("%s:%d", s.file, s.line) }

var paramsComment = regexp.MustCompile(`^<!-- snippet: (.*) -->$`)

// snippets returns every ```go block of the Markdown file at path.
func snippets(t *testing.T, path string) []snippet {
	t.Helper()
	data, err := os.ReadFile(path)
	check(t, err)
	var out []snippet
	var cur *snippet
	prev := ""
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case cur == nil && line == "```go":
			cur = &snippet{file: path, line: n}
			if m := paramsComment.FindStringSubmatch(prev); m != nil {
				cur.params = m[1]
			}
		case cur != nil && line == "```":
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			cur.code += line + "\n"
		}
		prev = line
	}
	check(t, sc.Err())
	if cur != nil {
		t.Fatalf("%s: a ```go block is not closed", path)
	}
	return out
}

// importPaths are the packages a fragment may name, by the name it uses.
var importPaths = map[string]string{
	"httpretry":  "github.com/httpretry/httpretry",
	"otelretry":  "github.com/httpretry/httpretry/otelretry",
	"cleanhttp":  "github.com/hashicorp/go-cleanhttp",
	"context":    "context",
	"errors":     "errors",
	"expvar":     "expvar",
	"fmt":        "fmt",
	"http":       "net/http",
	"httputil":   "net/http/httputil",
	"io":         "io",
	"json":       "encoding/json",
	"log":        "log",
	"os":         "os",
	"slog":       "log/slog",
	"strings":    "strings",
	"sync":       "sync",
	"time":       "time",
	"url":        "net/url",
	"atomic":     "sync/atomic",
	"otel":       "go.opentelemetry.io/otel",
	"attribute":  "go.opentelemetry.io/otel/attribute",
	"trace":      "go.opentelemetry.io/otel/trace",
	"otelhttp":   "go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp",
	"aws":        "github.com/aws/aws-sdk-go-v2/aws",
	"s3":         "github.com/aws/aws-sdk-go-v2/service/s3",
	"oauth2":     "golang.org/x/oauth2",
	"resty":      "github.com/go-resty/resty/v2",
	"kubernetes": "k8s.io/client-go/kubernetes",
	"rest":       "k8s.io/client-go/rest",
}

// usedPackages are the names of importPaths that code selects from
// (name.X), comments and strings left out.
func usedPackages(code string) []string {
	fset := token.NewFileSet()
	var s scanner.Scanner
	s.Init(fset.AddFile("", -1, len(code)), []byte(code), nil, 0)
	seen := map[string]bool{}
	var prevTok token.Token
	var prevLit string
	for {
		_, tok, lit := s.Scan()
		if tok == token.EOF {
			break
		}
		if tok == token.PERIOD && prevTok == token.IDENT && importPaths[prevLit] != "" {
			seen[prevLit] = true
		}
		prevTok, prevLit = tok, lit
	}
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// topLevel finds where a fragment's declarations start: its first line
// that begins a type or a func at the left margin. Statements come before.
var topLevel = regexp.MustCompile(`(?m)^(type|func) `)

// source is s as a Go file of package name. A block that starts with a
// package clause is taken as it is; a fragment becomes the body of a
// function taking s.params, with its declarations after it, each package
// it names imported, and every variable it defines at its top level used,
// so that a fragment that ends by defining a client still compiles.
func (s snippet) source(t *testing.T) string {
	t.Helper()
	if strings.HasPrefix(s.code, "package ") {
		return s.code
	}
	body, decls := s.code, ""
	if loc := topLevel.FindStringIndex(s.code); loc != nil {
		body, decls = s.code[:loc[0]], s.code[loc[0]:]
	}
	var imports strings.Builder
	for _, name := range usedPackages(s.code + s.params) {
		fmt.Fprintf(&imports, "\t%s %q\n", name, importPaths[name])
	}
	head := "package snippet\n\nimport (\n" + imports.String() + ")\n\nfunc snippet(" + s.params + ") error {\n"
	src := head + body + "\treturn nil\n}\n\n" + decls
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "", src, 0)
	if err != nil {
		t.Fatalf("%s: the snippet as a Go file: %v\n%s", s, err, src)
	}
	// Use each variable the body defines, right after its definition,
	// and drop the final return when the fragment returns by itself.
	var fn *ast.FuncDecl
	for _, d := range f.Decls {
		if d, ok := d.(*ast.FuncDecl); ok && d.Name.Name == "snippet" {
			fn = d
		}
	}
	stmts := fn.Body.List
	type insert struct {
		at   int
		text string
	}
	var ins []insert
	for _, st := range stmts[:len(stmts)-1] {
		var names []string
		switch st := st.(type) {
		case *ast.AssignStmt:
			if st.Tok == token.DEFINE {
				for _, e := range st.Lhs {
					if id, ok := e.(*ast.Ident); ok && id.Name != "_" {
						names = append(names, id.Name)
					}
				}
			}
		case *ast.DeclStmt:
			if g, ok := st.Decl.(*ast.GenDecl); ok && g.Tok == token.VAR {
				for _, sp := range g.Specs {
					for _, id := range sp.(*ast.ValueSpec).Names {
						names = append(names, id.Name)
					}
				}
			}
		}
		for _, n := range names {
			ins = append(ins, insert{fset.Position(st.End()).Offset, "; _ = " + n})
		}
	}
	if len(stmts) > 1 {
		if _, ok := stmts[len(stmts)-2].(*ast.ReturnStmt); ok {
			last := stmts[len(stmts)-1]
			ins = append(ins, insert{fset.Position(last.Pos()).Offset, "//"})
		}
	}
	for i := len(ins) - 1; i >= 0; i-- {
		src = src[:ins[i].at] + ins[i].text + src[ins[i].at:]
	}
	return src
}

// TestDocSnippetsCompile builds and vets every Go snippet of the README,
// otelretry's README and the guides, each a package of its own, against
// the working tree: a scratch module in a workspace with the root and
// otelretry, requiring what recipes/ requires (the SDKs the recipes show).
func TestDocSnippetsCompile(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	root, err := filepath.Abs("..")
	check(t, err)
	dir := t.TempDir()
	mod := filepath.Join(dir, "snippets")
	check(t, os.Mkdir(mod, 0o755))

	// recipes/go.mod's requirements, which cover every SDK a recipe names;
	// the workspace gives the root and otelretry from the working tree.
	gomod, err := os.ReadFile(filepath.Join(root, "recipes", "go.mod"))
	check(t, err)
	var kept []string
	for _, l := range strings.Split(string(gomod), "\n") {
		switch {
		case strings.HasPrefix(l, "module "):
			l = "module snippets"
		case strings.HasPrefix(l, "replace "):
			continue
		}
		kept = append(kept, l)
	}
	check(t, os.WriteFile(filepath.Join(mod, "go.mod"), []byte(strings.Join(kept, "\n")), 0o644))
	var sums []byte
	for _, m := range []string{"recipes", "otelretry", "."} {
		b, err := os.ReadFile(filepath.Join(root, m, "go.sum"))
		check(t, err)
		sums = append(sums, b...)
	}
	check(t, os.WriteFile(filepath.Join(mod, "go.sum"), sums, 0o644))
	work := fmt.Sprintf("go 1.25.0\n\nuse (\n\t./snippets\n\t%s\n\t%s\n)\n",
		root, filepath.Join(root, "otelretry"))
	check(t, os.WriteFile(filepath.Join(dir, "go.work"), []byte(work), 0o644))

	var all []snippet
	for _, f := range docFiles(t) {
		all = append(all, snippets(t, f)...)
	}
	if len(all) < 2 {
		t.Fatalf("%d snippets: go build needs two packages or more to build none", len(all))
	}
	where := map[string]snippet{}
	for i, s := range all {
		pkg := fmt.Sprintf("s%03d", i)
		where[pkg] = s
		check(t, os.Mkdir(filepath.Join(mod, pkg), 0o755))
		check(t, os.WriteFile(filepath.Join(mod, pkg, "snippet.go"), []byte(s.source(t)), 0o644))
	}

	// Under the race detector, as recipes/ is tested, so that the SDKs
	// compiled for one are in the build cache for the other.
	flags := []string{}
	if raceEnabled {
		flags = append(flags, "-race")
	}
	for _, verb := range []string{"build", "vet"} {
		cmd := exec.Command("go", append(append([]string{verb}, flags...), "./...")...)
		cmd.Dir = mod
		cmd.Env = append(os.Environ(), "GOWORK="+filepath.Join(dir, "go.work"))
		out, err := cmd.CombinedOutput()
		if err != nil {
			// Name each failing snippet by its file and line.
			msg := string(out)
			for pkg, s := range where {
				msg = strings.ReplaceAll(msg, pkg+"/snippet.go", s.String()+" (as "+pkg+"/snippet.go)")
			}
			t.Fatalf("go %s of the documentation's snippets: %v\n%s", verb, err, msg)
		}
	}
}

package httpretry

import (
	"bytes"
	"flag"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var updateAPI = flag.Bool("api.update", false, "rewrite testdata/api.txt from the package's exported surface")

// The exported surface is pinned in testdata/api.txt, one line per name
// with its signature, so that no change to it goes unnoticed: DESIGN.md's
// names are relied on by users and by acceptance checks, and removing one
// for a tidier count once broke what the contract promised (BudgetConfig's
// JSON). A change is made by rewriting the file (-api.update) and saying
// why in the CHANGELOG.
// The test kit's surface, httpretrytest, is pinned beside the package's.
func TestExportedSurfaceIsPinned(t *testing.T) {
	for dir, file := range map[string]string{".": "api.txt", "httpretrytest": "api_httpretrytest.txt"} {
		t.Run(dir, func(t *testing.T) {
			got := exportedSurface(t, dir)
			path := filepath.Join("testdata", file)
			if *updateAPI {
				require.NoError(t, os.WriteFile(path, []byte(strings.Join(got, "\n")+"\n"), 0o644))
			}
			data, err := os.ReadFile(path)
			require.NoError(t, err)
			want := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
			assert.Empty(t, missingFrom(got, want), "removed or changed since "+path+" (a CHANGELOG line, then -api.update)")
			assert.Empty(t, missingFrom(want, got), "added since "+path+" (-api.update)")
		})
	}
}

// missingFrom is the lines of want that are not in have.
func missingFrom(have, want []string) []string {
	var out []string
	for _, w := range want {
		if !slices.Contains(have, w) {
			out = append(out, w)
		}
	}
	return out
}

// exportedSurface is one sorted line per exported name of the package in
// dir: its kind, its name (a method's with its receiver's type, a field's
// with its struct's) and its type.
func exportedSurface(t *testing.T, dir string) []string {
	t.Helper()
	fset := token.NewFileSet()
	str := func(n ast.Node) string {
		var b bytes.Buffer
		require.NoError(t, printer.Fprint(&b, fset, n))
		return b.String()
	}
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	require.NoError(t, err)
	var lines []string
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		require.NoError(t, err)
		for _, decl := range f.Decls {
			lines = append(lines, declSurface(decl, str)...)
		}
	}
	slices.Sort(lines)
	return lines
}

// declSurface is the exported lines of one declaration; str prints a node.
func declSurface(decl ast.Decl, str func(ast.Node) string) []string {
	var lines []string
	switch d := decl.(type) {
	case *ast.FuncDecl:
		sig := strings.TrimPrefix(str(d.Type), "func")
		switch {
		case !d.Name.IsExported():
		case d.Recv == nil:
			lines = append(lines, "func "+d.Name.Name+sig)
		default:
			recv := strings.TrimPrefix(str(d.Recv.List[0].Type), "*")
			if ast.IsExported(recv) {
				lines = append(lines, "method ("+str(d.Recv.List[0].Type)+") "+d.Name.Name+sig)
			}
		}
	case *ast.GenDecl:
		for _, spec := range d.Specs {
			switch s := spec.(type) {
			case *ast.TypeSpec:
				if s.Name.IsExported() {
					lines = append(lines, typeSurface(s, str)...)
				}
			case *ast.ValueSpec:
				for _, n := range s.Names {
					if n.IsExported() {
						lines = append(lines, d.Tok.String()+" "+n.Name)
					}
				}
			}
		}
	}
	return lines
}

// typeSurface is the line of an exported type and one per exported field
// of a struct.
func typeSurface(s *ast.TypeSpec, str func(ast.Node) string) []string {
	st, ok := s.Type.(*ast.StructType)
	if !ok {
		kind := str(s.Type)
		if _, isIface := s.Type.(*ast.InterfaceType); isIface {
			kind = "interface"
		}
		return []string{"type " + s.Name.Name + " " + kind}
	}
	lines := []string{"type " + s.Name.Name + " struct"}
	for _, fld := range st.Fields.List {
		for _, n := range fld.Names {
			if n.IsExported() {
				lines = append(lines, "field "+s.Name.Name+"."+n.Name+" "+str(fld.Type))
			}
		}
	}
	return lines
}

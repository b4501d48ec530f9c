package httpretry

import (
	"flag"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

var layout = flag.Bool("layout", false, "print the layout figures of the root package (methods of call and route, mutual file pairs)")

// TestLayoutFigures prints, with -layout, two figures of how the root
// package's files hold together (issue 29): the methods declared on call
// and route and the files they sit in, and the pairs of files that each
// use a name (a type, function, method, field, variable or constant)
// declared in the other. It checks nothing: the figures are read before
// and after a reshape. Type-checking from source takes seconds, so it is
// off by default.
func TestLayoutFigures(t *testing.T) {
	if !*layout {
		t.Skip("run with -layout")
	}
	fset := token.NewFileSet()
	files, pkg, info := typeCheckRoot(t, fset)

	methods, where := engineMethods(fset, files)
	t.Logf("methods of call and route: %d in %d files", methods, len(where))
	for _, f := range slices.Sorted(maps.Keys(where)) {
		t.Logf("  %-20s %d", f, where[f])
	}

	pairs := mutualPairs(fset, pkg, info)
	t.Logf("mutually dependent file pairs: %d", len(pairs))
	for _, p := range pairs {
		t.Logf("  %s", p)
	}
}

// typeCheckRoot parses and type-checks the root package's non-test files.
func typeCheckRoot(t *testing.T, fset *token.FileSet) ([]*ast.File, *types.Package, *types.Info) {
	names, err := filepath.Glob("*.go")
	require.NoError(t, err)
	var files []*ast.File
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		require.NoError(t, err)
		files = append(files, f)
	}
	info := &types.Info{Uses: map[*ast.Ident]types.Object{}}
	conf := types.Config{Importer: importer.ForCompiler(fset, "source", nil)}
	pkg, err := conf.Check("github.com/httpretry/httpretry", fset, files, info)
	require.NoError(t, err)
	return files, pkg, info
}

// engineMethods counts the methods declared on call and route, and how
// many sit in each file.
func engineMethods(fset *token.FileSet, files []*ast.File) (int, map[string]int) {
	n, where := 0, map[string]int{}
	for _, f := range files {
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Recv == nil {
				continue
			}
			typ := fd.Recv.List[0].Type
			if star, ok := typ.(*ast.StarExpr); ok {
				typ = star.X
			}
			if id, ok := typ.(*ast.Ident); ok && (id.Name == "call" || id.Name == "route") {
				n++
				where[filepath.Base(fset.Position(f.Pos()).Filename)]++
			}
		}
	}
	return n, where
}

// mutualPairs lists the pairs of files each of which uses a name of the
// package declared in the other, as "a.go b.go (names a uses of b; names
// b uses of a)".
func mutualPairs(fset *token.FileSet, pkg *types.Package, info *types.Info) []string {
	uses := map[[2]string]map[string]bool{} // {user, declarer}: names
	for id, obj := range info.Uses {
		if obj.Pkg() != pkg || !obj.Pos().IsValid() {
			continue
		}
		user := filepath.Base(fset.Position(id.Pos()).Filename)
		decl := filepath.Base(fset.Position(obj.Pos()).Filename)
		if user == decl {
			continue
		}
		k := [2]string{user, decl}
		if uses[k] == nil {
			uses[k] = map[string]bool{}
		}
		uses[k][obj.Name()] = true
	}
	var pairs []string
	for k, names := range uses {
		back := uses[[2]string{k[1], k[0]}]
		if k[0] > k[1] || back == nil {
			continue
		}
		pairs = append(pairs, fmt.Sprintf("%s %s (%s; %s)", k[0], k[1],
			strings.Join(slices.Sorted(maps.Keys(names)), " "), strings.Join(slices.Sorted(maps.Keys(back)), " ")))
	}
	slices.Sort(pairs)
	return pairs
}

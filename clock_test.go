package httpretry

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// maxClockSites bounds the reads of the clock in the package (issue 29):
// 22 when the shared state read it for itself, then 12 when only the
// actors and the public wrappers did (see clock.go). Point 22 adds 11:
// a parked or paced request acts on its own after each wait (stop, park,
// parked, parkAgain, endPaced, waitParked, sendParked, leavePark), and a
// held resend listens on its own (await); an origin's probe timer, and its
// becoming down, read the instant they act at.
const maxClockSites = 23

// TestClockSites counts the places that read the clock (time.Now,
// time.Since, time.Until) in the package's code and in its internal
// packages, and fails above maxClockSites, listing them: a decision or a
// piece of shared state takes the instant it is given.
func TestClockSites(t *testing.T) {
	sites := clockSites(t)
	t.Logf("%d clock sites:\n%s", len(sites), strings.Join(sites, "\n"))
	assert.LessOrEqual(t, len(sites), maxClockSites,
		"the clock is read at %d sites; pass the instant the caller holds:\n%s", len(sites), strings.Join(sites, "\n"))
}

// clockSites lists each read of the clock in the non-test files of the
// package and of internal/, as "file:line function".
func clockSites(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	err = filepath.WalkDir("internal", func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".go") {
			files = append(files, path)
		}
		return err
	})
	if !errors.Is(err, fs.ErrNotExist) { // no internal package yet
		require.NoError(t, err)
	}
	fset := token.NewFileSet()
	var sites []string
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		require.NoError(t, err)
		timeName := importName(f, "time")
		if timeName == "" {
			continue
		}
		for _, decl := range f.Decls {
			fn := declName(decl)
			ast.Inspect(decl, func(n ast.Node) bool {
				sel, ok := n.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				if x, ok := sel.X.(*ast.Ident); ok && x.Name == timeName && readsClock(sel.Sel.Name) {
					sites = append(sites, fmt.Sprintf("%s:%d %s (time.%s)",
						name, fset.Position(sel.Pos()).Line, fn, sel.Sel.Name))
				}
				return true
			})
		}
	}
	return sites
}

// readsClock reports whether the function of package time named name reads
// the clock.
func readsClock(name string) bool { return name == "Now" || name == "Since" || name == "Until" }

// importName is the name f refers to the package at path by, "" if f does
// not import it.
func importName(f *ast.File, path string) string {
	for _, imp := range f.Imports {
		if p, _ := strconv.Unquote(imp.Path.Value); p == path {
			if imp.Name != nil {
				return imp.Name.Name
			}
			return path[strings.LastIndex(path, "/")+1:]
		}
	}
	return ""
}

// declName is a function's name, a method's with its receiver's type.
func declName(decl ast.Decl) string {
	fn, ok := decl.(*ast.FuncDecl)
	if !ok {
		return "(declaration)"
	}
	if fn.Recv == nil {
		return fn.Name.Name
	}
	recv := fn.Recv.List[0].Type
	if star, ok := recv.(*ast.StarExpr); ok {
		recv = star.X
	}
	if id, ok := recv.(*ast.Ident); ok {
		return id.Name + "." + fn.Name.Name
	}
	return fn.Name.Name
}

// The registry's recordAt adds a host at the instant it is given, and
// reads none for a host it holds, as the fast path finds it.
func TestBudgetsRecordAtReadsItsInstantOnlyToAdd(t *testing.T) {
	bs := NewBudgets()
	at := instant(bt0)
	r := bs.recordAt("a.example", &at)
	assert.Equal(t, bt0.UnixNano(), r.used.Load(), "added as used at the instant given")
	assert.Equal(t, bt0.UnixNano(), bs.clock.Load(), "the registry's clock moved to it")

	var unread instant
	assert.Same(t, r, bs.recordAt("a.example", &unread), "the last host found")
	bs.recordAt("b.example", &at)
	assert.Same(t, r, bs.recordAt("a.example", &unread), "a host in the map")
	assert.Zero(t, time.Time(unread), "a host held already reads no clock")
}

// configureAt reloads a budget at the instant it is given, and reads none
// when the config means the budget it has, as on every request.
func TestBudgetConfigureAtReadsItsInstantOnlyToReload(t *testing.T) {
	b := &Budget{}
	at := instant(bt0)
	b.configureAt(BudgetConfig{}, &at)
	b.countAt(bt0)
	b.countAt(budgetAt(4 * time.Second))

	var unread instant
	b.configureAt(BudgetConfig{}, &unread)
	b.configureAt(BudgetConfig{Percent: 20, MinRetries: 10, Window: 10 * time.Second}, &unread)
	assert.Zero(t, time.Time(unread), "the config the budget has: no clock read")

	// At +5 s a 2 s window holds the request of +4 s only, whatever the
	// clock says.
	reload := instant(budgetAt(5 * time.Second))
	b.configureAt(BudgetConfig{Window: 2 * time.Second}, &reload)
	assert.Equal(t, BudgetStats{Requests: 1}, windowAt(b, budgetAt(5*time.Second)))
}

// recordAt counts a request of an idle budget in the slot of the instant
// it is given, not the clock's, and reads none while the budget ticks.
func TestBudgetRecordAtReadsItsInstantOnlyWhenIdle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newTestBudget(BudgetConfig{})
		defer b.stopTicking()
		later := time.Now().Add(time.Minute)
		at := instant(later)
		b.recordAt(&at)
		require.NotNil(t, b.cur.Load(), "ticking from the request on")

		var unread instant
		b.recordAt(&unread)
		assert.Zero(t, time.Time(unread), "a ticking budget reads no clock")
		assert.Equal(t, BudgetStats{Requests: 2}, windowAt(b, later), "both in the slot of the instant given")
		assert.Equal(t, BudgetStats{}, windowAt(b, time.Now()), "none in the clock's")
	})
}

// record, configure and forKey are the registry's and a budget's At forms
// at an instant read when needed, for the tests that need no fixed one.
func (bs *Budgets) record(key string) *originRecord { return bs.recordAt(key, new(instant)) }

func (b *Budget) configure(cfg BudgetConfig) { b.configureAt(cfg, new(instant)) }

func (bs *Budgets) forKey(key string, cfg BudgetConfig) *Budget {
	return bs.forKeyAt(key, cfg, new(instant))
}

package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// program is what a user of otelretry writes, as its README shows: an
// Observer given to an httpretry transport. It sends one GET to a loopback
// server that answers 503 once, so the transport has a retry to make and
// the observer an event to take. Its meter is a no-op one, from the otel
// metric module that otelretry itself imports, so that the program builds
// on what the README's go get lines fetched and nothing else.
const program = `package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"sync/atomic"

	"github.com/httpretry/httpretry"
	"github.com/httpretry/httpretry/otelretry"
	"go.opentelemetry.io/otel/metric/noop"
)

func main() {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()

	observe, err := otelretry.Observer(noop.NewMeterProvider().Meter("installcheck"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	rt := httpretry.New(nil, httpretry.WithObserver(observe))
	defer rt.CloseIdleConnections()
	resp, err := (&http.Client{Transport: rt}).Get(srv.URL)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	resp.Body.Close()
	fmt.Printf("status %d after %d calls\n", resp.StatusCode, calls.Load())
}
`

// wantOutput is what program prints when the transport resent the GET.
const wantOutput = "status 200 after 2 calls"

// downloadCache returns the download cache of the local module cache, a
// file module proxy in its own right, after go mod download in the module
// at dir has put that module's dependencies there (at no cost when they
// already are, as in CI after .ci/run's go mod download).
func downloadCache(dir string) (string, error) {
	if _, err := goCmd(dir, nil, "mod", "download"); err != nil {
		return "", fmt.Errorf("fetching otelretry's dependencies into the module cache: %w", err)
	}
	modcache, err := goCmd(dir, nil, "env", "GOMODCACHE")
	if err != nil {
		return "", err
	}
	return filepath.Join(strings.TrimSpace(modcache), "cache", "download"), nil
}

// userEnv is the environment of the go command in the scratch module: a
// user's, with nothing cached. The module path of this repository goes
// direct, through git, to the served repository that gitconfig rewrites
// GitHub's URL to; every other module comes from the file proxy at proxy.
// GOPATH and its module cache are fresh, so that no version fetched before
// can hide what the served repository holds.
func userEnv(gopath, gitconfig, proxy string) []string {
	return []string{
		"GOENV=off", // a developer's go env -w settings are not a user's
		"GOPATH=" + gopath,
		"GOMODCACHE=" + filepath.Join(gopath, "pkg", "mod"),
		// -modcacherw lets the fresh module cache be deleted afterwards.
		"GOFLAGS=-modcacherw",
		"GOPROXY=" + fileURL(proxy),
		"GOPRIVATE=" + privatePattern,
		"GONOPROXY=" + privatePattern,
		"GONOSUMDB=" + privatePattern,
		// The checksum database cannot be reached offline, and it knows no
		// commit of the served repository. The other modules come from the
		// developer's module cache, where the go command put them after
		// checking them against otelretry's go.sum.
		"GOSUMDB=off",
		"GOINSECURE=",
		"GOVCS=" + privatePattern + ":git,*:off",
		"GOWORK=off",
		"GOTOOLCHAIN=local",
		"GIT_CONFIG_GLOBAL=" + gitconfig,
		"GIT_CONFIG_NOSYSTEM=1",
		// The go command lets git fetch over https; git then needs the file
		// protocol that the URL rewrite turns it into.
		"GIT_ALLOW_PROTOCOL=https:file",
		"GIT_TERMINAL_PROMPT=0",
	}
}

// privatePattern is the module path prefix that goes direct to git.
const privatePattern = "github.com/httpretry"

// want is the versions the scratch modules must resolve.
type want struct {
	otel      string // otelretry@latest
	rootAlone string // httpretry after go get of otelretry alone: what otelretry requires
	rootAll   string // httpretry after all the install lines: the newer of @latest and rootAlone
}

// install does what a new user does, in scratch modules under dir with no
// replace. First the README's go get line of otelretry alone, which must
// bring the httpretry that otelretry requires; then, in a second module,
// every go get line of the README in its order, as a user who copies the
// whole block runs them. After each, it checks the versions resolved and
// builds and runs program. It reports each to out. Modules land in the
// module cache at modcache, env's.
func install(dir, modcache string, env []string, lines [][]string, w want, out io.Writer) error {
	scratches := []struct {
		name  string
		lines [][]string
		root  string
	}{
		{"otelretry alone", lines[otelLine(lines) : otelLine(lines)+1], w.rootAlone},
		{"the install block", lines, w.rootAll},
	}
	if len(lines) == 1 {
		scratches = scratches[:1]
	}
	for n, sc := range scratches {
		if err := installIn(filepath.Join(dir, fmt.Sprint("scratch", n)), modcache, env, sc.name, sc.lines, sc.root, w.otel, out); err != nil {
			return err
		}
	}
	return nil
}

// installIn runs the go get lines in a new scratch module at dir, checks
// that they resolved httpretry at root and otelretry at otel, and builds
// and runs program.
func installIn(dir, modcache string, env []string, name string, lines [][]string, root, otel string, out io.Writer) error {
	start := time.Now()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if _, err := goCmd(dir, env, "mod", "init", "example.com/installcheck"); err != nil {
		return fmt.Errorf("creating the scratch module: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(program), 0o644); err != nil {
		return err
	}
	var run []string
	for _, args := range lines {
		line := "go get " + strings.Join(args, " ")
		run = append(run, line)
		if _, err := goCmd(dir, env, append([]string{"get"}, args...)...); err != nil {
			return fmt.Errorf("%s (README.md's install line, run in a scratch module with no replace: the version it names and the httpretry version otelretry requires must each be a commit on main or a pushed tag): %w", line, err)
		}
	}
	got, err := goCmd(dir, env, "list", "-m", "-f", "{{.Path}} {{.Version}}", rootPath, rootPath+"/otelretry")
	if err != nil {
		return fmt.Errorf("after %s: %w", strings.Join(run, "; "), err)
	}
	if want := fmt.Sprintf("%s %s\n%s/otelretry %s\n", rootPath, root, rootPath, otel); got != want {
		return fmt.Errorf("after %s the scratch module resolved\n%swhere it should resolve\n%s", strings.Join(run, "; "), got, want)
	}
	if err := checkNoPrograms(filepath.Join(modcache, privatePattern)); err != nil {
		return err
	}
	fetched := time.Since(start)
	printed, err := buildAndRun(dir, env)
	if err != nil {
		return fmt.Errorf("after %s: %w", strings.Join(run, "; "), err)
	}
	fmt.Fprintf(out, "installcheck: %s: %s (%.1fs): httpretry %s, otelretry %s; the program (%.1fs): %s\n",
		name, strings.Join(run, "; "), fetched.Seconds(), root, otel, (time.Since(start) - fetched).Seconds(), printed)
	return nil
}

// buildAndRun builds program against the modules the scratch module at dir
// resolved, with its go.mod and go.sum as go get left them, and runs it.
func buildAndRun(dir string, env []string) (string, error) {
	if _, err := goCmd(dir, env, "build", "-trimpath", "-o", "installcheck-program", "."); err != nil {
		return "", fmt.Errorf("building a program that imports httpretry and otelretry as installed: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	run := exec.CommandContext(ctx, filepath.Join(dir, "installcheck-program"))
	var stderr bytes.Buffer
	run.Stderr = &stderr
	printed, err := run.Output()
	if err != nil {
		return "", fmt.Errorf("running the program built against the installed modules: %v: %s", err, strings.TrimSpace(stderr.String()))
	}
	if got := strings.TrimSpace(string(printed)); got != wantOutput {
		return "", fmt.Errorf("the program built against the installed modules printed %q, want %q", got, wantOutput)
	}
	return wantOutput, nil
}

// goCmd runs the go command in dir, with env added to this process's
// environment, and returns its standard output. Its error quotes the
// command and everything the command said.
func goCmd(dir string, env []string, args ...string) (string, error) {
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go %s in %s: %v\n%s", strings.Join(args, " "), dir, err, strings.TrimSpace(stderr.String()+stdout.String()))
	}
	return stdout.String(), nil
}

// fileURL is the URL of a local directory, as GOPROXY and git take it.
func fileURL(dir string) string {
	return (&url.URL{Scheme: "file", Path: filepath.ToSlash(dir)}).String()
}

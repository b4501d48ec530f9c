package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// program is what a user of otelretry writes, as its README shows: an
// Observer on the global meter given to an httpretry transport. It sends
// one GET to a loopback server that answers 503 once, so the transport has
// a retry to make and the observer an event to count.
const program = `package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"sync/atomic"

	"github.com/httpretry/httpretry"
	"github.com/httpretry/httpretry/otelretry"
	"go.opentelemetry.io/otel"
)

func main() {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()

	observe, err := otelretry.Observer(otel.Meter("installcheck"))
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

// install does what a new user of otelretry does, in a scratch module at
// dir with no replace: go get otelretry at version, then build and run
// program. Modules come only from the file proxies, in order, into a fresh
// module cache at modcache, so a version cached by an earlier run cannot
// hide a changed tree. It returns what the program printed.
func install(dir, modcache string, proxies []string, version string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	urls := make([]string, len(proxies))
	for i, p := range proxies {
		urls[i] = fileURL(p)
	}
	env := []string{
		"GOPROXY=" + strings.Join(urls, ","),
		"GOMODCACHE=" + modcache,
		// The proxies are local files written or fetched a moment ago, and
		// the check must not reach the network for a checksum.
		"GOSUMDB=off", "GONOSUMDB=", "GOPRIVATE=", "GONOPROXY=", "GOINSECURE=",
		// -modcacherw lets the fresh module cache be deleted afterwards.
		"GOFLAGS=-mod=mod -modcacherw",
		"GOWORK=off",
		"GOTOOLCHAIN=local",
	}
	otel := rootPath + "/otelretry@" + version
	steps := []struct {
		args []string
		what string
	}{
		{[]string{"mod", "init", "example.com/installcheck"}, "creating the scratch module"},
		{[]string{"get", otel}, "go get " + otel + " with no replace, as a user would (is each module's zip complete, and does otelretry/go.mod require a version the proxy has?)"},
		{[]string{"build", "-trimpath", "-o", "installcheck-program", "."}, "building a program that imports httpretry and otelretry as installed"},
	}
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(program), 0o644); err != nil {
		return "", err
	}
	for _, s := range steps {
		if _, err := goCmd(dir, env, s.args...); err != nil {
			return "", fmt.Errorf("%s: %w", s.what, err)
		}
	}

	got, err := goCmd(dir, env, "list", "-m", "-f", "{{.Path}} {{.Version}}", rootPath, rootPath+"/otelretry")
	if err != nil {
		return "", err
	}
	if want := fmt.Sprintf("%s %s\n%s/otelretry %s\n", rootPath, version, rootPath, version); got != want {
		return "", fmt.Errorf("the scratch module resolved\n%swhere it should resolve\n%s", got, want)
	}

	run := exec.Command(filepath.Join(dir, "installcheck-program"))
	var stderr bytes.Buffer
	run.Stderr = &stderr
	out, err := run.Output()
	if err != nil {
		return "", fmt.Errorf("running the program built against the installed modules: %v: %s", err, strings.TrimSpace(stderr.String()))
	}
	if strings.TrimSpace(string(out)) != wantOutput {
		return "", fmt.Errorf("the program built against the installed modules printed %q, want %q", strings.TrimSpace(string(out)), wantOutput)
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

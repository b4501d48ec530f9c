package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/httpretry/httpretry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// waitBound is how long a test waits for something that takes
// milliseconds: generous, so that a loaded machine does not fail it.
const waitBound = 10 * time.Second

// upstream is a loopback server that answers every request with status and
// its name, and counts the calls it gets.
type upstream struct {
	*httptest.Server
	host        string // "127.0.0.1:port", as a host entry keys it
	calls       atomic.Int64
	sawRetryMax atomic.Bool // a request carried X-Retry-Max
}

func newUpstream(t *testing.T, name string, status int) *upstream {
	u := &upstream{}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.calls.Add(1)
		if r.Header.Get(headerRetryMax) != "" {
			u.sawRetryMax.Store(true)
		}
		w.Header().Set("X-Seen", fmt.Sprintf("host=%s path=%s query=%s xff=%s", r.Host, r.URL.Path, r.URL.RawQuery, r.Header.Get("X-Forwarded-For")))
		w.WriteHeader(status)
		io.WriteString(w, name)
	}))
	u.host = u.Listener.Addr().String()
	t.Cleanup(u.Close)
	return u
}

// logRecords collects the JSON records a slog.JSONHandler writes, one per
// Write, and lets a test wait for one.
type logRecords struct {
	mu      sync.Mutex
	records []map[string]any
	changed chan struct{} // closed and replaced on every record
}

func newLogRecords() *logRecords { return &logRecords{changed: make(chan struct{})} }

func (l *logRecords) Write(p []byte) (int, error) {
	var rec map[string]any
	if err := json.Unmarshal(p, &rec); err != nil {
		rec = map[string]any{"msg": "not JSON: " + string(p)}
	}
	l.mu.Lock()
	l.records = append(l.records, rec)
	close(l.changed)
	l.changed = make(chan struct{})
	l.mu.Unlock()
	return len(p), nil
}

// with returns the records whose msg is msg.
func (l *logRecords) with(msg string) []map[string]any {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	for _, r := range l.records {
		if r["msg"] == msg {
			out = append(out, r)
		}
	}
	return out
}

// wait returns the nth record (1-based) whose msg is msg, once it is
// written.
func (l *logRecords) wait(t *testing.T, msg string, n int) map[string]any {
	t.Helper()
	timeout := time.After(waitBound)
	for {
		l.mu.Lock()
		changed := l.changed
		l.mu.Unlock()
		if recs := l.with(msg); len(recs) >= n {
			return recs[n-1]
		}
		select {
		case <-changed:
		case <-timeout:
			require.FailNowf(t, "no log record", "%d× %q within %v; have %v", n, msg, waitBound, l.with(msg))
		}
	}
}

// writeConfig writes the configuration file, with a modification time an
// hour later than the previous write's, so that a poll sees every write
// however coarse the file system's clock. It writes a file beside it and
// renames it into place: written in place, a poll every 10 ms could read
// it truncated, and a loaded machine did ("config: EOF").
func writeConfig(t *testing.T, path, format string, args ...any) {
	t.Helper()
	mod := time.Now()
	if fi, err := os.Stat(path); err == nil {
		mod = fi.ModTime().Add(time.Hour)
	}
	next := path + ".next"
	require.NoError(t, os.WriteFile(next, fmt.Appendf(nil, format, args...), 0o600))
	require.NoError(t, os.Chtimes(next, mod, mod))
	require.NoError(t, os.Rename(next, path))
}

// testGateway is a gateway in front of a loopback server, with its own
// budgets and its log records.
type testGateway struct {
	*gateway
	srv     *httptest.Server
	path    string
	budgets *httpretry.Budgets
	logs    *logRecords
}

func startGateway(t *testing.T, format string, args ...any) *testGateway {
	t.Helper()
	tg := &testGateway{path: filepath.Join(t.TempDir(), "gateway.json"), budgets: httpretry.NewBudgets(), logs: newLogRecords()}
	writeConfig(t, tg.path, format, args...)
	log := slog.New(slog.NewJSONHandler(tg.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	g, err := newGateway(tg.path, tg.budgets, log)
	require.NoError(t, err)
	tg.gateway = g
	tg.srv = httptest.NewServer(g)
	t.Cleanup(g.Close)
	t.Cleanup(tg.srv.Close) // first: it closes its client's idle connections too
	return tg
}

// get sends a GET through the gateway with the headers given as name,
// value pairs, and returns the status and body.
func (tg *testGateway) get(t *testing.T, path string, header ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, tg.srv.URL+path, nil)
	require.NoError(t, err)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := tg.srv.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(body)
}

// statsOf returns host's budget window, and whether budgets holds host.
func statsOf(budgets *httpretry.Budgets, host string) (s httpretry.BudgetStats, ok bool) {
	budgets.Range(func(h string, hs httpretry.BudgetStats) bool {
		if h == host {
			s, ok = hs, true
		}
		return !ok
	})
	return s, ok
}

// TestFailover: a primary that refuses connections or answers 503 hands
// the request to its fallback, from the host entry of the file; both
// failing, the request makes candidates + maxRetries calls, no more.
func TestFailover(t *testing.T) {
	const config = `{
		"routes": [{"prefix": "/api/", "upstream": %q}],
		"retry": {
			"default": {"backoff": "none"},
			"hosts": {%q: {"maxRetries": 2, "fallbacks": [%q]}}
		}
	}`
	for _, tc := range []struct {
		name                       string
		retryMax                   string // X-Retry-Max; "": none
		primaryStatus              int    // 0: refuses connections
		fallbackStatus             int
		wantStatus                 int
		wantPrimary, wantFallback  int64
		wantBody, wantLastLoggedAs string
	}{
		{"primary down", "", 0, 200, 200, 0, 1, "fallback", "httpretry fallback"},
		{"primary 503", "", 503, 200, 200, 1, 1, "fallback", "httpretry fallback"},
		// Round the candidates: primary, fallback, then 2 resends, one each.
		{"both 503", "", 503, 503, 503, 2, 2, "fallback", "httpretry give-up"},
		// No resend, but the fallback still gets its one attempt.
		{"both 503, X-Retry-Max 0", "0", 503, 503, 503, 1, 1, "fallback", "httpretry give-up"},
		{"primary 503, X-Retry-Max 0", "0", 503, 200, 200, 1, 1, "fallback", "httpretry fallback"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			primary := newUpstream(t, "primary", tc.primaryStatus)
			if tc.primaryStatus == 0 {
				primary.Close()
			}
			fallback := newUpstream(t, "fallback", tc.fallbackStatus)
			tg := startGateway(t, config, primary.URL, primary.host, fallback.URL)

			var header []string
			if tc.retryMax != "" {
				header = []string{headerRetryMax, tc.retryMax}
			}
			status, body := tg.get(t, "/api/orders", header...)
			assert.Equal(t, tc.wantStatus, status)
			assert.Equal(t, tc.wantBody, body)
			assert.Equal(t, tc.wantPrimary, primary.calls.Load(), "primary calls")
			assert.Equal(t, tc.wantFallback, fallback.calls.Load(), "fallback calls")

			fell := tg.logs.with("httpretry fallback")
			require.Len(t, fell, 1)
			assert.Equal(t, fallback.URL, fell[0]["origin"])
			assert.Equal(t, "DEBUG", fell[0]["level"])
			assert.Equal(t, primary.URL+"/api/orders", fell[0]["url"])
			if tc.wantLastLoggedAs == "httpretry give-up" {
				gaveUp := tg.logs.with("httpretry give-up")
				require.Len(t, gaveUp, 1)
				assert.Equal(t, "WARN", gaveUp[0]["level"])
				assert.Equal(t, "exhausted", gaveUp[0]["reason"])
			}
		})
	}
}

// TestRetryMaxHeader: X-Retry-Max sets one request's resends, whatever the
// policy's maxRetries, up to 16; a malformed value is refused before any
// upstream call; the header never reaches the upstream.
func TestRetryMaxHeader(t *testing.T) {
	down := newUpstream(t, "busy", http.StatusServiceUnavailable)
	tg := startGateway(t, `{
		"routes": [{"prefix": "/", "upstream": %q}],
		"retry": {"default": {"maxRetries": 2, "backoff": "none", "budget": {"disabled": true}}}
	}`, down.URL)

	for _, tc := range []struct {
		header     string // "": none
		wantStatus int
		wantCalls  int64
	}{
		{"", 503, 3},
		{"0", 503, 1},
		{"1", 503, 2},
		{" 5 ", 503, 6},
		{"16", 503, 17},
		{"99", 503, 17},
		{"99999999999999999999", 503, 17}, // more than an int holds: capped all the same
		{"-99999999999999999999", 400, 0},
		{"-1", 400, 0},
		{"two", 400, 0},
		{"1.5", 400, 0},
	} {
		t.Run(fmt.Sprintf("%q", tc.header), func(t *testing.T) {
			down.calls.Store(0)
			var status int
			if tc.header == "" {
				status, _ = tg.get(t, "/x")
			} else {
				status, _ = tg.get(t, "/x", headerRetryMax, tc.header)
			}
			assert.Equal(t, tc.wantStatus, status)
			assert.Equal(t, tc.wantCalls, down.calls.Load(), "upstream calls")
		})
	}
	assert.False(t, down.sawRetryMax.Load(), "X-Retry-Max was forwarded upstream")
}

// TestRoutes: the longest prefix wins; the path, query and a Host header of
// the upstream's go upstream; a path no route has is 404 with no call.
func TestRoutes(t *testing.T) {
	api := newUpstream(t, "api", 200)
	v2 := newUpstream(t, "v2", 200)
	tg := startGateway(t, `{"routes": [
		{"prefix": "/api/", "upstream": %q},
		{"prefix": "/api/v2/", "upstream": %q}
	]}`, api.URL, v2.URL)

	for _, tc := range []struct {
		path, wantBody string
		upstream       *upstream
	}{
		{"/api/x?q=1", "api", api},
		{"/api/v2/y?q=2", "v2", v2},
		{"/api/v2", "api", api},
	} {
		resp, err := tg.srv.Client().Get(tg.srv.URL + tc.path)
		require.NoError(t, err)
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		assert.Equal(t, tc.wantBody, string(body), tc.path)
		path, query, _ := strings.Cut(tc.path, "?")
		assert.Equal(t, fmt.Sprintf("host=%s path=%s query=%s xff=127.0.0.1", tc.upstream.host, path, query), resp.Header.Get("X-Seen"), tc.path)
	}
	assert.Equal(t, int64(2), api.calls.Load())
	assert.Equal(t, int64(1), v2.calls.Load())

	status, _ := tg.get(t, "/other")
	assert.Equal(t, http.StatusNotFound, status)
	assert.Equal(t, int64(3), api.calls.Load()+v2.calls.Load())
}

// TestReloadKeepsBudgets: a reload serves the new policies through a new
// transport, and the upstream's budget window goes on counting where it
// was.
// The window alone: "hold": -1, since the hold (DESIGN point 22) gives an
// upstream's resends up once it failed 4 times in a row.
func TestReloadKeepsBudgets(t *testing.T) {
	down := newUpstream(t, "busy", http.StatusServiceUnavailable)
	const config = `{
		"routes": [{"prefix": "/", "upstream": %q}],
		"retry": {"default": {"maxRetries": %d, "backoff": "none", "budget": {"window": "1h", "hold": -1}}}
	}`
	tg := startGateway(t, config, down.URL, 1)
	for range 3 {
		status, _ := tg.get(t, "/x")
		require.Equal(t, 503, status)
	}
	require.Equal(t, int64(6), down.calls.Load()) // 1 resend each
	s, ok := statsOf(tg.budgets, down.host)
	require.True(t, ok, "no budget for %s", down.host)
	assert.Equal(t, 3, s.Requests)
	assert.Equal(t, 3, s.Retries)

	writeConfig(t, tg.path, config, down.URL, 2)
	require.NoError(t, tg.Reload())
	s, _ = statsOf(tg.budgets, down.host)
	assert.Equal(t, httpretry.BudgetStats{Requests: 3, Retries: 3, Allowance: 0, Credit: 7, Streak: 6}, s, "right after the reload")

	status, _ := tg.get(t, "/x")
	require.Equal(t, 503, status)
	assert.Equal(t, int64(6+3), down.calls.Load(), "the new maxRetries: 2 resends")
	s, _ = statsOf(tg.budgets, down.host)
	assert.Equal(t, 4, s.Requests)
	assert.Equal(t, 5, s.Retries)
	assert.Len(t, tg.logs.with("config loaded"), 2)
}

// TestReloadsShareConnections: ten reloads, each followed by a request,
// open one connection to the upstream in all, since every configuration
// sends through the gateway's one base transport. A transport built over
// a base of its own on each reload would leave a pool behind each time.
func TestReloadsShareConnections(t *testing.T) {
	var dials atomic.Int64
	up := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok")
	}))
	up.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			dials.Add(1)
		}
	}
	up.Start()
	t.Cleanup(up.Close)
	const config = `{
		"routes": [{"prefix": "/", "upstream": %q}],
		"retry": {"default": {"maxRetries": %d}}
	}`
	tg := startGateway(t, config, up.URL, 0)
	for i := range 10 {
		writeConfig(t, tg.path, config, up.URL, 1+i%3)
		require.NoError(t, tg.Reload())
		// Sequential requests, each body read to its end by the proxy
		// before the client sees it: the connection is idle again when
		// the next request starts.
		status, body := tg.get(t, "/x")
		require.Equal(t, 200, status)
		require.Equal(t, "ok", body)
	}
	assert.Len(t, tg.logs.with("config loaded"), 11)
	assert.Equal(t, int64(1), dials.Load(), "connections to the upstream across 10 reloads")
}

// TestReloadFailureKeepsConfig: a file that does not parse is refused with
// every problem named, and the gateway goes on serving the previous one.
func TestReloadFailureKeepsConfig(t *testing.T) {
	ok := newUpstream(t, "ok", 200)
	tg := startGateway(t, `{"routes": [{"prefix": "/", "upstream": %q}]}`, ok.URL)

	writeConfig(t, tg.path, `{
		"routes": [{"prefix": "api", "upstream": "ftp://example.com"}],
		"retry": {"default": {"maxRetries": 20}}
	}`)
	err := tg.Reload()
	require.Error(t, err)
	assert.ErrorIs(t, err, httpretry.ErrInvalidPolicy)
	for _, want := range []string{
		`routes[0].prefix: "api"`,
		`routes[0].upstream: "ftp://example.com"`,
		`default.maxRetries: 20 is outside 0..16`,
	} {
		assert.Contains(t, err.Error(), want)
	}

	status, body := tg.get(t, "/x")
	assert.Equal(t, 200, status)
	assert.Equal(t, "ok", body)
	assert.Len(t, tg.logs.with("config loaded"), 1)
}

// TestParseConfig: the checks of the file's own part, and the sample.
func TestParseConfig(t *testing.T) {
	for _, tc := range []struct{ name, file, want string }{
		{"no routes", `{}`, `routes: none`},
		{"unknown field", `{"routes": [], "retries": {}}`, `unknown field "retries"`},
		{"duplicate prefix", `{"routes": [{"prefix": "/a/", "upstream": "http://a"}, {"prefix": "/a/", "upstream": "http://b"}]}`,
			`routes[1].prefix: "/a/" is an earlier route's too`},
		{"upstream with a path", `{"routes": [{"prefix": "/", "upstream": "http://a/v1"}]}`, `routes[0].upstream: "http://a/v1": want an origin`},
		{"upstream with user info", `{"routes": [{"prefix": "/", "upstream": "http://u:p@a"}]}`, `routes[0].upstream: "http://u:p@a": want an origin`},
		{"bad policy", `{"routes": [{"prefix": "/", "upstream": "http://a"}], "retry": {"hosts": {"a": {"backoff": "often"}}}}`,
			`retry: httpretry: config: hosts["a"].backoff`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseConfig([]byte(tc.file))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.True(t, strings.HasPrefix(err.Error(), "gateway: config: "), err.Error())
		})
	}

	t.Run("without retry: the default policy", func(t *testing.T) {
		cfg, err := parseConfig([]byte(`{"routes": [{"prefix": "/", "upstream": "http://a"}]}`))
		require.NoError(t, err)
		assert.Equal(t, httpretry.DefaultPolicy(), cfg.Retry.Default)
	})

	t.Run("the sample", func(t *testing.T) {
		data, err := os.ReadFile("gateway.json")
		require.NoError(t, err)
		cfg, err := parseConfig(data)
		require.NoError(t, err)
		assert.Len(t, cfg.Routes, 2)
		assert.Equal(t, []string{"http://127.0.0.1:9002"}, cfg.Retry.Hosts["127.0.0.1:9001"].Fallbacks)
		assert.Equal(t, 1, cfg.Retry.Hosts["127.0.0.1:9003"].Hedge.Max)
		assert.Equal(t, 10*time.Second, cfg.Retry.Hosts["127.0.0.1:9003"].Deadline, "a host entry starts from default")
	})
}

// runningGateway is run in a goroutine, as main calls it.
type runningGateway struct {
	url    string // "http://127.0.0.1:port"
	logs   *logRecords
	client *http.Client
	cancel context.CancelFunc
	done   chan error
}

// startRun runs the gateway on 127.0.0.1:0 with the configuration file at
// path and the flags given, and waits until it listens.
func startRun(t *testing.T, path string, flags ...string) *runningGateway {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	rg := &runningGateway{logs: newLogRecords(), client: &http.Client{Transport: &http.Transport{}}, cancel: cancel, done: make(chan error, 1)}
	args := append([]string{"-config", path, "-listen", "127.0.0.1:0", "-log-level", "DEBUG"}, flags...)
	go func() { rg.done <- run(ctx, args, rg.logs) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-rg.done:
		case <-time.After(waitBound):
			t.Error("run did not return after its context ended")
		}
		rg.client.CloseIdleConnections()
	})
	addr, ok := rg.logs.wait(t, "listening", 1)["addr"].(string)
	require.True(t, ok, "listening without an addr")
	rg.url = "http://" + addr
	return rg
}

// get sends a GET and returns the status and body.
func (rg *runningGateway) get(t *testing.T, path string) (int, string) {
	t.Helper()
	resp, err := rg.client.Get(rg.url + path)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(body)
}

// budgetVars reads the budgets published at /debug/vars.
func (rg *runningGateway) budgetVars(t *testing.T) map[string]httpretry.BudgetStats {
	t.Helper()
	status, body := rg.get(t, "/debug/vars")
	require.Equal(t, 200, status)
	var vars struct {
		Httpretry map[string]httpretry.BudgetStats `json:"httpretry"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &vars), body)
	return vars.Httpretry
}

// stop ends run as SIGINT would and returns what run returned.
func (rg *runningGateway) stop(t *testing.T) error {
	t.Helper()
	rg.cancel()
	select {
	case err := <-rg.done:
		rg.done <- err // for the cleanup
		return err
	case <-time.After(waitBound):
		require.FailNow(t, "run did not return after its context ended")
		return nil
	}
}

// TestRun: the program as main runs it: the file polled and reloaded, a
// broken file refused, the budgets at /debug/vars across reloads, and a
// shutdown that lets the request under way finish.
func TestRun(t *testing.T) {
	one := newUpstream(t, "one", 200)
	two := newUpstream(t, "two", 200)
	called, release := make(chan struct{}), make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(called)
		<-release
		io.WriteString(w, "slow")
	}))
	t.Cleanup(slow.Close)
	const config = `{"routes": [{"prefix": "/api/", "upstream": %q}, {"prefix": "/slow/", "upstream": %q}]}`
	path := filepath.Join(t.TempDir(), "gateway.json")
	writeConfig(t, path, config, one.URL, slow.URL)
	rg := startRun(t, path, "-poll", "10ms")

	_, body := rg.get(t, "/api/x")
	assert.Equal(t, "one", body)
	assert.Equal(t, 1, rg.budgetVars(t)[one.host].Requests)

	writeConfig(t, path, config, two.URL, slow.URL)
	rg.logs.wait(t, "config loaded", 2)
	_, body = rg.get(t, "/api/x")
	assert.Equal(t, "two", body)
	vars := rg.budgetVars(t)
	assert.Equal(t, 1, vars[one.host].Requests, "one's window after the reload")
	assert.Equal(t, 1, vars[two.host].Requests)

	writeConfig(t, path, `{"routes": []}`)
	failed := rg.logs.wait(t, "config reload failed; serving the previous one", 1)
	assert.Contains(t, failed["error"], "routes: none")
	_, body = rg.get(t, "/api/x")
	assert.Equal(t, "two", body)

	type result struct {
		status int
		body   string
	}
	slowDone := make(chan result, 1)
	go func() {
		resp, err := rg.client.Get(rg.url + "/slow/")
		if err != nil {
			slowDone <- result{body: err.Error()}
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		slowDone <- result{resp.StatusCode, string(b)}
	}()
	<-called
	rg.cancel()
	rg.logs.wait(t, "shutting down", 1)
	close(release)
	assert.Equal(t, result{200, "slow"}, <-slowDone)
	assert.NoError(t, rg.stop(t))
}

// TestRunFlags: a bad command line or a bad file ends run at once with an
// error that says why.
func TestRunFlags(t *testing.T) {
	var stderr strings.Builder
	err := run(context.Background(), []string{"-poll", "often"}, &stderr)
	assert.ErrorIs(t, err, errUsage)
	assert.Contains(t, stderr.String(), `invalid value "often" for flag -poll`)

	err = run(context.Background(), []string{"-config", filepath.Join(t.TempDir(), "missing.json")}, io.Discard)
	assert.ErrorContains(t, err, "gateway: open ")
}

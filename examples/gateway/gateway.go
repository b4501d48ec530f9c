package main

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httputil"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-cleanhttp"
	"github.com/httpretry/httpretry"
)

// headerRetryMax is the request header that lowers or raises the resends
// of one request, up to httpretry.MaxRetriesLimit. It is not forwarded.
const headerRetryMax = "X-Retry-Max"

// gateway is a reverse proxy whose routes and retry policies come from a
// configuration file, reloaded while it serves. It is an http.Handler, safe
// for concurrent use; Reload may be called at any time.
type gateway struct {
	path    string
	log     *slog.Logger
	budgets *httpretry.Budgets
	// base carries every configuration's requests, so that connections to
	// the upstreams outlive reloads.
	base *http.Transport

	mu    sync.Mutex // serialises reloads
	stamp fileStamp  // of the file last read, under mu
	table atomic.Pointer[routeTable]
}

// routeTable is one configuration as the gateway serves it: its routes,
// longest prefix first, all sending through one httpretry transport.
type routeTable struct {
	routes []proxyRoute
}

type proxyRoute struct {
	prefix string
	proxy  *httputil.ReverseProxy
}

// fileStamp tells whether a file changed since it was read.
type fileStamp struct {
	mod  time.Time
	size int64
}

// newGateway loads the configuration at path. Every transport it builds
// shares budgets, so a host's budget counts survive reloads.
func newGateway(path string, budgets *httpretry.Budgets, log *slog.Logger) (*gateway, error) {
	g := &gateway{path: path, log: log, budgets: budgets, base: cleanhttp.DefaultPooledTransport()}
	if err := g.Reload(); err != nil {
		return nil, err
	}
	return g, nil
}

// Reload reads the configuration file again and serves it from the next
// request on; requests under way finish under the old one. When the file
// cannot be read or is invalid, the old configuration stays and the error
// says why.
func (g *gateway) Reload() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	// Stat before reading: a write that lands in between makes the stamp
	// older than the contents, so the next poll reads the file again
	// rather than missing the change.
	if fi, err := os.Stat(g.path); err == nil {
		g.stamp = fileStamp{fi.ModTime(), fi.Size()}
	}
	data, err := os.ReadFile(g.path)
	if err != nil {
		return fmt.Errorf("gateway: %w", err)
	}
	cfg, err := parseConfig(data)
	if err != nil {
		return err
	}
	g.table.Store(g.build(cfg))
	g.log.Info("config loaded", "file", g.path, "routes", len(cfg.Routes))
	return nil
}

// reloadIfChanged reloads the file when its modification time or size
// differs from those of the last read, whether that read succeeded or not,
// so that a broken file is reported once, not on every poll.
func (g *gateway) reloadIfChanged() (changed bool, err error) {
	fi, err := os.Stat(g.path)
	if err != nil {
		return false, fmt.Errorf("gateway: %w", err)
	}
	g.mu.Lock()
	changed = g.stamp != fileStamp{fi.ModTime(), fi.Size()}
	g.mu.Unlock()
	if !changed {
		return false, nil
	}
	return true, g.Reload()
}

// build makes the routes of cfg, all sending through one new transport
// over the shared base and budgets.
func (g *gateway) build(cfg fileConfig) *routeTable {
	opts := append(cfg.Retry.Options(), httpretry.WithBudgets(g.budgets), httpretry.WithLogger(g.log))
	rt := httpretry.New(g.base, opts...)
	// For what the proxy reports beside proxyError, such as a copy of a
	// response body cut short.
	errorLog := slog.NewLogLogger(g.log.Handler(), slog.LevelWarn)
	t := &routeTable{}
	for _, r := range cfg.Routes {
		target, _ := parseOrigin(r.Upstream) // parseConfig checked it
		t.routes = append(t.routes, proxyRoute{prefix: r.Prefix, proxy: &httputil.ReverseProxy{
			Rewrite: func(pr *httputil.ProxyRequest) {
				pr.SetURL(target)
				pr.SetXForwarded()
				pr.Out.Header.Del(headerRetryMax)
			},
			Transport:    rt,
			ErrorHandler: g.proxyError,
			ErrorLog:     errorLog,
		}})
	}
	slices.SortFunc(t.routes, func(a, b proxyRoute) int { return cmp.Compare(len(b.prefix), len(a.prefix)) })
	return t
}

// ServeHTTP sends r to the upstream of the longest prefix of its path,
// with the resends X-Retry-Max asks for.
func (g *gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n, set, err := retryMax(r.Header)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	route := g.table.Load().match(r.URL.Path)
	if route == nil {
		http.NotFound(w, r)
		return
	}
	if set {
		r = r.WithContext(httpretry.WithMaxRetries(r.Context(), n))
	}
	route.proxy.ServeHTTP(w, r)
}

// match returns the route of path, nil when none matches.
func (t *routeTable) match(path string) *proxyRoute {
	for i := range t.routes {
		if strings.HasPrefix(path, t.routes[i].prefix) {
			return &t.routes[i]
		}
	}
	return nil
}

// retryMax reads X-Retry-Max: a whole number of resends, capped at
// httpretry.MaxRetriesLimit, however many digits it has; set is false when
// the header is absent.
func retryMax(h http.Header) (n int, set bool, err error) {
	v := h.Get(headerRetryMax)
	if v == "" {
		return 0, false, nil
	}
	n, err = strconv.Atoi(strings.TrimSpace(v))
	if errors.Is(err, strconv.ErrRange) && n > 0 {
		err = nil // too large for an int, so above the cap: Atoi gave the largest int
	}
	if err != nil || n < 0 {
		return 0, false, fmt.Errorf("gateway: %s: %q: want a whole number of resends, 0 or more", headerRetryMax, v)
	}
	return min(n, httpretry.MaxRetriesLimit), true, nil
}

// proxyError answers 502 when no upstream gave a response; httpretry has
// already logged its give-up, if it gave up, with the reason.
func (g *gateway) proxyError(w http.ResponseWriter, r *http.Request, err error) {
	level := slog.LevelWarn
	if r.Context().Err() != nil {
		level = slog.LevelDebug // the client went away: nothing to fix upstream
	}
	g.log.Log(r.Context(), level, "proxy error", "method", r.Method, "path", r.URL.Path, "error", err.Error())
	w.WriteHeader(http.StatusBadGateway)
}

// Close closes the idle connections to the upstreams.
func (g *gateway) Close() { g.base.CloseIdleConnections() }

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/httpretry/httpretry"
)

// fileConfig is the gateway's configuration file: the routes, and the
// retry policies in httpretry's own format, with a host entry per upstream
// that needs its own policy:
//
//	{"routes": [{"prefix": "/api/", "upstream": "http://10.0.0.5:8080"}],
//	 "retry": {"default": {"maxRetries": 2},
//	           "hosts": {"10.0.0.5:8080": {"fallbacks": ["http://10.0.0.6:8080"]}}}}
type fileConfig struct {
	Routes []route          `json:"routes"`
	Retry  httpretry.Config `json:"retry"`
}

// route sends the requests whose path starts with Prefix to Upstream, an
// origin, path unchanged.
type route struct {
	Prefix   string `json:"prefix"`
	Upstream string `json:"upstream"`
}

// parseConfig reads and checks a configuration file. A file without
// "retry" gets httpretry's default policy for every upstream. The error
// names every problem of the file, each under its JSON path, except that
// JSON that does not fit fileConfig (a syntax error, an unknown field) is
// reported alone.
func parseConfig(data []byte) (fileConfig, error) {
	// Retry is read apart, so that the error names the problems of the
	// routes and those of the policies together.
	var raw struct {
		Routes []route         `json:"routes"`
		Retry  json.RawMessage `json:"retry"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&raw); err != nil {
		return fileConfig{}, fmt.Errorf("gateway: config: %w", err)
	}
	problems := routeProblems(raw.Routes)
	// A file without "retry" leaves the zero Config, whose Options leave
	// New's default policy in place; seeded with it all the same, so that
	// cfg.Retry says what applies.
	cfg := fileConfig{Routes: raw.Routes, Retry: httpretry.Config{Default: httpretry.DefaultPolicy()}}
	var retryErr error
	if raw.Retry != nil {
		retryErr = cfg.Retry.UnmarshalJSON(raw.Retry)
	}
	switch {
	case retryErr != nil && problems != nil:
		return fileConfig{}, fmt.Errorf("gateway: config: %s; retry: %w", strings.Join(problems, "; "), retryErr)
	case retryErr != nil:
		return fileConfig{}, fmt.Errorf("gateway: config: retry: %w", retryErr)
	case problems != nil:
		return fileConfig{}, fmt.Errorf("gateway: config: %s", strings.Join(problems, "; "))
	}
	return cfg, nil
}

// routeProblems lists what is wrong with routes, each under its JSON path.
func routeProblems(routes []route) []string {
	var problems []string
	if len(routes) == 0 {
		problems = append(problems, "routes: none; want at least one")
	}
	for i, r := range routes {
		path := fmt.Sprintf("routes[%d]", i)
		switch {
		case !strings.HasPrefix(r.Prefix, "/"):
			problems = append(problems, fmt.Sprintf("%s.prefix: %q: want a path such as \"/api/\"", path, r.Prefix))
		case slices.ContainsFunc(routes[:i], func(e route) bool { return e.Prefix == r.Prefix }):
			problems = append(problems, fmt.Sprintf("%s.prefix: %q is an earlier route's too", path, r.Prefix))
		}
		if _, err := parseOrigin(r.Upstream); err != nil {
			problems = append(problems, fmt.Sprintf("%s.upstream: %v", path, err))
		}
	}
	return problems
}

// parseOrigin parses an upstream: a scheme, http or https, and a host with
// an optional port, as httpretry's fallbacks are written.
func parseOrigin(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("%q: %w", s, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
		(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("%q: want an origin such as \"http://10.0.0.5:8080\"", s)
	}
	u.Path = ""
	return u, nil
}

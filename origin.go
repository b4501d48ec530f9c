package httpretry

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
)

// origin is where a request goes: a scheme, http or https, and a host in
// URL.Host form, canonical: lower case, an IPv6 address in brackets, and no
// port when it is the scheme's default. Two origins that name the same
// server are equal, so == finds duplicates.
type origin struct{ scheme, host string }

// String is o as "scheme://host[:port]".
func (o origin) String() string { return o.scheme + "://" + o.host }

// originOf is the origin a URL points at, in canonical form.
func originOf(u *url.URL) origin {
	scheme := strings.ToLower(u.Scheme)
	return origin{scheme, joinHost(scheme, u.Hostname(), u.Port())}
}

// originError says why a string is not an origin.
type originError struct{ origin, why string }

func (e *originError) Error() string {
	return fmt.Sprintf("httpretry: origin %q: %s", e.origin, e.why)
}

// parseOrigin parses an origin as Policy.Fallbacks and WithFallbacks take
// it: a scheme, http or https, and a host with an optional port, as in
// "https://backup.example.com" or "http://10.0.0.7:8080". One trailing "/"
// is allowed, since URLs are often copied with one, and means nothing.
// Anything else is an *originError: no scheme or another one, user info, a
// path, a query, a fragment, no host, a port outside 1..65535. An error
// never quotes user info.
func parseOrigin(s string) (origin, error) {
	fail := func(why string) (origin, error) { return origin{}, &originError{s, why} }
	scheme, rest, ok := strings.Cut(s, "://")
	switch scheme = strings.ToLower(scheme); {
	case !ok:
		return fail(`want "http://" or "https://" and a host`)
	case scheme != "http" && scheme != "https":
		return fail(fmt.Sprintf("scheme %q is not http or https", scheme))
	}
	authority := rest
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		authority = rest[:i]
	}
	if i := strings.LastIndexByte(authority, '@'); i >= 0 {
		// Checked before parsing, so that no error quotes a password.
		masked := s[:len(s)-len(rest)] + "xxxxx" + rest[i:]
		return origin{}, &originError{masked, "an origin has no user info"}
	}
	// net/url accepts both in places where an origin has neither.
	if strings.ContainsRune(s, '?') {
		return fail("an origin has no query")
	}
	if strings.ContainsRune(s, '#') {
		return fail("an origin has no fragment")
	}
	u, err := url.Parse(s)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fail(err.Error())
	}
	switch {
	case u.Path != "" && u.Path != "/":
		return fail(fmt.Sprintf("an origin has no path, not %q", u.Path))
	case u.Hostname() == "":
		return fail("no host")
	}
	port := u.Port()
	if port != "" || strings.HasSuffix(u.Host, ":") {
		if !validPort(port) {
			return fail(fmt.Sprintf("bad port %q", port))
		}
	}
	return origin{scheme, joinHost(scheme, u.Hostname(), port)}, nil
}

// joinHost is a host name and port in canonical URL.Host form: lower case,
// brackets around an IPv6 address, no port when it is the scheme's default.
func joinHost(scheme, name, port string) string {
	name = strings.ToLower(name)
	if strings.Contains(name, ":") {
		name = "[" + name + "]"
	}
	if port == "" || port == defaultPort(scheme) {
		return name
	}
	return name + ":" + port
}

// validPort reports whether p is a port number, 1 to 65535.
func validPort(p string) bool {
	n, err := strconv.ParseUint(p, 10, 16)
	return err == nil && n > 0
}

// portOf is u's port, or its scheme's default port.
func portOf(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	return defaultPort(u.Scheme)
}

func defaultPort(scheme string) string {
	switch strings.ToLower(scheme) {
	case "https", "wss":
		return "443"
	case "http", "ws":
		return "80"
	}
	return ""
}

// splitHostRule parses WithHostPolicy's host: "name", "name:port",
// "[v6]:port", "v6" or "[v6]". The name is in lower case and without
// brackets, as policyTable.lookup compares it with URL.Hostname. The error
// says what is wrong, for the caller to say where.
func splitHostRule(host string) (name, port string, err error) {
	fail := func(why string) (string, string, error) { return "", "", errors.New(why) }
	if host == "" || strings.ContainsFunc(host, func(r rune) bool { return r <= ' ' || r == 0x7f || r == '/' }) {
		return fail("want a host or host:port, with no scheme or path")
	}
	if h, p, err := net.SplitHostPort(host); err == nil {
		if !validPort(p) {
			return fail(fmt.Sprintf("bad port %q", p))
		}
		if h == "" {
			return fail("want a host or host:port")
		}
		return strings.ToLower(h), p, nil
	}
	name = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if name == "" || strings.Contains(name, ":") && net.ParseIP(name) == nil {
		return fail("want a host or host:port")
	}
	return strings.ToLower(name), "", nil
}

// canonicalHost is a URL.Host as Budgets keys it: in lower case, without
// :443 or :80, since a budget key has no scheme to tell which port is the
// default one; a bare IPv6 address ("::443") has no port to drop.
func canonicalHost(host string) string {
	host = strings.ToLower(host)
	for _, port := range [...]string{":443", ":80"} {
		if h, ok := strings.CutSuffix(host, port); ok && h != "" && h[len(h)-1] != ':' {
			return h
		}
	}
	return host
}

package httpretry

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
)

// origin is where a request goes: a scheme and a host in the one form the
// package keys, looks up and reports origins by (see canonicalHost). Two
// origins that name the same server are equal, so == finds duplicates;
// host is the key of the origin's budget.
type origin struct{ scheme, host string }

// String is o as "scheme://host[:port]", as Event.Origin reports it.
func (o origin) String() string { return o.scheme + "://" + o.host }

// originOf is the origin a URL points at, in canonical form. It costs no
// allocation when the URL spells it canonically, or with a default port
// after a lower-case name.
func originOf(u *url.URL) origin {
	scheme := u.Scheme
	if scheme != "http" && scheme != "https" {
		scheme = strings.ToLower(scheme)
	}
	return origin{scheme, canonicalHost(scheme, u.Host)}
}

// canonicalHost is host, a URL.Host, in the one form of an origin's host:
// the name in lower case, an IPv6 address in brackets, the port in plain
// decimal and dropped when it is scheme's default (http 80, https 443). So
// https://h:80 is "h:80" and https://h is "h", while http://h:80 and
// http://h are both "h".
func canonicalHost(scheme, host string) string {
	if h, ok := plainHost(scheme, host); ok {
		return h
	}
	name, port, _ := splitHost(host)
	if port = decimalPort(port); port == defaultPort(scheme) {
		port = ""
	}
	return joinHost(strings.ToLower(name), port)
}

// plainHost is canonicalHost for the spelling nearly every URL has, a
// lower-case name and at most a port, in one pass and with no copy: host
// itself, or its name alone when the port is the default. ok is false for
// any other spelling.
func plainHost(scheme, host string) (h string, ok bool) {
	colon := -1
	for i := 0; i < len(host); i++ {
		if !plainByte[host[i]] {
			if host[i] != ':' || colon >= 0 {
				return "", false
			}
			colon = i
		}
	}
	if colon < 0 {
		return host, true
	}
	switch port := host[colon+1:]; {
	case port == "", port == defaultPort(scheme):
		return host[:colon], true
	case port[0] != '0' && decimalPort(port) == port:
		return host, true
	}
	return "", false
}

// plainByte holds the bytes plainHost passes over: ASCII, but no
// upper-case letter, bracket or colon. One load a byte halves the cost of
// comparing each byte with each of them (16 ns against 30 to 40 ns for
// "api.example.com").
var plainByte = func() (t [256]bool) {
	for c := range 0x80 {
		t[c] = !('A' <= c && c <= 'Z') && c != '[' && c != ']' && c != ':'
	}
	return t
}()

// joinHost is a lower-case host name and a port, "" for none, as
// URL.Host writes them: an IPv6 address in brackets.
func joinHost(name, port string) string {
	if strings.Contains(name, ":") {
		name = "[" + name + "]"
	}
	if port == "" {
		return name
	}
	return name + ":" + port
}

// splitHost splits a URL.Host, or a host rule, into its name, without
// brackets, and its port; hasPort reports a colon before the port, which
// may be empty. A name with more than one colon and no brackets is a bare
// IPv6 address, with no port.
func splitHost(host string) (name, port string, hasPort bool) {
	if strings.HasPrefix(host, "[") {
		if i := strings.IndexByte(host, ']'); i > 0 {
			switch rest := host[i+1:]; {
			case rest == "":
				return host[1:i], "", false
			case rest[0] == ':':
				return host[1:i], rest[1:], true
			}
		}
		return host, "", false // not a host: compared as it is
	}
	i := strings.LastIndexByte(host, ':')
	if i < 0 || strings.IndexByte(host[:i], ':') >= 0 {
		return host, "", false
	}
	return host[:i], host[i+1:], true
}

// decimalPort is p without leading zeros, the port net/http dials for it:
// "08080" is 8080. A p that is not all digits is returned as it is.
func decimalPort(p string) string {
	for i := 0; i < len(p); i++ {
		if p[i] < '0' || p[i] > '9' {
			return p
		}
	}
	for len(p) > 1 && p[0] == '0' {
		p = p[1:]
	}
	return p
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
// path, a query, a fragment, no host, a port that is not 1..65535 in plain
// decimal. An error never quotes user info.
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
	if _, port, hasPort := splitHost(u.Host); hasPort && !validPort(port) {
		return fail(fmt.Sprintf("bad port %q", port))
	}
	return origin{scheme, canonicalHost(scheme, u.Host)}, nil
}

// validPort reports whether p is a port as configuration must write it:
// 1 to 65535 in plain decimal, with no sign and no leading zero, so that
// one port has one spelling.
func validPort(p string) bool {
	n, err := strconv.ParseUint(p, 10, 16)
	return err == nil && n > 0 && p[0] != '0'
}

// defaultPort is the port a URL of scheme, in lower case, means when it
// names none.
func defaultPort(scheme string) string {
	switch scheme {
	case "https", "wss":
		return "443"
	case "http", "ws":
		return "80"
	}
	return ""
}

// splitHostRule parses WithHostPolicy's host: "name", "name:port",
// "[v6]:port", "v6" or "[v6]". The name is in lower case and without
// brackets, as policyTable.lookup finds it in an origin's host. The error
// says what is wrong, for the caller to say where.
func splitHostRule(host string) (name, port string, err error) {
	fail := func(why string) (string, string, error) { return "", "", errors.New(why) }
	if host == "" || strings.ContainsFunc(host, func(r rune) bool { return r <= ' ' || r == 0x7f || r == '/' }) {
		return fail("want a host or host:port, with no scheme or path")
	}
	name, port, hasPort := splitHost(host)
	if hasPort && !validPort(port) {
		return fail(fmt.Sprintf("bad port %q", port))
	}
	if name == "" || strings.ContainsAny(name, "[]") ||
		strings.Contains(name, ":") && net.ParseIP(name) == nil {
		return fail("want a host or host:port")
	}
	return strings.ToLower(name), port, nil
}

package httpretry

import (
	"errors"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseOrigin(t *testing.T) {
	tests := []struct {
		in   string
		want string // canonical, or "" when in is rejected
		why  string // the reason, when rejected
	}{
		{in: "https://backup.example.com", want: "https://backup.example.com"},
		{in: "https://backup.example.com/", want: "https://backup.example.com"},
		{in: "http://10.0.0.7:8080", want: "http://10.0.0.7:8080"},
		{in: "HTTPS://Backup.Example.COM", want: "https://backup.example.com"},
		{in: "https://backup.example.com:443", want: "https://backup.example.com"},
		{in: "http://backup.example.com:80/", want: "http://backup.example.com"},
		{in: "http://backup.example.com:443", want: "http://backup.example.com:443"},
		{in: "https://backup.example.com:80", want: "https://backup.example.com:80"},
		{in: "https://[::1]:8443", want: "https://[::1]:8443"},
		{in: "https://[FE80::1]:443", want: "https://[fe80::1]"},
		{in: "http://[::1]", want: "http://[::1]"},
		{in: "http://localhost:65535", want: "http://localhost:65535"},

		{in: "", why: `want "http://" or "https://" and a host`},
		{in: "backup.example.com", why: `want "http://" or "https://" and a host`},
		{in: "backup.example.com:8080", why: `want "http://" or "https://" and a host`},
		{in: "//backup.example.com", why: `want "http://" or "https://" and a host`},
		{in: "://backup.example.com", why: `scheme "" is not http or https`},
		{in: "ftp://x", why: `scheme "ftp" is not http or https`},
		{in: "wss://x", why: `scheme "wss" is not http or https`},
		{in: " https://x", why: `scheme " https" is not http or https`},
		{in: "https://", why: "no host"},
		{in: "https:///path", why: `an origin has no path, not "/path"`},
		{in: "https://:8443", why: "no host"},
		{in: "https://x/v1", why: `an origin has no path, not "/v1"`},
		{in: "https://x//", why: `an origin has no path, not "//"`},
		{in: "https://x?a=1", why: "an origin has no query"},
		{in: "https://x/?", why: "an origin has no query"},
		{in: "https://x#top", why: "an origin has no fragment"},
		{in: "https://x#", why: "an origin has no fragment"},
		{in: "https://x:0", why: `bad port "0"`},
		{in: "https://x:65536", why: `bad port "65536"`},
		{in: "https://x:", why: `bad port ""`},
		{in: "https://x:abc", why: `invalid port ":abc" after host`},
		{in: "https://x:0443", why: `bad port "0443"`},
		{in: "http://x:08080", why: `bad port "08080"`},
		{in: "http://x:00", why: `bad port "00"`},
		{in: "http://x:+80", why: `invalid port ":+80" after host`},
		{in: "https://x y", why: `invalid character " " in host name`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			o, err := parseOrigin(tt.in)
			if tt.want != "" {
				require.NoError(t, err)
				assert.Equal(t, tt.want, o.String())
				again, err := parseOrigin(o.String())
				require.NoError(t, err)
				assert.Equal(t, o, again, "the canonical form parses to itself")
				return
			}
			require.Error(t, err)
			assert.Zero(t, o)
			var oe *originError
			require.True(t, errors.As(err, &oe))
			assert.Equal(t, tt.in, oe.origin)
			assert.Equal(t, tt.why, oe.why)
			assert.Equal(t, `httpretry: origin "`+tt.in+`": `+tt.why, err.Error())
		})
	}
}

func TestParseOriginUserInfo(t *testing.T) {
	for _, in := range []string{"https://alice:s3cret@x", "https://alice:s3cret@x:bad/p?q#f", "https://s3cret@x", "http://a@b@x/"} {
		_, err := parseOrigin(in)
		require.Error(t, err, in)
		assert.Contains(t, err.Error(), "an origin has no user info")
		assert.NotContains(t, err.Error(), "s3cret")
		assert.NotContains(t, err.Error(), "alice")
	}
	_, err := parseOrigin("https://alice:s3cret@x")
	assert.EqualError(t, err, `httpretry: origin "https://xxxxx@x": an origin has no user info`)
}

func TestOriginDuplicates(t *testing.T) {
	same := []string{"https://api.example.com", "HTTPS://API.example.com:443/", "https://Api.Example.Com/"}
	first, err := parseOrigin(same[0])
	require.NoError(t, err)
	for _, s := range same[1:] {
		o, err := parseOrigin(s)
		require.NoError(t, err)
		assert.Equal(t, first, o, s)
	}
	for _, s := range []string{"http://api.example.com", "https://api.example.com:8443", "https://api.example.org"} {
		o, err := parseOrigin(s)
		require.NoError(t, err)
		assert.NotEqual(t, first, o, s)
	}
}

func TestOriginOf(t *testing.T) {
	tests := []struct{ url, want string }{
		{"https://api.example.com/v1/x?q=1", "https://api.example.com"},
		{"https://API.Example.com:443/", "https://api.example.com"},
		{"http://api.example.com:80", "http://api.example.com"},
		{"http://api.example.com:443", "http://api.example.com:443"},
		{"https://api.example.com:8443/#f", "https://api.example.com:8443"},
		{"http://user:pw@10.0.0.7:8080/", "http://10.0.0.7:8080"},
		{"https://[::1]:443/", "https://[::1]"},
		{"http://[FE80::1]:8080", "http://[fe80::1]:8080"},
		{"https://api.example.com:80", "https://api.example.com:80"},
		{"http://api.example.com:08080", "http://api.example.com:8080"},
		{"https://api.example.com:0443", "https://api.example.com"},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			u, err := url.Parse(tt.url)
			require.NoError(t, err)
			o := originOf(u)
			assert.Equal(t, tt.want, o.String())
			parsed, err := parseOrigin(tt.want)
			require.NoError(t, err)
			assert.Equal(t, parsed, o, "a request's origin equals the same origin in Fallbacks")
		})
	}
	assert.Equal(t, origin{"https", "x"}, originOf(&url.URL{Scheme: "HTTPS", Host: "X:443"}))
}

// TestCanonicalHost: one form for every spelling of a host, with only the
// scheme's own default port dropped.
func TestCanonicalHost(t *testing.T) {
	tests := []struct{ scheme, host, want string }{
		{"https", "h", "h"},
		{"https", "h:443", "h"},
		{"https", "h:0443", "h"},
		{"https", "h:80", "h:80"},
		{"http", "h:80", "h"},
		{"http", "h:443", "h:443"},
		{"http", "h:", "h"},
		{"http", "h:08080", "h:8080"},
		{"http", "h:0", "h:0"},
		{"http", "h:000", "h:0"},
		{"http", "H.Example.COM:8080", "h.example.com:8080"},
		{"http", "BÜCHER.example", "bücher.example"},
		{"https", "[::1]:443", "[::1]"},
		{"https", "[FE80::1]", "[fe80::1]"},
		{"http", "[::1]:08080", "[::1]:8080"},
		{"http", "::1", "[::1]"}, // no brackets: all of it is the address
		{"http", "2001:db8::80", "[2001:db8::80]"},
		{"ftp", "h:21", "h:21"},
		{"", "h:443", "h:443"},
	}
	for _, tt := range tests {
		t.Run(tt.scheme+"://"+tt.host, func(t *testing.T) {
			got := canonicalHost(tt.scheme, tt.host)
			assert.Equal(t, tt.want, got)
			assert.Equal(t, got, canonicalHost(tt.scheme, got), "the canonical form is its own")
		})
	}
}

func TestSplitHost(t *testing.T) {
	tests := []struct {
		host, name, port string
		hasPort          bool
	}{
		{"h", "h", "", false},
		{"h:80", "h", "80", true},
		{"h:", "h", "", true},
		{"[::1]", "::1", "", false},
		{"[::1]:80", "::1", "80", true},
		{"[::1]:", "::1", "", true},
		{"::1", "::1", "", false},
		{"[::1]x", "[::1]x", "", false},
		{"[", "[", "", false},
		{"", "", "", false},
	}
	for _, tt := range tests {
		name, port, hasPort := splitHost(tt.host)
		assert.Equal(t, []any{tt.name, tt.port, tt.hasPort}, []any{name, port, hasPort}, tt.host)
	}
}

func TestSplitHostRule(t *testing.T) {
	tests := []struct {
		host     string
		name     string
		port     string
		wantErr  bool
		errMatch string // the reason; New and ParseConfig say where
	}{
		{host: "api.example.com", name: "api.example.com"},
		{host: "API.example.com:8443", name: "api.example.com", port: "8443"},
		{host: "127.0.0.1", name: "127.0.0.1"},
		{host: "127.0.0.1:80", name: "127.0.0.1", port: "80"},
		{host: "[::1]:8080", name: "::1", port: "8080"},
		{host: "::1", name: "::1"},
		{host: "[::1]", name: "::1"},
		{host: "[FE80::1]:443", name: "fe80::1", port: "443"},
		{host: "2001:DB8::1", name: "2001:db8::1"},
		{host: "", wantErr: true, errMatch: `want a host or host:port, with no scheme or path`},
		{host: "http://x", wantErr: true, errMatch: `want a host or host:port, with no scheme or path`},
		{host: "x/y", wantErr: true, errMatch: `want a host or host:port, with no scheme or path`},
		{host: "x y", wantErr: true, errMatch: `want a host or host:port, with no scheme or path`},
		{host: "x\x00", wantErr: true, errMatch: `want a host or host:port, with no scheme or path`},
		{host: "x\n", wantErr: true, errMatch: `want a host or host:port, with no scheme or path`},
		{host: "x:abc", wantErr: true, errMatch: `bad port "abc"`},
		{host: "x:", wantErr: true, errMatch: `bad port ""`},
		{host: "x:-1", wantErr: true, errMatch: `bad port "-1"`},
		{host: "x:+443", wantErr: true, errMatch: `bad port "+443"`},
		{host: "127.0.0.1:08080", wantErr: true, errMatch: `bad port "08080"`},
		{host: "h:0443", wantErr: true, errMatch: `bad port "0443"`},
		{host: "[::1]:080", wantErr: true, errMatch: `bad port "080"`},
		{host: "x]", wantErr: true, errMatch: `want a host or host:port`},
		{host: "[::1]:", wantErr: true, errMatch: `bad port ""`},
		{host: "a:b:c", wantErr: true, errMatch: `want a host or host:port`},
		{host: "[a:b:c]", wantErr: true, errMatch: `want a host or host:port`},
		{host: ":8080", wantErr: true, errMatch: `want a host or host:port`},
		{host: "[]", wantErr: true, errMatch: "want a host or host:port"},
	}
	for _, tt := range tests {
		t.Run(tt.host, func(t *testing.T) {
			name, port, err := splitHostRule(tt.host)
			if tt.wantErr {
				require.Error(t, err)
				assert.Equal(t, tt.errMatch, err.Error())
				assert.Empty(t, name)
				assert.Empty(t, port)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.name, name)
			assert.Equal(t, tt.port, port)
		})
	}
}

func TestHostRulePortMustBeAPort(t *testing.T) {
	for _, host := range []string{"x:99999", "x:0", "x:-1", "x:", "x:00", "x:01", "x:+1"} {
		_, _, err := splitHostRule(host)
		assert.Error(t, err, host)
	}
	_, port, err := splitHostRule("x:65535")
	require.NoError(t, err)
	assert.Equal(t, "65535", port)
}

package httpretry

import (
	"net/http"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestIdempotentMethod(t *testing.T) {
	tests := []struct {
		method     string
		idempotent bool
		keyable    bool
	}{
		{"", true, false}, // net/http: "" means GET
		{http.MethodGet, true, false},
		{http.MethodHead, true, false},
		{http.MethodOptions, true, false},
		{http.MethodTrace, true, false},
		{http.MethodPut, true, false},
		{http.MethodDelete, true, false},
		{http.MethodPost, false, true},
		{http.MethodPatch, false, true},
		{http.MethodConnect, false, false},
		{"PROPFIND", false, false},
		{"get", false, false}, // methods are case-sensitive (RFC 9110 §9.1)
		{"post", false, false},
	}
	for _, tt := range tests {
		t.Run("method "+tt.method, func(t *testing.T) {
			assert.Equal(t, tt.idempotent, idempotentMethod(tt.method))
			assert.Equal(t, tt.keyable, keyable(tt.method))
		})
	}
}

func TestResendable(t *testing.T) {
	custom := resolvePolicy(Policy{MaxRetries: 1, IdempotencyHeader: "x-request-token"}).idemHeaders
	require.Equal(t, []string{"X-Request-Token"}, custom)

	tests := []struct {
		name   string
		method string
		header http.Header
		names  []string
		want   bool
	}{
		{"GET", http.MethodGet, nil, defaultIdempotencyHeaders, true},
		{"empty method", "", nil, defaultIdempotencyHeaders, true},
		{"PUT", http.MethodPut, nil, defaultIdempotencyHeaders, true},
		{"DELETE", http.MethodDelete, nil, defaultIdempotencyHeaders, true},
		{"POST", http.MethodPost, nil, defaultIdempotencyHeaders, false},
		{"PATCH", http.MethodPatch, nil, defaultIdempotencyHeaders, false},
		{"CONNECT", http.MethodConnect, nil, defaultIdempotencyHeaders, false},
		{"POST with Idempotency-Key", http.MethodPost, headerWith("Idempotency-Key", "k1"), defaultIdempotencyHeaders, true},
		{"PATCH with Idempotency-Key", http.MethodPatch, headerWith("Idempotency-Key", "k1"), defaultIdempotencyHeaders, true},
		{"POST with X-Idempotency-Key", http.MethodPost, headerWith("X-Idempotency-Key", "k1"), defaultIdempotencyHeaders, true},
		{"POST with lower-case key set canonically", http.MethodPost, headerWith("idempotency-key", "k1"), defaultIdempotencyHeaders, true},
		{"POST with blank key", http.MethodPost, headerWith("Idempotency-Key", "  "), defaultIdempotencyHeaders, false},
		{"POST with empty key", http.MethodPost, headerWith("Idempotency-Key", ""), defaultIdempotencyHeaders, false},
		{"POST with tab key", http.MethodPost, headerWith("X-Idempotency-Key", "\t"), defaultIdempotencyHeaders, false},
		{"POST with blank then real key", http.MethodPost, http.Header{"Idempotency-Key": {" ", "k2"}}, defaultIdempotencyHeaders, true},
		{"POST with blank key and real X- key", http.MethodPost, http.Header{"Idempotency-Key": {" "}, "X-Idempotency-Key": {"k"}}, defaultIdempotencyHeaders, true},
		{"POST with nil header values", http.MethodPost, http.Header{"Idempotency-Key": nil}, defaultIdempotencyHeaders, false},
		{"POST with another header", http.MethodPost, headerWith("X-Request-Id", "k1"), defaultIdempotencyHeaders, false},
		{"CONNECT with key", http.MethodConnect, headerWith("Idempotency-Key", "k1"), defaultIdempotencyHeaders, false},
		{"POST with custom header", http.MethodPost, headerWith("X-Request-Token", "k1"), custom, true},
		{"PATCH with custom header, lower case", http.MethodPatch, headerWith("x-request-token", "k1"), custom, true},
		{"POST with blank custom header", http.MethodPost, headerWith("X-Request-Token", " "), custom, false},
		{"custom header replaces the defaults", http.MethodPost, headerWith("Idempotency-Key", "k1"), custom, false},
		{"GET with custom names", http.MethodGet, nil, custom, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequest(tt.method, "http://127.0.0.1/x", nil)
			require.NoError(t, err)
			req.Method = tt.method // NewRequest turns "" into GET
			if tt.header != nil {
				req.Header = tt.header
			}
			assert.Equal(t, tt.want, resendable(req, tt.names))
		})
	}
}

func headerWith(k, v string) http.Header {
	h := http.Header{}
	h.Set(k, v)
	return h
}

func TestDefaultIdempotencyHeadersCanonical(t *testing.T) {
	for _, name := range defaultIdempotencyHeaders {
		assert.Equal(t, http.CanonicalHeaderKey(name), name)
	}
	assert.Equal(t, []string{"Idempotency-Key", "X-Idempotency-Key"}, defaultIdempotencyHeaders)
}

var uuidV4 = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

func TestNewIdempotencyKey(t *testing.T) {
	seen := make(map[string]bool)
	for range 1000 {
		k := newIdempotencyKey()
		require.Regexp(t, uuidV4, k)
		require.False(t, seen[k], "duplicate key %s", k)
		seen[k] = true
	}
	assert.NotEqual(t, newIdempotencyKey(), newIdempotencyKey())
}

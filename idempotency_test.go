package httpretry

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
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
		// net/http marks a request idempotent by a key with a nil value,
		// which it does not send; DESIGN point 19 counts it as net/http does.
		{"POST with nil header value", http.MethodPost, http.Header{"Idempotency-Key": nil}, defaultIdempotencyHeaders, true},
		{"POST with empty header slice", http.MethodPost, http.Header{"X-Idempotency-Key": {}}, defaultIdempotencyHeaders, true},
		{"POST with nil custom header", http.MethodPost, http.Header{"X-Request-Token": nil}, custom, true},
		{"POST with nil default header, custom names", http.MethodPost, http.Header{"Idempotency-Key": nil}, custom, false},
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

func TestWithIdempotentMarksAnyMethod(t *testing.T) {
	for _, method := range []string{http.MethodPost, http.MethodPatch, http.MethodConnect, "PROPFIND"} {
		req, err := http.NewRequest(method, "http://127.0.0.1/x", nil)
		require.NoError(t, err)
		assert.False(t, resendable(req, defaultIdempotencyHeaders), method)
		req = req.WithContext(WithIdempotent(req.Context()))
		assert.True(t, resendable(req, defaultIdempotencyHeaders), method)
	}
}

func TestPostsMarkedTheNetHTTPWayAreResent(t *testing.T) {
	tests := []struct {
		name   string
		header http.Header
		ctx    func(context.Context) context.Context
	}{
		{"nil-valued key", http.Header{"Idempotency-Key": nil}, nil},
		{"WithIdempotent", nil, WithIdempotent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var calls atomic.Int32
			var sentKeys []string
			var mu sync.Mutex
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(r.Body)
				mu.Lock()
				sentKeys = append(sentKeys, r.Header.Get("Idempotency-Key")+"|"+string(body))
				mu.Unlock()
				if calls.Add(1) == 1 {
					w.WriteHeader(http.StatusServiceUnavailable)
				}
			}))
			defer srv.Close()
			p := DefaultPolicy()
			p.Backoff = NoBackoff()
			p.AutoIdempotencyKey = true // a key already there, nil or not, gets no other
			client := &http.Client{Transport: New(nil, WithPolicy(p))}
			defer client.CloseIdleConnections()

			ctx := context.Background()
			if tt.ctx != nil {
				ctx = tt.ctx(ctx)
			}
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, strings.NewReader("payload"))
			require.NoError(t, err)
			for k, v := range tt.header {
				req.Header[k] = v
			}
			resp, err := client.Do(req)
			require.NoError(t, err)
			resp.Body.Close()
			assert.Equal(t, http.StatusOK, resp.StatusCode)
			assert.Equal(t, int32(2), calls.Load())
			// Marked safe already, the request gets no key of
			// AutoIdempotencyKey's, and its body is sent whole twice.
			assert.Equal(t, []string{"|payload", "|payload"}, sentKeys)
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

// An auto-keyed POST is sent with every header its caller set, the key
// added beside them, on every attempt: the key must not cost the request
// its Content-Type or its authorization.
func TestAutoKeyedPostKeepsItsHeaders(t *testing.T) {
	var sent []http.Header
	base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		io.Copy(io.Discard, r.Body)
		r.Body.Close()
		sent = append(sent, r.Header.Clone())
		code := http.StatusOK
		if len(sent) == 1 {
			code = http.StatusServiceUnavailable
		}
		return fakeResponse(r, code, nil, ""), nil
	})
	p := fastPolicy(2)
	p.AutoIdempotencyKey = true
	req, err := http.NewRequest(http.MethodPost, "http://127.0.0.1/pay", strings.NewReader("pay"))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer t")
	resp, err := New(base, WithPolicy(p)).RoundTrip(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Len(t, sent, 2)
	key := sent[0].Get("Idempotency-Key")
	require.Regexp(t, uuidV4, key)
	want := http.Header{
		"Content-Type":    {"application/json"},
		"Authorization":   {"Bearer t"},
		"Idempotency-Key": {key},
	}
	assert.Equal(t, []http.Header{want, want}, sent)
	assert.Equal(t, http.Header{"Content-Type": {"application/json"}, "Authorization": {"Bearer t"}},
		req.Header, "the caller's header is not modified")
}

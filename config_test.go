package httpretry

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseConfigLeftOutIsDefault(t *testing.T) {
	for _, doc := range []string{`{}`, `{"default": {}}`, `{"default": null, "hosts": null}`, `{"hosts": {}}`} {
		cfg, err := ParseConfig([]byte(doc))
		require.NoError(t, err, doc)
		assert.Equal(t, DefaultPolicy(), cfg.Default, doc)
		assert.Empty(t, cfg.Hosts, doc)
	}

	cfg, err := ParseConfig([]byte(`{"default": {"maxRetries": 0, "budget": {"percent": 5}}}`))
	require.NoError(t, err)
	want := DefaultPolicy()
	want.MaxRetries = 0
	want.Budget.Percent = 5
	assert.Equal(t, want, cfg.Default, "0 turns retrying off; the rest of budget is default's")
}

func TestParseConfigHostStartsFromDefault(t *testing.T) {
	cfg, err := ParseConfig([]byte(`{
		"hosts": {
			"api.example.com": {"maxRetries": 1, "budget": {"window": "1m"}, "hedge": {"max": 3}},
			"payments.example.com:8443": {"autoIdempotencyKey": true, "retryOn": [503], "fallbacks": null}
		},
		"default": {
			"backoff": "fixed(200ms)",
			"retryOn": [500, 503],
			"budget": {"percent": 50},
			"hedge": {"after": "300ms"},
			"fallbacks": ["https://standby.example.com"]
		}
	}`))
	require.NoError(t, err)
	def := DefaultPolicy()
	def.Backoff = Fixed(200 * time.Millisecond)
	def.RetryOn = []int{500, 503}
	def.Budget.Percent = 50
	def.Hedge.After = 300 * time.Millisecond
	def.Fallbacks = []string{"https://standby.example.com"}
	assert.Equal(t, def, cfg.Default)

	api := def
	api.MaxRetries = 1
	api.Budget.Window = time.Minute
	api.Hedge.Max = 3
	payments := def
	payments.AutoIdempotencyKey = true
	payments.RetryOn = []int{503}
	payments.Fallbacks = nil
	assert.Equal(t, map[string]Policy{"api.example.com": api, "payments.example.com:8443": payments}, cfg.Hosts)

	// A host's lists are its own.
	cfg.Hosts["api.example.com"].RetryOn[0] = 429
	cfg.Hosts["api.example.com"].Fallbacks[0] = "https://other.example.com"
	assert.Equal(t, def, cfg.Default)
}

func TestParseConfigErrors(t *testing.T) {
	tests := []struct {
		name    string
		doc     string
		want    []string
		invalid bool // wraps ErrInvalidPolicy
	}{
		{
			name: "every problem at once",
			doc: `{
				"default": {"maxRetries": 20, "perTryTimeout": "fast", "budget": {"percent": -5, "windw": "1s"}},
				"hosts": {
					"api.example.com": {"maxRetries": 17, "backoff": "exponential(2s, 1s)", "retryOn": [503, 99]},
					"x:abc": {"hedge": {"max": 2, "after": "0s"}},
					"API.example.com": {},
					"b.example": {"fallbacks": ["https://ok.example", "ftp://x"], "idempotencyHeader": "a b"}
				},
				"retries": 3
			}`,
			want: []string{
				`retries: unknown field; want default or hosts`,
				`default.perTryTimeout: "fast": want a duration such as "250ms"`,
				`default.budget.windw: unknown field (did you mean window?)`,
				`default.maxRetries: 20 is outside 0..16`,
				`default.budget.percent: -5 is outside 0..1000`,
				`hosts["api.example.com"].backoff: "exponential(2s, 1s)": max is below the initial wait`,
				`hosts["api.example.com"].maxRetries: 17 is outside 0..16`,
				`hosts["api.example.com"].retryOn[1]: status 99 is outside 400..599`,
				`hosts["x:abc"]: bad port "abc"`,
				`hosts["x:abc"].hedge.max: 2 needs Hedge.After or Hedge.Quantile`,
				`hosts["API.example.com"]: the same host as hosts["api.example.com"]`,
				`hosts["b.example"].idempotencyHeader: "a b" is not a header name`,
				`hosts["b.example"].fallbacks[1]: "ftp://x": scheme "ftp" is not http or https`,
			},
			invalid: true,
		},
		{
			name:    "decoding only",
			doc:     `{"default": {"maxRetries": "3"}, "hosts": {"a": {"budget": 5}, "a": {}}}`,
			want:    []string{`default.maxRetries: "3": want an integer`, `hosts["a"]: given twice`, `hosts["a"].budget: 5: want an object`},
			invalid: false,
		},
		{
			name:    "host key only",
			doc:     `{"hosts": {"https://api.example.com": {}, "": {}}}`,
			want:    []string{`hosts["https://api.example.com"]: want a host or host:port, with no scheme or path`, `hosts[""]: want a host or host:port, with no scheme or path`},
			invalid: true,
		},
		{name: "not an object", doc: `[]`, want: []string{`[]: want an object`}},
		{name: "null", doc: `null`, want: []string{`null: want an object`}},
		{name: "hosts not an object", doc: `{"hosts": ["a"]}`, want: []string{`hosts: ["a"]: want an object`}},
		{name: "empty", doc: ``, want: []string{`invalid JSON: unexpected end of JSON input`}},
		{name: "syntax", doc: "{\n  \"default\": {\n    \"maxRetries\": 3,\n  }\n}",
			want: []string{`invalid JSON at line 4, column 3: invalid character '}' looking for beginning of object key string`}},
		{name: "trailing", doc: `{} {}`, want: []string{`invalid JSON at line 1, column 4: invalid character '{' after top-level value`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := ParseConfig([]byte(tt.doc))
			require.Error(t, err)
			assert.Zero(t, cfg)
			assert.Equal(t, "httpretry: config: "+strings.Join(tt.want, "; "), err.Error())
			assert.Equal(t, tt.invalid, errors.Is(err, ErrInvalidPolicy))
		})
	}
}

// TestParseConfigReportsEveryBadElement: a list with an element of the
// wrong type is still checked, so that every bad element is reported, each
// under its own path, in default and host entries, RetryOn and Fallbacks.
func TestParseConfigReportsEveryBadElement(t *testing.T) {
	_, err := ParseConfig([]byte(`{
		"default": {"retryOn": [503, "x", 700], "fallbacks": ["https://ok.example", 7, "ftp://x", null]},
		"hosts": {
			"a": {"retryOn": [null, 99, 503], "fallbacks": [true, "https://u:p@b.example"]},
			"b": {"retryOn": 503, "maxRetries": 2}
		}
	}`))
	require.ErrorIs(t, err, ErrInvalidPolicy)
	assert.Equal(t, "httpretry: config: "+strings.Join([]string{
		`default.retryOn[1]: "x": want an integer`,
		`default.fallbacks[1]: 7: want a string`,
		`default.fallbacks[3]: null: want a string`,
		`default.retryOn[2]: status 700 is outside 400..599`,
		`default.fallbacks[2]: "ftp://x": scheme "ftp" is not http or https`,
		`hosts["a"].retryOn[0]: null: want an integer`,
		`hosts["a"].fallbacks[0]: true: want a string`,
		`hosts["a"].retryOn[1]: status 99 is outside 400..599`,
		`hosts["a"].fallbacks[1]: "https://xxxxx@b.example": an origin has no user info`,
		`hosts["b"].retryOn: 503: want a list, each an integer`,
	}, "; "), err.Error())
}

func TestParseConfigReportsDefaultsProblemOnce(t *testing.T) {
	_, err := ParseConfig([]byte(`{"default": {"maxRetries": 20}, "hosts": {"a": {"deadline": "-1s"}, "b": {"maxRetries": 17}}}`))
	require.Error(t, err)
	assert.Equal(t, `httpretry: config: default.maxRetries: 20 is outside 0..16; `+
		`hosts["a"].deadline: -1s is negative; hosts["b"].maxRetries: 17 is outside 0..16`, err.Error())
}

func TestConfigJSONRoundTrip(t *testing.T) {
	policies := jsonPolicies()
	for name, p := range policies {
		if p.Validate() != nil {
			continue
		}
		t.Run(name, func(t *testing.T) {
			cfg := Config{Default: p, Hosts: map[string]Policy{"api.example.com": policies["default"], "b.example:8443": p}}
			data, err := json.Marshal(cfg)
			require.NoError(t, err)
			got, err := ParseConfig(data)
			require.NoError(t, err, string(data))
			assert.Equal(t, cfg, got)
		})
	}
}

func TestConfigUnmarshalJSON(t *testing.T) {
	var file struct {
		Listen string `json:"listen"`
		Retry  Config `json:"retry"`
	}
	require.NoError(t, json.Unmarshal([]byte(`{"listen": ":8080", "retry": {"hosts": {"a": {"maxRetries": 1}}}}`), &file))
	assert.Equal(t, DefaultPolicy(), file.Retry.Default, "the same defaults as ParseConfig")
	assert.Equal(t, 1, file.Retry.Hosts["a"].MaxRetries)
	assert.Equal(t, defaultBackoff, file.Retry.Hosts["a"].Backoff)

	before := file.Retry
	err := json.Unmarshal([]byte(`{"retry": {"default": {"maxRetries": -1}}}`), &file)
	require.ErrorIs(t, err, ErrInvalidPolicy)
	assert.Equal(t, "httpretry: config: default.maxRetries: -1 is outside 0..16", err.Error())
	assert.Equal(t, before, file.Retry, "unchanged on error")
	require.NoError(t, json.Unmarshal([]byte(`{"retry": null}`), &file))
	assert.Equal(t, before, file.Retry)
}

func TestConfigOptions(t *testing.T) {
	cfg, err := ParseConfig([]byte(`{"default": {"maxRetries": 1}, "hosts": {
		"api.example.com": {"maxRetries": 2}, "api.example.com:8443": {"maxRetries": 3}, "[::1]:8080": {"maxRetries": 4}}}`))
	require.NoError(t, err)
	opts := cfg.Options()
	require.Len(t, opts, 4)
	var c config
	for _, o := range opts {
		o.apply(&c)
	}
	assert.Equal(t, cfg.Default, c.policy)
	assert.Equal(t, []hostOption{{"[::1]:8080", cfg.Hosts["[::1]:8080"]}, {"api.example.com", cfg.Hosts["api.example.com"]},
		{"api.example.com:8443", cfg.Hosts["api.example.com:8443"]}}, c.hosts, "hosts in sorted order")

	rt := New(policyTestTransport{}, opts...)
	for url, want := range map[string]int{
		"https://api.example.com/":      2,
		"https://api.example.com:8443/": 3,
		"http://[::1]:8080/":            4,
		"https://other.example.com/":    1,
	} {
		u := mustURL(t, url)
		assert.Equal(t, want, rt.policies.lookup(originOf(u)).maxRetries, url)
	}
}

// TestZeroConfigConfiguresNothing: a Config field whose key is absent or
// null in a larger struct gives no option, so New's defaults, and options
// given before it, stand.
func TestZeroConfigConfiguresNothing(t *testing.T) {
	assert.Empty(t, Config{}.Options())
	for _, doc := range []string{`{}`, `{"retry": null}`} {
		var file struct {
			Retry Config `json:"retry"`
		}
		require.NoError(t, json.Unmarshal([]byte(doc), &file), doc)
		assert.Empty(t, file.Retry.Options(), doc)

		rt := New(policyTestTransport{}, file.Retry.Options()...)
		assert.Equal(t, defaultMaxRetries, rt.policies.lookup(originOf(mustURL(t, "https://a.example/"))).maxRetries, doc)
		rt = New(policyTestTransport{}, append([]Option{WithPolicy(Policy{MaxRetries: 1})}, file.Retry.Options()...)...)
		assert.Equal(t, 1, rt.policies.lookup(originOf(mustURL(t, "https://a.example/"))).maxRetries, doc)
	}
	// Anything set is a configuration: a zero Default with hosts turns
	// retrying off for the others, as WithPolicy(Policy{}) does.
	assert.Len(t, Config{Hosts: map[string]Policy{"a": DefaultPolicy()}}.Options(), 2)
}

// TestConfigReloadKeepsBudgets reloads a configuration into a new
// transport that shares the first one's budgets: the counts of the window
// carry over, and the new budget config applies.
func TestConfigReloadKeepsBudgets(t *testing.T) {
	up := newUpstream(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	host := mustURL(t, up.URL).Host
	budgets := NewBudgets()
	load := func(doc string) *http.Client {
		cfg, err := ParseConfig([]byte(doc))
		require.NoError(t, err)
		return &http.Client{Transport: New(nil, append(cfg.Options(), WithBudgets(budgets))...)}
	}
	get := func(c *http.Client) {
		resp, err := c.Get(up.URL)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	}
	// The window's counts alone: the hold (point 22) would make the second
	// request's resends wait for evidence that a lone client never gets.
	first := load(`{"default": {"maxRetries": 2, "backoff": "none", "budget": {"minRetries": 3, "window": "1h", "hold": -1}}}`)
	get(first)
	assert.Equal(t, int64(3), up.calls.Load())
	cfg := BudgetConfig{Percent: 20, MinRetries: 3, Window: time.Hour, Hold: -1}
	assert.Equal(t, 1, budgets.For(host, cfg).Stats().Requests)
	assert.Equal(t, 2, budgets.For(host, cfg).Stats().Retries)

	reloaded := load(`{"default": {"maxRetries": 2, "backoff": "none", "budget": {"minRetries": 3, "window": "1h", "hold": -1}}}`)
	get(reloaded)
	assert.Equal(t, int64(5), up.calls.Load(), "one resend left in the shared budget")
	assert.Equal(t, 2, budgets.For(host, cfg).Stats().Requests)
	assert.Equal(t, 3, budgets.For(host, cfg).Stats().Retries)
	reloaded.CloseIdleConnections()
	first.CloseIdleConnections()
}

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	require.NoError(t, err)
	return u
}

// FuzzParseConfig checks that ParseConfig never panics, that a Config it
// returns never makes New panic, that it never reads as 0 a duration that
// is not 0 as written ("0.5ns"), and that it reads its own JSON back as
// the same Config.
func FuzzParseConfig(f *testing.F) {
	var p Policy
	durations := make(map[string]bool)
	for path := range durationPaths(&p) {
		durations[path[strings.LastIndexByte(path, '.')+1:]] = true
	}
	for _, doc := range []string{
		`{}`,
		`{"default": {"maxRetries": 2, "backoff": "fixed(1s).Unbudgeted()", "retryOn": [], "budget": {"window": "1m"}}}`,
		`{"hosts": {"api.example.com": {"maxRetries": 1, "hedge": {"after": "10ms", "max": 2}}, "[::1]:8080": null}}`,
		`{"default": {"fallbacks": ["https://b.example", "http://10.0.0.7:8080/"]}, "hosts": {"b.example": {"fallbacks": null}}}`,
		`{"default": {"maxRetries": 20, "perTryTimeout": "fast"}, "hosts": {"x:abc": {}, "X:ABC": {"bogus": 1}}}`,
		`{"default": {"perTryTimeout": "0.5ns", "resume": {"idle": "0.0s"}}, "hosts": {"a": {"deadline": "0.9ns"}}}`,
	} {
		f.Add([]byte(doc))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := ParseConfig(data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "httpretry: config: ") {
				t.Fatalf("error %q lacks its prefix", err)
			}
			return
		}
		New(fzConstBase{}, cfg.Options()...) // must not panic
		var tree any
		if err := json.Unmarshal(data, &tree); err != nil || fzHidesBelowNanosecond(tree, durations) {
			t.Fatalf("ParseConfig(%s) read a duration below 1ns but not 0 as 0 (%v)", data, err)
		}
		text, err := json.Marshal(cfg)
		if err != nil {
			t.Fatalf("Marshal(%+v): %v", cfg, err)
		}
		again, err := ParseConfig(text)
		if err != nil {
			t.Fatalf("ParseConfig of its own output %s: %v", text, err)
		}
		if len(cfg.Hosts) == 0 {
			cfg.Hosts = nil // "hosts": {} and null read the same
		}
		if len(again.Hosts) == 0 {
			again.Hosts = nil
		}
		if !assert.ObjectsAreEqual(cfg, again) {
			t.Fatalf("ParseConfig(%s) = %+v,\nits text %s reads as %+v", data, cfg, text, again)
		}
	})
}

// fzHidesBelowNanosecond reports whether the JSON tree v holds, under a
// name in durations, a text that is not 0 but reads as 0 ("0.5ns").
func fzHidesBelowNanosecond(v any, durations map[string]bool) bool {
	switch v := v.(type) {
	case map[string]any:
		for name, e := range v {
			if s, ok := e.(string); ok && durations[name] && fzRoundsToZero(s) {
				return true
			}
			if fzHidesBelowNanosecond(e, durations) {
				return true
			}
		}
	case []any:
		for _, e := range v {
			if fzHidesBelowNanosecond(e, durations) {
				return true
			}
		}
	}
	return false
}

// problemsDoc is a config with n problems in default's lists, statuses
// distinct when distinct, and hosts host entries that inherit them.
func problemsDoc(n, hosts int, distinct bool) []byte {
	var b strings.Builder
	b.WriteString(`{"default": {"retryOn": [`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		status := 700
		if distinct {
			status = 1000 + i
		}
		b.WriteString(strconv.Itoa(status))
	}
	b.WriteString(`]}, "hosts": {`)
	for i := range hosts {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"h%d.example": {"fallbacks": ["ftp://x"]}`, i)
	}
	b.WriteString(`}}`)
	return []byte(b.String())
}

// TestParseConfigWorkIsLinear counts allocations, which do not depend on
// the machine's speed: doubling both the problems of default and the hosts
// that inherit them must about double the work, not quadruple it, as it
// did when every host checked default's lists again.
func TestParseConfigWorkIsLinear(t *testing.T) {
	allocs := func(n, hosts int) float64 {
		doc := problemsDoc(n, hosts, false)
		return testing.AllocsPerRun(1, func() {
			_, err := ParseConfig(doc)
			require.Error(t, err)
		})
	}
	small, large := allocs(1000, 100), allocs(2000, 200)
	assert.Less(t, large, 2.5*small, "allocations: %v for 1000 problems and 100 hosts, %v for twice as many", small, large)
}

// TestParseConfigLargeFileFast: DESIGN's figure, a file of 100,000
// problems rejected in under a second (without the race detector, which
// makes it ten times slower and gets a tenth of the file). The bound is
// ten times that, for a busy machine; quadratic checking took a minute.
func TestParseConfigLargeFileFast(t *testing.T) {
	n := 100_000
	if raceEnabled {
		n /= 10
	}
	doc := problemsDoc(n, 1, true)
	start := time.Now()
	_, err := ParseConfig(doc)
	took := time.Since(start)
	require.Error(t, err)
	assert.Equal(t, n+1, strings.Count(err.Error(), "; ")+1, "every problem reported")
	assert.Less(t, took, 10*time.Second, "%d problems in %d bytes", n, len(doc))
}

func BenchmarkParseConfigProblems(b *testing.B) {
	doc := problemsDoc(100_000, 1, true)
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseConfig(doc); err == nil {
			b.Fatal("no error")
		}
	}
}

// TestParseConfigDemote: a host entry merges over default inside demote,
// field by field, and every problem is named under its JSON path.
func TestParseConfigDemote(t *testing.T) {
	cfg, err := ParseConfig([]byte(`{
		"default": {"fallbacks": ["https://b.example"], "demote": {"after": 3, "for": "2s"}},
		"hosts": {
			"api.example.com": {"demote": {"max": "1m"}},
			"quiet.example.com": {"demote": {"after": -1}},
			"zero.example.com": {"demote": {"after": 0}},
			"plain.example.com": {"demote": null}
		}
	}`))
	require.NoError(t, err)
	assert.Equal(t, Demote{After: 3, For: 2 * time.Second}, cfg.Default.Demote)
	assert.Equal(t, Demote{After: 3, For: 2 * time.Second, Max: time.Minute}, cfg.Hosts["api.example.com"].Demote)
	assert.Equal(t, Demote{After: -1, For: 2 * time.Second}, cfg.Hosts["quiet.example.com"].Demote, "after -1 turns it off, over a default that sets the others")
	assert.Equal(t, 0, cfg.Hosts["zero.example.com"].Demote.After)
	assert.Equal(t, cfg.Default.Demote.For, cfg.Hosts["zero.example.com"].Demote.For)
	assert.Equal(t, Demote{}.resolve().After, resolvePolicy(cfg.Hosts["zero.example.com"]).demote.After, "after 0 means the default, as in Go")
	assert.Equal(t, cfg.Default.Demote, cfg.Hosts["plain.example.com"].Demote, "null leaves default's")

	cfg, err = ParseConfig([]byte(`{"default": {"demote": {"max": "5s"}}}`))
	require.NoError(t, err)
	assert.Equal(t, Demote{After: 5, Max: 5 * time.Second}, cfg.Default.Demote, "left out: DefaultPolicy's")

	_, err = ParseConfig([]byte(`{
		"default": {"demote": {"after": 101, "for": "-1s", "max": "-2s"}},
		"hosts": {
			"a.example": {"demote": {"after": -1, "for": "2s", "max": "1s"}},
			"d.example": {"demote": {"after": 7, "for": "-3s"}},
			"b.example": {"demote": {"after": "x", "every": 1, "for": 5}},
			"c.example": {"demote": []}
		}
	}`))
	require.Error(t, err)
	assert.ErrorIs(t, err, ErrInvalidPolicy)
	assert.Equal(t, "httpretry: config: "+strings.Join([]string{
		`default.demote.after: 101 is above 100`,
		`default.demote.for: -1s is negative`,
		`default.demote.max: -2s is negative`,
		`hosts["a.example"].demote.max: 1s is less than Demote.For 2s`,
		`hosts["d.example"].demote.for: -3s is negative`,
		`hosts["b.example"].demote.after: "x": want an integer`,
		`hosts["b.example"].demote.every: unknown field`,
		`hosts["b.example"].demote.for: 5: want a duration such as "250ms"`,
		`hosts["c.example"].demote: []: want an object`,
	}, "; "), err.Error())
}

// A hedge under maxRetries 0 is refused in JSON as in Go, under the path
// of the hedge, and reported once when a host inherits it. An entry that
// turns resending off ("maxRetries": 0) and names no hedge turns off the
// hedge it inherits instead: it never wrote one, and a copy is a resend.
func TestParseConfigHedgeNeedsRetries(t *testing.T) {
	const why = "a copy is a resend: maxRetries must be at least 1"
	_, err := ParseConfig([]byte(`{"default": {"maxRetries": 0, "hedge": {"after": "50ms"}},
		"hosts": {"a.example": {}, "b.example": {"maxRetries": 1}, "c.example": {"hedge": {"quantile": 0.9}}}}`))
	require.ErrorIs(t, err, ErrInvalidPolicy)
	assert.Equal(t, "httpretry: config: default.hedge: "+why, err.Error(), "b.example resends; a.example's is default's problem")

	_, err = ParseConfig([]byte(`{"default": {"maxRetries": 0},
		"hosts": {"a.example": {"hedge": {"after": "50ms"}}, "b.example": {"maxRetries": 0, "hedge": {"quantile": 0.95}}}}`))
	require.ErrorIs(t, err, ErrInvalidPolicy)
	assert.Equal(t, `httpretry: config: hosts["a.example"].hedge: `+why+`; hosts["b.example"].hedge: `+why, err.Error())

	p := DefaultPolicy()
	err = json.Unmarshal([]byte(`{"maxRetries": 0, "hedge": {"after": "50ms"}}`), &p)
	require.NoError(t, err, "Policy.UnmarshalJSON does not validate")
	assert.EqualError(t, p.Validate(), "httpretry: invalid policy: Hedge "+why)

	_, err = ParseConfig([]byte(`{"default": {"hedge": {"after": "50ms", "max": 2}, "perTryTimeout": "1s"},
		"hosts": {"off.example": {"maxRetries": 0}, "kept.example": {"maxRetries": 0, "hedge": null}, "one.example": {"maxRetries": 1}}}`))
	require.Error(t, err, "a hedge named, even as null, is the entry's own")
	assert.Equal(t, `httpretry: config: hosts["kept.example"].hedge: `+why, err.Error())

	cfg, err := ParseConfig([]byte(`{"default": {"hedge": {"after": "50ms", "max": 2}, "perTryTimeout": "1s"},
		"hosts": {"off.example": {"maxRetries": 0}, "one.example": {"maxRetries": 1}}}`))
	require.NoError(t, err)
	off := cfg.Default
	off.MaxRetries, off.Hedge = 0, Hedge{}
	assert.Equal(t, off, cfg.Hosts["off.example"], "the rest of default's stands, the time bound too")
	assert.Equal(t, Hedge{After: 50 * time.Millisecond, Max: 2}, cfg.Hosts["one.example"].Hedge)
	New(nil, cfg.Options()...) // must not panic
}

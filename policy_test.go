package httpretry

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDefaultPolicy(t *testing.T) {
	want := Policy{
		MaxRetries:     3,
		Backoff:        ExponentialJitter(100*time.Millisecond, 2*time.Second),
		RetryOn:        []int{429, 502, 503, 504},
		MaxRetryAfter:  30 * time.Second,
		MaxReplayBytes: 1 << 20,
		Budget:         BudgetConfig{Percent: 20, MinRetries: 10, Window: 10 * time.Second, Hold: 2, HoldFor: time.Second},
		Demote:         Demote{After: 5},
		Resume:         Resume{Max: 3},
	}
	p := DefaultPolicy()
	assert.Equal(t, want, p)
	assert.Equal(t, defaultBackoff, p.Backoff)
	assert.Zero(t, p.PerTryTimeout)
	assert.Zero(t, p.Deadline)
	assert.Empty(t, p.IdempotencyHeader)
	assert.False(t, p.AutoIdempotencyKey)
	assert.Zero(t, p.Hedge)
	assert.NoError(t, p.Validate())
	assert.Equal(t, 30*time.Second, p.Backoff.waitBudget())

	// The explicit budget is the zero budget's defaults spelled out.
	explicit, zero := newBudgetParams(p.Budget), newBudgetParams(BudgetConfig{})
	explicit.cfg, zero.cfg = BudgetConfig{}, BudgetConfig{}
	assert.Equal(t, zero, explicit)
}

func TestDefaultRetryStatusesFresh(t *testing.T) {
	a := DefaultRetryStatuses()
	require.Equal(t, []int{429, 502, 503, 504}, a)
	a[0] = 500
	assert.Equal(t, []int{429, 502, 503, 504}, DefaultRetryStatuses())

	p := DefaultPolicy()
	p.RetryOn[1] = 500
	assert.Equal(t, []int{429, 502, 503, 504}, DefaultPolicy().RetryOn)
	assert.Equal(t, []int{429, 502, 503, 504}, DefaultRetryStatuses())
}

func TestPolicyValidate(t *testing.T) {
	tests := []struct {
		name  string
		edit  func(*Policy)
		field string // "" when valid
	}{
		{"default", func(*Policy) {}, ""},
		{"MaxRetries 0", func(p *Policy) { p.MaxRetries = 0 }, ""},
		{"MaxRetries 16", func(p *Policy) { p.MaxRetries = 16 }, ""},
		{"MaxRetries -1", func(p *Policy) { p.MaxRetries = -1 }, "MaxRetries -1 is outside 0..16"},
		{"MaxRetries 17", func(p *Policy) { p.MaxRetries = 17 }, "MaxRetries 17 is outside 0..16"},
		{"RetryOn nil", func(p *Policy) { p.RetryOn = nil }, ""},
		{"RetryOn empty", func(p *Policy) { p.RetryOn = []int{} }, ""},
		{"RetryOn 400 and 599", func(p *Policy) { p.RetryOn = []int{400, 599} }, ""},
		{"RetryOn 200", func(p *Policy) { p.RetryOn = []int{200} }, "RetryOn status 200 is outside 400..599"},
		{"RetryOn 399", func(p *Policy) { p.RetryOn = []int{399} }, "RetryOn status 399 is outside 400..599"},
		{"RetryOn 100", func(p *Policy) { p.RetryOn = []int{100} }, "RetryOn status 100 is outside 400..599"},
		{"RetryOn 99", func(p *Policy) { p.RetryOn = []int{503, 99} }, "RetryOn status 99 is outside 400..599"},
		{"RetryOn 600", func(p *Policy) { p.RetryOn = []int{600} }, "RetryOn status 600 is outside 400..599"},
		{"RetryOn 0", func(p *Policy) { p.RetryOn = []int{0} }, "RetryOn status 0 is outside 400..599"},
		{"RetryOn -503", func(p *Policy) { p.RetryOn = []int{-503} }, "RetryOn status -503 is outside 400..599"},
		{"RetryOn huge", func(p *Policy) { p.RetryOn = []int{math.MaxInt} }, "RetryOn status 9223372036854775807 is outside 400..599"},
		{"PerTryTimeout", func(p *Policy) { p.PerTryTimeout = -time.Second }, "PerTryTimeout -1s is negative"},
		{"Deadline", func(p *Policy) { p.Deadline = -1 }, "Deadline -1ns is negative"},
		{"MaxRetryAfter", func(p *Policy) { p.MaxRetryAfter = -time.Minute }, "MaxRetryAfter -1m0s is negative"},
		{"MaxRetryAfter 0", func(p *Policy) { p.MaxRetryAfter = 0 }, ""},
		{"MaxReplayBytes negative", func(p *Policy) { p.MaxReplayBytes = -1 }, ""},
		{"IdempotencyHeader valid", func(p *Policy) { p.IdempotencyHeader = "X-Request-Token" }, ""},
		{"IdempotencyHeader tchars", func(p *Policy) { p.IdempotencyHeader = "!#$%&'*+-.^_`|~09az" }, ""},
		{"IdempotencyHeader space", func(p *Policy) { p.IdempotencyHeader = "Idempotency Key" }, `IdempotencyHeader "Idempotency Key" is not a header name`},
		{"IdempotencyHeader colon", func(p *Policy) { p.IdempotencyHeader = "Key:" }, `IdempotencyHeader "Key:" is not a header name`},
		{"IdempotencyHeader newline", func(p *Policy) { p.IdempotencyHeader = "Key\n" }, `IdempotencyHeader "Key\n" is not a header name`},
		{"IdempotencyHeader non-ASCII", func(p *Policy) { p.IdempotencyHeader = "Schlüssel" }, `IdempotencyHeader "Schlüssel" is not a header name`},
		{"Budget.Percent", func(p *Policy) { p.Budget.Percent = -5 }, "Budget.Percent -5 is outside 0..1000"},
		{"Budget.Percent too large", func(p *Policy) { p.Budget.Percent = 1001 }, "Budget.Percent 1001 is outside 0..1000"},
		{"Budget.Percent 0", func(p *Policy) { p.Budget.Percent = 0 }, ""},
		{"Budget.Percent 500", func(p *Policy) { p.Budget.Percent = 500 }, ""},
		{"Budget.MinRetries negative", func(p *Policy) { p.Budget.MinRetries = -1 }, ""},
		{"Budget.Window", func(p *Policy) { p.Budget.Window = -time.Second }, "Budget.Window -1s is negative"},
		{"Budget.Disabled", func(p *Policy) { p.Budget.Disabled = true }, ""},
		{"Demote off", func(p *Policy) { p.Demote = Demote{} }, ""},
		{"Demote.After 100", func(p *Policy) { p.Demote.After = 100 }, ""},
		{"Demote.After 101", func(p *Policy) { p.Demote.After = 101 }, "Demote.After 101 is above 100"},
		{"Demote.After -1", func(p *Policy) { p.Demote.After = -1 }, ""},
		{"Demote.For", func(p *Policy) { p.Demote.For = -time.Second }, "Demote.For -1s is negative"},
		{"Demote.Max", func(p *Policy) { p.Demote.Max = -1 }, "Demote.Max -1ns is negative"},
		{"Demote.Max below For", func(p *Policy) { p.Demote.For, p.Demote.Max = 2*time.Second, time.Second },
			"Demote.Max 1s is less than Demote.For 2s"},
		{"Demote.Max equal to For", func(p *Policy) { p.Demote.For, p.Demote.Max = time.Second, time.Second }, ""},
		{"Demote.Max below For's default", func(p *Policy) { p.Demote.Max = 10 * time.Millisecond }, ""},
		{"Demote.For and Max without After", func(p *Policy) { p.Demote = Demote{For: time.Second, Max: time.Minute} }, ""},
		{"Fallbacks", func(p *Policy) {
			p.Fallbacks = []string{"https://b.example", "http://10.0.0.7:8080/", "HTTPS://B.example:443"}
		}, ""},
		{"Fallbacks ftp", func(p *Policy) { p.Fallbacks = []string{"https://b.example", "ftp://x"} }, `Fallbacks[1] "ftp://x": scheme "ftp" is not http or https`},
		{"Fallbacks no scheme", func(p *Policy) { p.Fallbacks = []string{"b.example:8080"} }, `Fallbacks[0] "b.example:8080": want "http://" or "https://" and a host`},
		{"Fallbacks path", func(p *Policy) { p.Fallbacks = []string{"https://b.example/v1"} }, `Fallbacks[0] "https://b.example/v1": an origin has no path, not "/v1"`},
		{"Fallbacks user info", func(p *Policy) { p.Fallbacks = []string{"https://u:pw@b.example"} }, `Fallbacks[0] "https://xxxxx@b.example": an origin has no user info`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := DefaultPolicy()
			tt.edit(&p)
			err := p.Validate()
			if tt.field == "" {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.ErrorIs(t, err, ErrInvalidPolicy)
			assert.Equal(t, "httpretry: invalid policy: "+tt.field, err.Error())
		})
	}
}

func TestPolicyValidateZero(t *testing.T) {
	assert.NoError(t, Policy{}.Validate())
}

func TestPolicyValidateNamesEveryField(t *testing.T) {
	p := Policy{
		MaxRetries:        99,
		RetryOn:           []int{42, 503, 700},
		PerTryTimeout:     -1,
		Deadline:          -2,
		MaxRetryAfter:     -3,
		IdempotencyHeader: "a b",
		Budget:            BudgetConfig{Percent: -1, Window: -4},
		Fallbacks:         []string{"https://ok.example", "", "https://x?q"},
		Demote:            Demote{After: 101, For: -5, Max: -6},
	}
	err := p.Validate()
	require.Error(t, err)
	assert.True(t, errors.Is(err, ErrInvalidPolicy))
	parts := []string{
		"MaxRetries 99 is outside 0..16",
		"RetryOn status 42 is outside 400..599",
		"RetryOn status 700 is outside 400..599",
		"PerTryTimeout -1ns is negative",
		"Deadline -2ns is negative",
		"MaxRetryAfter -3ns is negative",
		`IdempotencyHeader "a b" is not a header name`,
		"Budget.Percent -1 is outside 0..1000",
		"Budget.Window -4ns is negative",
		"Demote.After 101 is above 100",
		"Demote.For -5ns is negative",
		"Demote.Max -6ns is negative",
		`Fallbacks[1] "": want "http://" or "https://" and a host`,
		`Fallbacks[2] "https://x?q": an origin has no query`,
	}
	assert.Equal(t, "httpretry: invalid policy: "+strings.Join(parts, "; "), err.Error())
}

func TestPolicyProblems(t *testing.T) {
	p := Policy{
		MaxRetries: 20,
		RetryOn:    []int{503, 99},
		Budget:     BudgetConfig{Window: -time.Second},
		Hedge:      Hedge{After: -1, Max: 17},
	}
	assert.Equal(t, []problem{
		{"MaxRetries", "20 is outside 0..16"},
		{"RetryOn", "status 99 is outside 400..599"},
		{"Budget.Window", "-1s is negative"},
		{"Hedge.After", "-1ns is negative"},
		{"Hedge.Max", "17 is outside 0..16"},
	}, p.problems())
	assert.Equal(t, []problem{{"Hedge.Max", "2 needs Hedge.After or Hedge.Quantile"}}, Policy{Hedge: Hedge{Max: 2}}.problems())
	assert.Equal(t, []problem{{"Demote.Max", "1s is less than Demote.For 2s"}},
		Policy{Demote: Demote{For: 2 * time.Second, Max: time.Second}}.problems())
	assert.Empty(t, DefaultPolicy().problems())
}

// Hedge.Quantile is 0 or in [0.5, 0.999]; MinAfter is not negative and
// comes only with Quantile; Max needs After or Quantile.
func TestHedgeLearnedProblems(t *testing.T) {
	for _, tc := range []struct {
		name  string
		hedge Hedge
		want  []problem
	}{
		{"fixed", Hedge{After: time.Millisecond}, nil},
		{"quantile at the bottom", Hedge{Quantile: 0.5}, nil},
		{"quantile at the top", Hedge{Quantile: 0.999}, nil},
		{"every field", Hedge{After: time.Second, Max: 2, Quantile: 0.95, MinAfter: 5 * time.Millisecond}, nil},
		{"Max with Quantile alone", Hedge{Max: 2, Quantile: 0.95}, nil},
		{"Max alone", Hedge{Max: 2}, []problem{{"Hedge.Max", "2 needs Hedge.After or Hedge.Quantile"}}},
		{"quantile below", Hedge{Quantile: 0.4}, []problem{{"Hedge.Quantile", "0.4 is outside [0.5, 0.999]"}}},
		{"quantile 1", Hedge{Quantile: 1}, []problem{{"Hedge.Quantile", "1 is outside [0.5, 0.999]"}}},
		{"quantile above the top", Hedge{Quantile: 0.9995}, []problem{{"Hedge.Quantile", "0.9995 is outside [0.5, 0.999]"}}},
		{"quantile negative", Hedge{Quantile: -0.95}, []problem{{"Hedge.Quantile", "-0.95 is outside [0.5, 0.999]"}}},
		{"quantile NaN", Hedge{Quantile: math.NaN()}, []problem{{"Hedge.Quantile", "NaN is outside [0.5, 0.999]"}}},
		{"quantile +Inf", Hedge{Quantile: math.Inf(1)}, []problem{{"Hedge.Quantile", "+Inf is outside [0.5, 0.999]"}}},
		{"quantile -Inf", Hedge{Quantile: math.Inf(-1)}, []problem{{"Hedge.Quantile", "-Inf is outside [0.5, 0.999]"}}},
		{"MinAfter negative", Hedge{Quantile: 0.95, MinAfter: -1}, []problem{{"Hedge.MinAfter", "-1ns is negative"}}},
		{"MinAfter without Quantile", Hedge{After: time.Second, MinAfter: time.Millisecond},
			[]problem{{"Hedge.MinAfter", "1ms needs Hedge.Quantile"}}},
		{"MinAfter negative without Quantile", Hedge{MinAfter: -time.Millisecond},
			[]problem{{"Hedge.MinAfter", "-1ms is negative"}, {"Hedge.MinAfter", "-1ms needs Hedge.Quantile"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := DefaultPolicy()
			p.Hedge = tc.hedge
			assert.Equal(t, tc.want, p.problems())
			if tc.want == nil {
				assert.NoError(t, p.Validate())
			} else {
				assert.ErrorIs(t, p.Validate(), ErrInvalidPolicy)
			}
		})
	}
}

type policyTestTransport struct{}

func (policyTestTransport) RoundTrip(*http.Request) (*http.Response, error) {
	return nil, errors.New("nop")
}

func TestNewPanicsWithValidateText(t *testing.T) {
	bad := Policy{MaxRetries: -1, Deadline: -time.Second}
	want := bad.Validate().Error()
	assert.PanicsWithValue(t, want, func() { New(policyTestTransport{}, WithPolicy(bad)) })
	assert.PanicsWithValue(t, want, func() { Middleware(WithPolicy(bad)) })

	assert.PanicsWithValue(t, `httpretry: WithHostPolicy("x:abc"): bad port "abc"`,
		func() { New(policyTestTransport{}, WithHostPolicy("x:abc", DefaultPolicy())) })
	assert.Panics(t, func() { New(policyTestTransport{}, WithHostPolicy("api.example.com", bad)) })

	assert.NotPanics(t, func() { New(policyTestTransport{}, WithPolicy(DefaultPolicy()), WithPolicy(Policy{})) })
}

func TestNewPolicyTableErrors(t *testing.T) {
	bad := Policy{MaxRetries: 17}
	_, err := newPolicyTable(bad, nil)
	require.ErrorIs(t, err, ErrInvalidPolicy)
	assert.Equal(t, "httpretry: invalid policy: MaxRetries 17 is outside 0..16", err.Error())

	_, err = newPolicyTable(DefaultPolicy(), []hostOption{{"ok.example", DefaultPolicy()}, {"api.example.com", bad}})
	require.ErrorIs(t, err, ErrInvalidPolicy)
	assert.Equal(t, `httpretry: WithHostPolicy("api.example.com"): httpretry: invalid policy: MaxRetries 17 is outside 0..16`, err.Error())

	// The first bad option is the one reported, as New reports it.
	_, err = newPolicyTable(DefaultPolicy(), []hostOption{{"x:abc", bad}, {"y", bad}})
	require.Error(t, err)
	assert.NotErrorIs(t, err, ErrInvalidPolicy)
	assert.Equal(t, `httpretry: WithHostPolicy("x:abc"): bad port "abc"`, err.Error())

	table, err := newPolicyTable(Policy{MaxRetries: 1}, []hostOption{{"h:8443", Policy{MaxRetries: 2}}})
	require.NoError(t, err)
	assert.Equal(t, 1, table.all.maxRetries)
	assert.Equal(t, 2, table.hosts["h"].ports["8443"].maxRetries)
}

func TestResolvePolicyDefaults(t *testing.T) {
	hp := resolvePolicy(Policy{MaxRetries: 2})
	assert.Equal(t, 2, hp.maxRetries)
	assert.Equal(t, defaultBackoff, hp.backoff)
	assert.Equal(t, 30*time.Second, hp.waitBudget)
	assert.Equal(t, 30*time.Second, hp.maxRetryAfter)
	assert.Equal(t, int64(1<<20), hp.maxReplay)
	assert.Equal(t, []string{"Idempotency-Key", "X-Idempotency-Key"}, hp.idemHeaders)
	assert.Empty(t, hp.autoKeyHeader)
	for code := range 640 {
		want := code == 429 || code == 502 || code == 503 || code == 504
		assert.Equal(t, want, hp.retryOn.has(code), "status %d", code)
	}

	hp = resolvePolicy(Policy{
		MaxRetries:         1,
		Backoff:            NoBackoff(),
		RetryOn:            []int{},
		MaxReplayBytes:     -1,
		IdempotencyHeader:  "x-request-token",
		AutoIdempotencyKey: true,
	})
	assert.Equal(t, statusSet{}, hp.retryOn)
	assert.Equal(t, int64(-1), hp.maxReplay)
	assert.Equal(t, time.Duration(-1), hp.waitBudget) // NoBackoff: nothing to bound
	assert.Equal(t, []string{"X-Request-Token"}, hp.idemHeaders)
	assert.Equal(t, "X-Request-Token", hp.autoKeyHeader)

	hp = resolvePolicy(Policy{MaxRetries: 1, AutoIdempotencyKey: true, Backoff: Fixed(time.Second).Unbudgeted()})
	assert.Equal(t, "Idempotency-Key", hp.autoKeyHeader)
	assert.Equal(t, time.Duration(-1), hp.waitBudget)
}

func TestPolicyTableLookup(t *testing.T) {
	all, any, p8443, p443, v6 := &hostPolicy{}, &hostPolicy{}, &hostPolicy{}, &hostPolicy{}, &hostPolicy{}
	named := map[*hostPolicy]string{all: "all", any: "any", p8443: "api:8443", p443: "portonly:443", v6: "[::1]:8080"}
	table := policyTable{all: all, hosts: map[string]*hostRules{
		"api.example.com":      {any: any, ports: map[string]*hostPolicy{"8443": p8443}},
		"portonly.example.com": {ports: map[string]*hostPolicy{"443": p443}},
		"::1":                  {ports: map[string]*hostPolicy{"8080": v6}},
	}}
	tests := []struct {
		url  string
		want *hostPolicy
	}{
		{"https://api.example.com:8443/x", p8443},
		{"http://api.example.com:8443", p8443},
		{"https://API.Example.COM:8443", p8443},
		{"https://api.example.com/", any},
		{"http://api.example.com:9000/", any},
		{"HTTPS://API.EXAMPLE.COM", any},
		{"https://portonly.example.com/", p443},
		{"https://portonly.example.com:443/", p443},
		{"wss://portonly.example.com", p443},
		{"https://PortOnly.Example.com", p443},
		{"http://portonly.example.com/", all},
		{"https://portonly.example.com:8443/", all},
		{"http://[::1]:8080/", v6},
		{"http://[::1]:8081/", all},
		{"http://[::1]/", all},
		{"https://other.example.com/", all},
		{"https://api.example.com.evil.example/", all},
		{"https://sub.api.example.com/", all},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			u, err := url.Parse(tt.url)
			require.NoError(t, err)
			got := table.lookup(originOf(u))
			assert.Same(t, tt.want, got, "want %s, got %s", named[tt.want], named[got])
		})
	}

	empty := policyTable{all: all}
	assert.Same(t, all, empty.lookup(origin{"https", "api.example.com:8443"}))
}

func TestPolicyTableFromOptions(t *testing.T) {
	byRetries := func(n int) Policy { return Policy{MaxRetries: n} }
	// host:port wins over host whatever the order, and a later WithPolicy
	// does not reset host policies.
	tr := New(policyTestTransport{},
		WithHostPolicy("API.example.com:8443", byRetries(2)),
		WithHostPolicy("api.example.com", byRetries(1)),
		WithHostPolicy("[::1]:8080", byRetries(4)),
		WithHostPolicy("h", byRetries(5)),
		WithHostPolicy("h:443", byRetries(6)),
		WithPolicy(byRetries(3)),
	)
	tests := []struct {
		url  string
		want int
	}{
		{"https://api.example.com:8443/", 2},
		{"https://api.example.com/", 1},
		{"http://api.example.com:8080/", 1},
		{"http://[::1]:8080/", 4},
		{"http://[::1]:9/", 3},
		{"https://h/", 6},
		{"http://h/", 5},
		{"https://elsewhere/", 3},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			u, err := url.Parse(tt.url)
			require.NoError(t, err)
			assert.Equal(t, tt.want, tr.policies.lookup(originOf(u)).maxRetries)
		})
	}
}

// TestBudgetKey: the budget a request is charged to is keyed by its
// origin's host in the one canonical form, with the scheme's own default
// port dropped, and no other.
func TestBudgetKey(t *testing.T) {
	tests := []struct {
		url  string
		want string
	}{
		{"https://h", "h"},
		{"https://h:443", "h"},
		{"https://h:443/path?q=1", "h"},
		{"https://h:0443", "h"},
		{"http://h:80", "h"},
		{"http://h", "h"},
		{"https://h:80", "h:80"},
		{"http://h:443", "h:443"},
		{"https://h:8443", "h:8443"},
		{"http://h:08080", "h:8080"},
		{"https://H.Example:443", "h.example"},
		{"ws://h:80", "h"},
		{"wss://h:443", "h"},
		{"ftp://h:21", "h:21"},
		{"https://[::1]:443", "[::1]"},
		{"http://[::1]:8080", "[::1]:8080"},
		{"https://[::1]", "[::1]"},
		{"https://[FE80::1]:8443", "[fe80::1]:8443"},
		{"https://127.0.0.1:443", "127.0.0.1"},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			assert.Equal(t, tt.want, originOf(mustURL(t, tt.url)).host)
		})
	}

	u := &url.URL{Scheme: "https", Host: "api.example.com:443"}
	assert.Zero(t, testing.AllocsPerRun(100, func() { _ = originOf(u) }), "a default port is cut off, not copied")
	u = &url.URL{Scheme: "https", Host: "api.example.com:8443"}
	assert.Zero(t, testing.AllocsPerRun(100, func() { _ = originOf(u) }))
}

// TestOneBudgetPerOrigin: https://h:80 and https://h are two origins, two
// budgets, while http://h:80 and http://h are one; Range shows each
// origin's key, and events report each origin as its key says.
func TestOneBudgetPerOrigin(t *testing.T) {
	budgets := NewBudgets()
	var origins []string
	// Hold -1: a host that failed 4 times in a row would give the later
	// requests' resends up at once (point 22), and this counts keys.
	rt := New(policyTestTransport{}, WithPolicy(Policy{MaxRetries: 1, Backoff: NoBackoff(), Budget: BudgetConfig{Hold: -1}}), WithBudgets(budgets),
		WithObserver(func(e Event) { origins = append(origins, e.Origin) }))
	for _, u := range []string{"https://h:80/", "https://H/", "https://h:443/", "http://h:80/", "http://h/", "http://h:443/", "https://h:0443/"} {
		req, err := http.NewRequest(http.MethodGet, u, nil)
		require.NoError(t, err)
		_, err = rt.RoundTrip(req)
		require.Error(t, err)
	}
	requests := map[string]int{}
	budgets.Range(func(host string, s BudgetStats) bool {
		requests[host] = s.Requests
		return true
	})
	assert.Equal(t, map[string]int{"h:80": 1, "h": 5, "h:443": 1}, requests)
	// Each request: a retry event and a give-up, both to its own origin.
	assert.Equal(t, []string{
		"https://h:80", "https://h:80",
		"https://h", "https://h", "https://h", "https://h",
		"http://h", "http://h", "http://h", "http://h",
		"http://h:443", "http://h:443",
		"https://h", "https://h",
	}, origins)

	// A fallback's budget is its origin's too: https://h:80 is not https://h.
	budgets, origins = NewBudgets(), nil
	p := Policy{MaxRetries: 0, Fallbacks: []string{"https://H:80", "https://h:443"}}
	rt = New(policyTestTransport{}, WithPolicy(p), WithBudgets(budgets),
		WithObserver(func(e Event) { origins = append(origins, e.Origin) }))
	req, err := http.NewRequest(http.MethodGet, "https://h:0443/", nil)
	require.NoError(t, err)
	_, err = rt.RoundTrip(req)
	require.Error(t, err)
	clear(requests)
	budgets.Range(func(host string, s BudgetStats) bool {
		requests[host] = s.Requests
		return true
	})
	assert.Equal(t, map[string]int{"h:80": 1, "h": 1}, requests, "https://h:443 is the request's own origin")
	assert.Equal(t, []string{"https://h:80", "https://h:80"}, origins)
}

func TestStatusSet(t *testing.T) {
	var s statusSet
	for _, c := range []int{0, 63, 64, 200, 503, 639} {
		s.add(c)
	}
	tests := []struct {
		code int
		want bool
	}{
		{0, true},
		{1, false},
		{62, false},
		{63, true},
		{64, true},
		{65, false},
		{200, true},
		{503, true},
		{504, false},
		{638, false},
		{639, true},
		{640, false},
		{703, false}, // 639+64: would alias bit 639 without the bound
		{-1, false},
		{-64, false},
		{math.MaxInt, false},
		{math.MinInt, false},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, s.has(tt.code), "has(%d)", tt.code)
	}

	var empty statusSet
	for c := -1; c <= 640; c++ {
		require.False(t, empty.has(c), "empty has(%d)", c)
	}
	assert.Panics(t, func() { s.add(640) }, "add beyond the set is a programming error Validate prevents")
}

// TestHostRulePortsInPlainDecimal: a host rule's port has one spelling. A
// leading zero or a sign is rejected, where "127.0.0.1:08080" used to be
// accepted and never applied; a request URL that spells its port with a
// leading zero, which net/http dials as the plain port, gets that port's
// rule, budget and origin.
func TestHostRulePortsInPlainDecimal(t *testing.T) {
	for _, host := range []string{"127.0.0.1:08080", "h:0443", "h:+443", "[::1]:080"} {
		assert.PanicsWithValue(t, fmt.Sprintf(`httpretry: WithHostPolicy(%q): bad port %q`, host, host[strings.LastIndexByte(host, ':')+1:]),
			func() { New(policyTestTransport{}, WithHostPolicy(host, DefaultPolicy())) }, host)
	}
	_, err := ParseConfig([]byte(`{"hosts": {"h:443": {}, "h:0443": {}}}`))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `hosts["h:0443"]: bad port "0443"`)

	up := newUpstream(t, always(http.StatusServiceUnavailable))
	u := mustURL(t, up.URL)
	budgets := NewBudgets()
	var rec recorder
	rt := New(nil, WithPolicy(Policy{}), WithHostPolicy(u.Host, fastPolicy(2)), WithBudgets(budgets), WithObserver(rec.observe))
	defer rt.CloseIdleConnections()
	req, err := http.NewRequest(http.MethodGet, "http://127.0.0.1:0"+u.Port()+"/x", nil)
	require.NoError(t, err)
	resp, err := rt.RoundTrip(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, int64(3), up.calls.Load(), "the rule for the plain port applies")
	for _, e := range rec.all() {
		assert.Equal(t, "http://"+u.Host, e.Origin)
	}
}

// A Hedge under MaxRetries 0 validated and never sent a copy: a copy
// counts against MaxRetries. Validate now says so (DESIGN point 23),
// whichever way the Hedge would hedge, and New refuses it.
func TestValidateHedgeNeedsRetries(t *testing.T) {
	const want = "httpretry: invalid policy: Hedge a copy is a resend: maxRetries must be at least 1"
	for _, h := range []Hedge{
		{After: 50 * time.Millisecond},
		{After: time.Nanosecond, Max: 3},
		{Quantile: 0.95},
		{Quantile: 0.95, MinAfter: time.Millisecond},
	} {
		p := DefaultPolicy()
		p.MaxRetries, p.Hedge = 0, h
		assert.EqualError(t, p.Validate(), want, "%+v", h)
		assert.ErrorIs(t, p.Validate(), ErrInvalidPolicy)
		assert.PanicsWithValue(t, want, func() { New(nil, WithPolicy(p)) })
		assert.PanicsWithValue(t, `httpretry: WithHostPolicy("a.example"): `+want, func() {
			New(nil, WithHostPolicy("a.example", Policy{Hedge: h}))
		})
		p.MaxRetries = 1
		assert.NoError(t, p.Validate(), "%+v", h)
	}
	// A Hedge that sends nothing needs no resends; its own problems are
	// reported as before, and only those.
	assert.NoError(t, Policy{}.Validate())
	assert.Equal(t, []problem{{"Hedge.After", "-1s is negative"}}, Policy{Hedge: Hedge{After: -time.Second}}.problems())
	assert.Equal(t, []problem{{"Hedge.Max", "2 needs Hedge.After or Hedge.Quantile"}}, Policy{Hedge: Hedge{Max: 2}}.problems())
	assert.Equal(t, []problem{
		{"MaxRetries", "-1 is outside 0..16"},
		{"Hedge.Max", "17 is outside 0..16"},
	}, Policy{MaxRetries: -1, Hedge: Hedge{After: time.Second, Max: 17}}.problems(), "only MaxRetries 0 is no resend")
}

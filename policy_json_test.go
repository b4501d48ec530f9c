package httpretry

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestJSONNamesAreGoNames checks that every field but RetryIf is in JSON,
// in Go's order, under its Go name in lower camel case: the rule jsonName
// relies on to print Validate's problems under JSON paths.
func TestJSONNamesAreGoNames(t *testing.T) {
	var (
		p Policy
		b BudgetConfig
		h Hedge
		d Demote
		r Resume
	)
	for _, tt := range []struct {
		v      reflect.Value
		fields []jsonField
	}{
		{reflect.ValueOf(&p).Elem(), p.jsonFields()},
		{reflect.ValueOf(&b).Elem(), b.jsonFields()},
		{reflect.ValueOf(&h).Elem(), h.jsonFields()},
		{reflect.ValueOf(&d).Elem(), d.jsonFields()},
		{reflect.ValueOf(&r).Elem(), r.jsonFields()},
	} {
		var names []string
		for i := range tt.v.NumField() {
			f := tt.v.Type().Field(i)
			if f.Name == "RetryIf" {
				continue
			}
			names = append(names, f.Name)
			require.Less(t, len(names)-1, len(tt.fields), "%s.%s has no JSON", tt.v.Type(), f.Name)
			jf := tt.fields[len(names)-1]
			assert.Equal(t, jsonName(f.Name), jf.name)
			assert.Equal(t, tt.v.Field(i).Addr().Interface(), jf.ptr, jf.name)
		}
		assert.Len(t, tt.fields, len(names))
	}
	assert.Equal(t, "budget.minRetries", jsonName("Budget.MinRetries"))
	assert.Equal(t, "fallbacks[2]", jsonName("Fallbacks[2]"))
}

func TestPolicyMarshalJSON(t *testing.T) {
	data, err := json.Marshal(DefaultPolicy())
	require.NoError(t, err)
	assert.Equal(t, `{"maxRetries":3,"backoff":"exponentialJitter(100ms, 2s)","retryOn":[429,502,503,504],`+
		`"perTryTimeout":"0s","deadline":"0s","maxRetryAfter":"30s","maxReplayBytes":1048576,`+
		`"idempotencyHeader":"","autoIdempotencyKey":false,`+
		`"budget":{"percent":20,"minRetries":10,"window":"10s","disabled":false,"hold":2,"holdFor":"1s"},`+
		`"hedge":{"after":"0s","max":0,"quantile":0,"minAfter":"0s","sameOrigin":false},"fallbacks":null,`+
		`"demote":{"after":5,"for":"0s","max":"0s"},"resume":{"max":3,"idle":"0s","minBytes":0},"prefetch":0}`, string(data))

	data, err = json.Marshal(Policy{RetryOn: []int{}, Fallbacks: []string{"https://b.example"}, RetryIf: func(*http.Response, error) bool { return true }})
	require.NoError(t, err)
	assert.Contains(t, string(data), `"backoff":"exponentialJitter(100ms, 2s)"`, "the zero Backoff is defaultBackoff")
	assert.Contains(t, string(data), `"retryOn":[]`, "empty is not nil: only transport errors")
	assert.Contains(t, string(data), `"fallbacks":["https://b.example"]`)
	assert.NotContains(t, strings.ToLower(string(data)), "retryif")
}

// jsonPolicies are policies that JSON carries exactly.
func jsonPolicies() map[string]Policy {
	full := Policy{
		MaxRetries:         16,
		Backoff:            Exponential(time.Nanosecond, maxDuration).Unbudgeted(),
		RetryOn:            []int{500, 503},
		PerTryTimeout:      1500 * time.Millisecond,
		Deadline:           time.Hour + time.Nanosecond,
		MaxRetryAfter:      -time.Second, // invalid, but JSON carries it
		MaxReplayBytes:     -1,
		IdempotencyHeader:  "X-Request-Token",
		AutoIdempotencyKey: true,
		Budget:             BudgetConfig{Percent: 1000, MinRetries: -1, Window: time.Minute, Disabled: true},
		Hedge:              Hedge{After: 50 * time.Millisecond, Max: 2},
		Fallbacks:          []string{"https://b.example", "http://10.0.0.7:8080/"},
		Demote:             Demote{After: 100, For: 250 * time.Millisecond, Max: time.Hour + time.Nanosecond},
	}
	return map[string]Policy{
		"default":    DefaultPolicy(),
		"full":       full,
		"zero":       {Backoff: defaultBackoff},
		"no backoff": {MaxRetries: 1, Backoff: NoBackoff(), RetryOn: []int{}, Fallbacks: []string{}},
		"wait budget": {MaxRetries: 2, Backoff: Fixed(time.Second).WithWaitBudget(3 * time.Second),
			Budget: BudgetConfig{Window: maxDuration}, Hedge: Hedge{After: 1}},
		"learned hedge": {MaxRetries: 3, Backoff: defaultBackoff,
			Hedge: Hedge{After: 50 * time.Millisecond, Max: 1, Quantile: 0.999, MinAfter: 1500 * time.Microsecond}},
	}
}

func TestPolicyJSONRoundTrip(t *testing.T) {
	for name, p := range jsonPolicies() {
		t.Run(name, func(t *testing.T) {
			data, err := json.Marshal(p)
			require.NoError(t, err)
			// Whatever it is decoded over, the text gives p back.
			for _, over := range []Policy{{}, DefaultPolicy(), jsonPolicies()["full"]} {
				got := over
				require.NoError(t, json.Unmarshal(data, &got))
				assert.Equal(t, p, got)
			}
		})
	}
}

func TestPolicyUnmarshalStartsFromDefault(t *testing.T) {
	retryIf := func(*http.Response, error) bool { return false }
	p := jsonPolicies()["full"]
	p.RetryIf = retryIf
	require.NoError(t, json.Unmarshal([]byte(`{"maxRetries": 1, "retryOn": [500], "budget": {"window": "1m"},
		"hedge": {"after": "20ms"}, "fallbacks": null, "perTryTimeout": null, "demote": {"for": "2s"}}`), &p))

	want := DefaultPolicy()
	want.MaxRetries = 1
	want.RetryOn = []int{500}
	want.Budget.Window = time.Minute
	want.Hedge.After = 20 * time.Millisecond
	want.Demote.For = 2 * time.Second
	assert.NotNil(t, p.RetryIf, "RetryIf is not part of JSON and is kept")
	p.RetryIf = nil
	assert.Equal(t, want, p, "every field left out is DefaultPolicy's, whatever p held")

	require.NoError(t, json.Unmarshal([]byte(`{"retryOn": null}`), &p))
	assert.Nil(t, p.RetryOn, "null makes RetryOn nil: the default statuses")
	require.NoError(t, json.Unmarshal([]byte(`null`), &p))
	assert.Nil(t, p.RetryOn, "null leaves p as it is")
	require.NoError(t, json.Unmarshal([]byte(`{}`), &p))
	assert.Equal(t, DefaultPolicy(), p)
}

// TestPolicyUnmarshalAgreesWithParseConfig: one meaning of left out. A
// Policy decoded from JSON, into whatever it held, is ParseConfig's
// default of the same text, and a Config decoded as a field is ParseConfig's.
func TestPolicyUnmarshalAgreesWithParseConfig(t *testing.T) {
	for _, doc := range []string{
		`{"perTryTimeout": "1s"}`,
		`{}`,
		`{"maxRetries": 0}`,
		`{"budget": {"percent": 5}, "hedge": {"max": 2, "after": "1s"}}`,
		`{"retryOn": null, "fallbacks": ["https://b.example"]}`,
		`{"demote": {"max": "1m"}}`,
		`{"demote": {"after": 0}}`,
	} {
		cfg, err := ParseConfig([]byte(`{"default": ` + doc + `}`))
		require.NoError(t, err, doc)
		for _, over := range []Policy{{}, DefaultPolicy(), jsonPolicies()["full"]} {
			p := over
			require.NoError(t, json.Unmarshal([]byte(doc), &p), doc)
			assert.Equal(t, cfg.Default, p, doc)
		}

		var file struct {
			Retry Config `json:"retry"`
		}
		require.NoError(t, json.Unmarshal([]byte(`{"retry": {"default": `+doc+`}}`), &file), doc)
		assert.Equal(t, cfg, file.Retry, doc)
	}
}

func TestPolicyUnmarshalErrors(t *testing.T) {
	tests := []struct {
		name, json, want string
	}{
		{"unknown", `{"maxretries": 1}`, `maxretries: unknown field (did you mean maxRetries?)`},
		{"type", `{"maxRetries": "3"}`, `maxRetries: "3": want an integer`},
		{"float", `{"maxRetries": 1.5}`, `maxRetries: 1.5: want an integer`},
		{"bool", `{"autoIdempotencyKey": "yes"}`, `autoIdempotencyKey: "yes": want true or false`},
		{"duration number", `{"perTryTimeout": 250}`, `perTryTimeout: 250: want a duration such as "250ms"`},
		{"duration text", `{"deadline": "5 s"}`, `deadline: "5 s": want a duration such as "250ms"`},
		{"backoff", `{"backoff": "fixed(0s)"}`, `backoff: "fixed(0s)": the wait must be positive; use none for no wait`},
		{"backoff type", `{"backoff": {"fixed": "1s"}}`, `backoff: {"fixed":"1s"}: want a backoff such as "exponentialJitter(100ms, 2s)"`},
		{"list", `{"retryOn": 503}`, `retryOn: 503: want a list, each an integer`},
		{"list element", `{"retryOn": [503, "504", null]}`, `retryOn[1]: "504": want an integer; retryOn[2]: null: want an integer`},
		{"strings", `{"fallbacks": ["https://b.example", 7]}`, `fallbacks[1]: 7: want a string`},
		{"nested unknown", `{"budget": {"percentage": 5}, "hedge": {"delay": "1s"}}`, `budget.percentage: unknown field; hedge.delay: unknown field`},
		{"nested type", `{"budget": []}`, `budget: []: want an object`},
		{"demote", `{"demote": {"after": "5", "every": "1s", "max": 30}}`,
			`demote.after: "5": want an integer; demote.every: unknown field; demote.max: 30: want a duration such as "250ms"`},
		{"twice", `{"maxRetries": 1, "maxRetries": 2}`, `maxRetries: given twice`},
		{"not an object", `[1, 2]`, `[1,2]: want an object`},
		{"long excerpt", `{"idempotencyHeader": ["x` + strings.Repeat("é", 30) + `"]}`,
			`idempotencyHeader: ["x` + strings.Repeat("é", 18) + `…: want a string`},
		{"many", `{"maxRetries": "x", "backof": "none", "budget": {"window": 10}}`,
			`maxRetries: "x": want an integer; backof: unknown field (did you mean backoff?); budget.window: 10: want a duration such as "250ms"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := DefaultPolicy()
			err := json.Unmarshal([]byte(tt.json), &p)
			require.Error(t, err)
			assert.Equal(t, "httpretry: policy: "+tt.want, err.Error())
			assert.NotErrorIs(t, err, ErrInvalidPolicy, "decoding does not validate")
			assert.Equal(t, DefaultPolicy(), p, "unchanged on error")
		})
	}
	p := DefaultPolicy()
	assert.EqualError(t, p.UnmarshalJSON([]byte(`{"maxRetries": 1`)), "httpretry: policy: invalid JSON")
	assert.NoError(t, json.Unmarshal([]byte(`{"maxRetries": 20, "budget": {"percent": -1}}`), &p), "validation is New's and ParseConfig's")
}

// nestedJSON is the object under name in p's JSON, as json.Marshal of a
// Policy writes it.
func nestedJSON(t *testing.T, p Policy, name string) string {
	t.Helper()
	data, err := json.Marshal(p)
	require.NoError(t, err)
	var members map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(data, &members))
	return string(members[name])
}

func TestBudgetAndHedgeJSON(t *testing.T) {
	assert.Equal(t, `{"percent":5,"minRetries":0,"window":"1m0s","disabled":false,"hold":0,"holdFor":"0s"}`,
		nestedJSON(t, Policy{Budget: BudgetConfig{Percent: 5, Window: time.Minute}}, "budget"))
	p := Policy{Budget: BudgetConfig{Percent: 5, MinRetries: 3, Window: time.Second}}
	require.NoError(t, json.Unmarshal([]byte(`{"budget": {"minRetries": -1}}`), &p))
	want := DefaultPolicy().Budget
	want.MinRetries = -1
	assert.Equal(t, want, p.Budget, "a field left out is DefaultPolicy's, whatever the budget held")
	assert.EqualError(t, json.Unmarshal([]byte(`{"budget": {"min": 1}}`), &p), "httpretry: policy: budget.min: unknown field")
	assert.Equal(t, want, p.Budget, "unchanged on error")

	assert.Equal(t, `{"after":"30ms","max":2,"quantile":0,"minAfter":"0s","sameOrigin":false}`,
		nestedJSON(t, Policy{Hedge: Hedge{After: 30 * time.Millisecond, Max: 2}}, "hedge"))
	p = Policy{Hedge: Hedge{Max: 2}}
	require.NoError(t, json.Unmarshal([]byte(`{"hedge": {"after": "1s"}}`), &p))
	assert.Equal(t, Hedge{After: time.Second}, p.Hedge, "a field left out is DefaultPolicy's, whatever the hedge held")
	assert.EqualError(t, json.Unmarshal([]byte(`{"hedge": {"after": "2s", "max": "2"}}`), &p),
		`httpretry: policy: hedge.max: "2": want an integer`)
	assert.Equal(t, Hedge{After: time.Second}, p.Hedge, "unchanged on error")
}

// A BudgetConfig reads and writes JSON alone, as DESIGN's contract says,
// in the form it has under "budget" in a Policy.
func TestBudgetConfigJSONAlone(t *testing.T) {
	data, err := json.Marshal(BudgetConfig{Percent: 5, Window: time.Minute})
	require.NoError(t, err)
	assert.Equal(t, `{"percent":5,"minRetries":0,"window":"1m0s","disabled":false,"hold":0,"holdFor":"0s"}`, string(data))
	b := BudgetConfig{Percent: 5, MinRetries: 3, Window: time.Second}
	require.NoError(t, json.Unmarshal([]byte(`{"minRetries": -1}`), &b))
	want := DefaultPolicy().Budget
	want.MinRetries = -1
	assert.Equal(t, want, b, "a field left out is DefaultPolicy's, whatever b held")
	assert.EqualError(t, json.Unmarshal([]byte(`{"min": 1, "window": 5}`), &b),
		`httpretry: budget: min: unknown field; window: 5: want a duration such as "250ms"`)
	assert.Equal(t, want, b, "unchanged on error")
	require.NoError(t, json.Unmarshal([]byte(`null`), &b))
	assert.Equal(t, want, b, "null leaves it as it is")
	assert.EqualError(t, b.UnmarshalJSON([]byte(`{`)), "httpretry: budget: invalid JSON")
}

// The four fields of Hedge in JSON: written and read back exactly, a
// field left out of a host's "hedge" taken from the default's, and a bad
// value reported under its JSON path.
func TestLearnedHedgeJSON(t *testing.T) {
	h := Hedge{After: 50 * time.Millisecond, Max: 1, Quantile: 0.95, MinAfter: 2 * time.Millisecond}
	data, err := json.Marshal(Policy{Hedge: h})
	require.NoError(t, err)
	assert.Equal(t, `{"after":"50ms","max":1,"quantile":0.95,"minAfter":"2ms","sameOrigin":false}`, nestedJSON(t, Policy{Hedge: h}, "hedge"))
	var got Policy
	require.NoError(t, json.Unmarshal(data, &got))
	assert.Equal(t, h, got.Hedge)
	require.NoError(t, json.Unmarshal([]byte(`{"hedge": {"quantile": 0.99}}`), &got))
	assert.Equal(t, Hedge{Quantile: 0.99}, got.Hedge, "a field left out is DefaultPolicy's")
	assert.EqualError(t, json.Unmarshal([]byte(`{"hedge": {"quantile": "p95", "minAfter": 2}}`), &got),
		`httpretry: policy: hedge.quantile: "p95": want a number; hedge.minAfter: 2: want a duration such as "250ms"`)

	cfg, err := ParseConfig([]byte(`{
		"default": {"hedge": {"quantile": 0.95, "minAfter": "2ms", "after": "50ms"}},
		"hosts": {
			"api.example.com": {"hedge": {"max": 2}},
			"b.example": {"hedge": {"quantile": 0.99, "after": "0s"}}
		}
	}`))
	require.NoError(t, err)
	assert.Equal(t, Hedge{After: 50 * time.Millisecond, Quantile: 0.95, MinAfter: 2 * time.Millisecond}, cfg.Default.Hedge)
	assert.Equal(t, Hedge{After: 50 * time.Millisecond, Max: 2, Quantile: 0.95, MinAfter: 2 * time.Millisecond},
		cfg.Hosts["api.example.com"].Hedge, "the default's hedge, max aside")
	assert.Equal(t, Hedge{Quantile: 0.99, MinAfter: 2 * time.Millisecond}, cfg.Hosts["b.example"].Hedge)

	_, err = ParseConfig([]byte(`{"default": {"hedge": {"minAfter": "2ms"}}, "hosts": {"a": {"hedge": {"quantile": 1}}}}`))
	require.ErrorIs(t, err, ErrInvalidPolicy)
	assert.Equal(t, `httpretry: config: default.hedge.minAfter: 2ms needs Hedge.Quantile; `+
		`hosts["a"].hedge.quantile: 1 is outside [0.5, 0.999]`, err.Error())
}

func TestDemoteJSON(t *testing.T) {
	assert.Equal(t, `{"after":5,"for":"1s","max":"30s"}`,
		nestedJSON(t, Policy{Demote: Demote{After: 5, For: time.Second, Max: 30 * time.Second}}, "demote"))
	p := Policy{Demote: Demote{After: 9, Max: time.Minute}}
	require.NoError(t, json.Unmarshal([]byte(`{"demote": {"for": "2s"}}`), &p))
	assert.Equal(t, Demote{After: 5, For: 2 * time.Second}, p.Demote, "a field left out is DefaultPolicy's, whatever the demote held")
	require.NoError(t, json.Unmarshal([]byte(`{"demote": {"after": -1}}`), &p))
	assert.Equal(t, Demote{After: -1}, p.Demote, "-1 turns it off")
	assert.EqualError(t, json.Unmarshal([]byte(`{"demote": {"after": 2, "for": "soon"}}`), &p),
		`httpretry: policy: demote.for: "soon": want a duration such as "250ms"`)
	assert.Equal(t, Demote{After: -1}, p.Demote, "unchanged on error")
}

func TestUnknownFieldSuggestsTheNearestName(t *testing.T) {
	tests := []struct {
		name, json, want string
	}{
		{"swapped letters", `{"default": {"maxRetires": 2}}`,
			`default.maxRetires: unknown field (did you mean maxRetries?)`},
		{"case", `{"default": {"PerTryTimeout": "1s"}}`,
			`default.PerTryTimeout: unknown field (did you mean perTryTimeout?)`},
		{"letter dropped, nested", `{"default": {"hedge": {"quantle": 0.9}}}`,
			`default.hedge.quantle: unknown field (did you mean quantile?)`},
		{"letter added, in a host", `{"hosts": {"a.example": {"demote": {"afterr": 3}}}}`,
			`hosts["a.example"].demote.afterr: unknown field (did you mean after?)`},
		{"letter changed", `{"default": {"budget": {"minRetriex": 3}}}`,
			`default.budget.minRetriex: unknown field (did you mean minRetries?)`},
		{"two edits in a long name", `{"default": {"autoIdempotncyKy": true}}`,
			`default.autoIdempotncyKy: unknown field (did you mean autoIdempotencyKey?)`},
		{"too far", `{"default": {"budget": {"percentage": 5}}}`,
			`default.budget.percentage: unknown field`},
		{"short names need an exact length", `{"default": {"hedge": {"min": 1}}}`,
			`default.hedge.min: unknown field`},
		{"nothing alike", `{"default": {"timeout": "1s"}}`, `default.timeout: unknown field`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseConfig([]byte(tt.json))
			require.Error(t, err)
			assert.Equal(t, "httpretry: config: "+tt.want, err.Error())
		})
	}
}

func TestEditDistance(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"", "max", 3},
		{"max", "max", 0},
		{"maxRetires", "maxRetries", 1}, // a swap is one edit
		{"windw", "window", 1},
		{"window", "windw", 1},
		{"min", "max", 2},
		{"ca", "abc", 3}, // optimal string alignment, not Damerau's unrestricted form
		{"percentage", "percent", 3},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, editDistance(tt.a, tt.b), "%q %q", tt.a, tt.b)
	}
}

// A duration that is not 0 as written but below 1ns was read as 0, which
// means none: "perTryTimeout": "0.5ns" set no bound at all. Every duration
// of the schema now refuses it, under its path, in ParseConfig's default
// and host entries and in Policy.UnmarshalJSON alike; 0 as written stays
// 0, and a duration of 1ns or more is read as time.ParseDuration reads it.
func TestJSONDurationBelowOneNanosecond(t *testing.T) {
	var p Policy
	paths := slices.Sorted(maps.Keys(durationPaths(&p)))
	assert.Equal(t, []string{"budget.holdFor", "budget.window", "deadline", "demote.for", "demote.max", "hedge.after", "hedge.minAfter",
		"maxRetryAfter", "perTryTimeout", "resume.idle"}, paths)
	for _, path := range paths {
		for _, v := range []string{"0.5ns", "0.9ns", "0.0000001ms", "0.0005us", "0.0000000009s", "-0.5ns", "0.5ns0.5ns", "0.0000000000001h", "0.9999999999ns"} {
			doc := atPath(path, strconv.Quote(v))
			problem := fmt.Sprintf(`%q: not 0, yet below 1ns, the shortest duration`, v)
			_, err := ParseConfig([]byte(`{"default": ` + doc + `}`))
			assert.EqualError(t, err, "httpretry: config: default."+path+": "+problem)
			assert.ErrorIs(t, err, ErrInvalidPolicy)
			_, err = ParseConfig([]byte(`{"hosts": {"a.example": ` + doc + `}}`))
			assert.EqualError(t, err, `httpretry: config: hosts["a.example"].`+path+": "+problem)
			p := DefaultPolicy()
			err = json.Unmarshal([]byte(doc), &p)
			assert.EqualError(t, err, "httpretry: policy: "+path+": "+problem)
			assert.ErrorIs(t, err, ErrInvalidPolicy)
			assert.Equal(t, DefaultPolicy(), p, "unchanged on error")
		}
		for v, want := range map[string]time.Duration{
			"0": 0, "0s": 0, "0ns": 0, "0.0s": 0, "-0s": 0, "+0ms": 0, "0h0m0.000s": 0, ".0us": 0,
			"1ns": 1, "1.5ns": 1, "0.0000015ms": 1, "2.9ns": 2, "1.0000000001s": time.Second,
		} {
			p := Policy{Hedge: Hedge{Quantile: 0.9}} // so that minAfter may be set
			require.NoError(t, json.Unmarshal([]byte(atPath(path, strconv.Quote(v))), &p), "%s %s", path, v)
			assert.Equal(t, want, *durationPaths(&p)[path], "%s %s", path, v)
		}
	}

	// The durations of a backoff's text too.
	for _, b := range []string{"fixed(0.5ns)", "exponential(0.5ns, 1s)", "exponentialJitter(1ms, 0.9ns)",
		"exponential(1ms, 1s).WithWaitBudget(0.5ns)"} {
		_, err := ParseConfig([]byte(`{"default": {"backoff": ` + strconv.Quote(b) + `}}`))
		require.Error(t, err, b)
		assert.True(t, strings.HasPrefix(err.Error(), `httpretry: config: default.backoff: "`+b[:min(len(b), 39)]), err.Error())
		assert.True(t, strings.HasSuffix(err.Error(), `ns": not 0, yet below 1ns, the shortest duration`), err.Error())
		assert.ErrorIs(t, err, ErrInvalidPolicy, b)
	}
	cfg, err := ParseConfig([]byte(`{"default": {"backoff": "exponential(1ms, 1s).WithWaitBudget(0.0s)"}}`))
	require.NoError(t, err)
	assert.Equal(t, Exponential(time.Millisecond, time.Second).WithWaitBudget(0), cfg.Default.Backoff)
	var b Backoff
	assert.EqualError(t, b.UnmarshalText([]byte("fixed(0.5ns)")),
		`httpretry: backoff "fixed(0.5ns)": "0.5ns": not 0, yet below 1ns, the shortest duration`)
}

// jsonAlone checks one struct of the schema on its own: v is written as it
// is inside a Policy (inPolicy, its member there), and read back as v over
// whatever the receiver held (over).
func jsonAlone[T any](t *testing.T, v T, inPolicy json.RawMessage, over T) {
	t.Helper()
	data, err := json.Marshal(v)
	require.NoError(t, err)
	assert.Equal(t, string(inPolicy), string(data), "the same text alone as in a Policy")
	got := over
	require.NoError(t, json.Unmarshal(data, &got))
	assert.Equal(t, v, got)
}

// Every struct of the JSON schema reads and writes its own JSON (DESIGN
// point 23): alone, each writes what a Policy writes under its name and
// reads it back, with the same defaults and errors as inside a Policy. A
// user's config struct holding a Hedge read "after": "50ms" as an error.
func TestJSONStructsAlone(t *testing.T) {
	for name, p := range jsonPolicies() {
		t.Run(name, func(t *testing.T) {
			data, err := json.Marshal(p)
			require.NoError(t, err)
			var members map[string]json.RawMessage
			require.NoError(t, json.Unmarshal(data, &members))
			full := jsonPolicies()["full"]
			jsonAlone(t, p.Budget, members["budget"], full.Budget)
			jsonAlone(t, p.Hedge, members["hedge"], full.Hedge)
			jsonAlone(t, p.Demote, members["demote"], full.Demote)
			jsonAlone(t, p.Resume, members["resume"], Resume{Max: -1, Idle: time.Hour, MinBytes: 7})

			if p.Validate() != nil {
				return // a Config holds valid policies only
			}
			cfg := Config{Default: p, Hosts: map[string]Policy{"a.example": DefaultPolicy(), "b.example:8443": p}}
			data, err = json.Marshal(cfg)
			require.NoError(t, err)
			var got Config
			require.NoError(t, json.Unmarshal(data, &got))
			assert.Equal(t, cfg, got)
		})
	}

	// Defaults: a field left out is DefaultPolicy's, whatever the receiver
	// held, as inside a Policy.
	var file struct {
		Name   string       `json:"name"`
		Hedge  Hedge        `json:"hedge"`
		Demote Demote       `json:"demote"`
		Resume Resume       `json:"resume"`
		Budget BudgetConfig `json:"budget"`
	}
	file.Hedge = Hedge{Max: 2, Quantile: 0.9}
	file.Demote = Demote{After: 9, Max: time.Minute}
	file.Resume = Resume{Max: 7, MinBytes: 9}
	file.Budget = BudgetConfig{Percent: 9, Disabled: true}
	doc := `{"name": "x", "hedge": {"after": "50ms"}, "demote": {"for": "2s"}, "resume": {"idle": "1s"}, "budget": {"window": "1m"}}`
	require.NoError(t, json.Unmarshal([]byte(doc), &file))
	var p Policy
	require.NoError(t, json.Unmarshal([]byte("{"+doc[strings.Index(doc, `"hedge"`):]), &p))
	assert.Equal(t, Hedge{After: 50 * time.Millisecond}, file.Hedge)
	assert.Equal(t, p.Hedge, file.Hedge)
	assert.Equal(t, Demote{After: 5, For: 2 * time.Second}, file.Demote)
	assert.Equal(t, p.Demote, file.Demote)
	assert.Equal(t, Resume{Max: 3, Idle: time.Second}, file.Resume)
	assert.Equal(t, p.Resume, file.Resume)
	assert.Equal(t, BudgetConfig{Percent: 20, MinRetries: 10, Window: time.Minute, Hold: 2, HoldFor: time.Second}, file.Budget)
	assert.Equal(t, p.Budget, file.Budget)

	// The zero Config configures nothing, and is written as null, which
	// reads as the zero Config again, not as a policy that turns retrying
	// off.
	data, err := json.Marshal(Config{})
	require.NoError(t, err)
	assert.Equal(t, "null", string(data))
	var cfg struct {
		Retry Config `json:"retry"`
	}
	data, err = json.Marshal(cfg)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &cfg))
	assert.Empty(t, cfg.Retry.Options())

	var embedded struct{ Hedge }
	require.NoError(t, json.Unmarshal([]byte(`{"after": "50ms", "max": 2}`), &embedded))
	assert.Equal(t, Hedge{After: 50 * time.Millisecond, Max: 2}, embedded.Hedge)

	// Errors: the same problems as inside a Policy, under the path from
	// the struct, and the receiver left as it was.
	for _, tt := range []struct {
		name, doc string
		into      func([]byte) error
	}{
		{"budget", `{"percent": "5", "windw": "1s", "window": "0.5ns"}`, func(d []byte) error { return json.Unmarshal(d, new(BudgetConfig)) }},
		{"hedge", `{"after": "2s", "max": "2", "minAfter": "0.9ns"}`, func(d []byte) error { return json.Unmarshal(d, new(Hedge)) }},
		{"demote", `{"after": "5", "for": "soon", "max": 30}`, func(d []byte) error { return json.Unmarshal(d, new(Demote)) }},
		{"resume", `{"max": 1.5, "idle": "-0.5ns", "every": 1}`, func(d []byte) error { return json.Unmarshal(d, new(Resume)) }},
	} {
		alone := tt.into([]byte(tt.doc))
		require.Error(t, alone, tt.name)
		inPolicy := json.Unmarshal([]byte(`{"`+tt.name+`": `+tt.doc+`}`), new(Policy))
		require.Error(t, inPolicy, tt.name)
		problems, ok := strings.CutPrefix(alone.Error(), "httpretry: "+tt.name+": ")
		require.True(t, ok, alone.Error())
		var want []string
		for _, s := range strings.Split(problems, "; ") {
			want = append(want, tt.name+"."+s)
		}
		assert.Equal(t, "httpretry: policy: "+strings.Join(want, "; "), inPolicy.Error())
		assert.Equal(t, errors.Is(inPolicy, ErrInvalidPolicy), errors.Is(alone, ErrInvalidPolicy), tt.name)
	}
	h := Hedge{After: time.Second}
	assert.EqualError(t, json.Unmarshal([]byte(`{"after": "2s", "max": "2"}`), &h), `httpretry: hedge: max: "2": want an integer`)
	assert.Equal(t, Hedge{After: time.Second}, h, "unchanged on error")
	require.NoError(t, json.Unmarshal([]byte(`null`), &h))
	assert.Equal(t, Hedge{After: time.Second}, h, "null leaves it as it is")
	assert.EqualError(t, h.UnmarshalJSON([]byte(`{`)), "httpretry: hedge: invalid JSON")
	d := Demote{After: -1}
	assert.EqualError(t, json.Unmarshal([]byte(`{"after": 2, "for": "soon"}`), &d), `httpretry: demote: for: "soon": want a duration such as "250ms"`)
	assert.Equal(t, Demote{After: -1}, d, "unchanged on error")
}

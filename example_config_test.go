package httpretry_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/httpretry/httpretry"
)

func ExampleParseConfig() {
	cfg, err := httpretry.ParseConfig([]byte(`{
		"default": {"maxRetries": 2, "perTryTimeout": "2s", "backoff": "exponentialJitter(50ms, 1s)"},
		"hosts": {
			"payments.example.com": {"autoIdempotencyKey": true, "budget": {"percent": 10}}
		}
	}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	pay := cfg.Hosts["payments.example.com"]
	fmt.Println(cfg.Default.MaxRetries, cfg.Default.PerTryTimeout, cfg.Default.Backoff, cfg.Default.RetryOn)
	// A host entry starts from default: only the fields it names differ.
	fmt.Println(pay.MaxRetries, pay.PerTryTimeout, pay.AutoIdempotencyKey, pay.Budget.Percent, pay.Budget.MinRetries)

	// Every problem of a file, each under its JSON path.
	_, err = httpretry.ParseConfig([]byte(`{
		"default": {"maxRetries": 20, "perTryTimeout": "2 s"},
		"hosts": {"api.example.com": {"backof": "none"}}
	}`))
	fmt.Println(err)
	// Output:
	// 2 2s exponentialJitter(50ms, 1s) [429 502 503 504]
	// 2 2s true 10 10
	// httpretry: config: default.perTryTimeout: "2 s": want a duration such as "250ms"; default.maxRetries: 20 is outside 0..16; hosts["api.example.com"].backof: unknown field (did you mean backoff?)
}

func ExampleConfig_Options() {
	srv := flaky()
	defer srv.Close()

	cfg, err := httpretry.ParseConfig([]byte(`{"default": {"backoff": "fixed(10ms)"}}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	// Budgets outlive transports: a reloaded configuration shares them.
	budgets := httpretry.NewBudgets()
	rt := httpretry.New(nil, append(cfg.Options(), httpretry.WithBudgets(budgets))...)
	resp, err := (&http.Client{Transport: rt}).Get(srv.URL)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.StatusCode, string(body))
	// Output: 200 hello
}

func ExampleBackoff_MarshalText() {
	p := struct {
		Backoff  httpretry.Backoff `json:"backoff"`
		Fallback httpretry.Backoff `json:"fallback"`
		Zero     httpretry.Backoff `json:"zero"`
	}{
		Backoff:  httpretry.DefaultPolicy().Backoff.WithWaitBudget(10 * time.Second),
		Fallback: httpretry.NoBackoff(),
	}
	data, _ := json.Marshal(p)
	fmt.Println(string(data))

	var b httpretry.Backoff
	err := json.Unmarshal([]byte(`"fixed(250ms).Unbudgeted()"`), &b)
	fmt.Println(b, err, b == httpretry.Fixed(250*time.Millisecond).Unbudgeted())
	// Output:
	// {"backoff":"exponentialJitter(100ms, 2s).WithWaitBudget(10s)","fallback":"none","zero":"exponentialJitter(100ms, 2s)"}
	// fixed(250ms).Unbudgeted() <nil> true
}

func ExamplePolicy_MarshalJSON() {
	p := httpretry.DefaultPolicy()
	p.Fallbacks = []string{"https://standby.example.com"}
	data, _ := json.MarshalIndent(p, "", "  ")
	fmt.Println(string(data))
	// Output:
	// {
	//   "maxRetries": 3,
	//   "backoff": "exponentialJitter(100ms, 2s)",
	//   "retryOn": [
	//     429,
	//     502,
	//     503,
	//     504
	//   ],
	//   "perTryTimeout": "0s",
	//   "deadline": "0s",
	//   "maxRetryAfter": "30s",
	//   "maxReplayBytes": 1048576,
	//   "idempotencyHeader": "",
	//   "autoIdempotencyKey": false,
	//   "budget": {
	//     "percent": 20,
	//     "minRetries": 10,
	//     "window": "10s",
	//     "disabled": false,
	//     "hold": 2,
	//     "holdFor": "1s"
	//   },
	//   "hedge": {
	//     "after": "0s",
	//     "max": 0,
	//     "quantile": 0,
	//     "minAfter": "0s",
	//     "sameOrigin": false
	//   },
	//   "fallbacks": [
	//     "https://standby.example.com"
	//   ],
	//   "demote": {
	//     "after": 5,
	//     "for": "0s",
	//     "max": "0s"
	//   },
	//   "resume": {
	//     "max": 3,
	//     "idle": "0s",
	//     "minBytes": 0
	//   },
	//   "prefetch": 0
	// }
}

package httpretry

import (
	"encoding/json"
	"expvar"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var _ expvar.Var = (*Budgets)(nil)

func TestBudgetsRange(t *testing.T) {
	var empty Budgets
	empty.Range(func(string, BudgetStats) bool {
		t.Fatal("an empty registry has no host")
		return true
	})

	bs := NewBudgets()
	cfg := BudgetConfig{Percent: 50, MinRetries: 3, Window: time.Hour}
	c := bs.For("c.example", cfg)
	for range 4 {
		c.Record()
	}
	for c.TryReserve() {
	}
	bs.For("A.example:443", cfg).Record()
	bs.For("b.example:8443", BudgetConfig{MinRetries: -1})

	type visit struct {
		host string
		s    BudgetStats
	}
	var got []visit
	bs.Range(func(host string, s BudgetStats) bool {
		got = append(got, visit{host, s})
		return true
	})
	assert.Equal(t, []visit{
		{"a.example", BudgetStats{Requests: 1, Credit: 3}},
		{"b.example:8443", BudgetStats{}},
		{"c.example", BudgetStats{Requests: 4, Retries: 3, Allowance: 2, Credit: 2}},
	}, got, "in order of host name; c: 2 by its share, 1 by its credit")

	n := 0
	bs.Range(func(host string, s BudgetStats) bool {
		n++
		bs.For(host, cfg) // no lock is held
		return false
	})
	assert.Equal(t, 1, n, "false stops it")
}

func TestBudgetsString(t *testing.T) {
	var empty Budgets
	assert.Equal(t, "{}", empty.String())

	bs := NewBudgets()
	b := bs.For("api.example.com", BudgetConfig{})
	b.Record()
	require.True(t, b.TryReserve())
	bs.For(`odd"<host>`, BudgetConfig{})
	assert.JSONEq(t, `{
		"api.example.com": {"requests": 1, "retries": 1, "allowance": 0, "credit": 9, "copies": 0, "hedgeAfter": "0s", "demotedFor": "0s", "streak": 0, "parked": 0},
		"odd\"<host>": {"requests": 0, "retries": 0, "allowance": 0, "credit": 10, "copies": 0, "hedgeAfter": "0s", "demotedFor": "0s", "streak": 0, "parked": 0}
	}`, bs.String())

	var m map[string]BudgetStats
	require.NoError(t, json.Unmarshal([]byte(bs.String()), &m))
	assert.Equal(t, BudgetStats{Requests: 1, Retries: 1, Credit: 9}, m["api.example.com"])
}

var (
	publishOnce sync.Once
	expvarRuns  atomic.Int32
)

// TestBudgetsAsExpvar publishes a registry as expvar does it at
// /debug/vars (once: expvar forbids publishing a name twice). Each run
// counts under a host of its own, since the registry published is the
// first run's (go test -count=2).
func TestBudgetsAsExpvar(t *testing.T) {
	const name = "httpretry-test-budgets"
	bs := NewBudgets()
	publishOnce.Do(func() { expvar.Publish(name, bs) })
	published, ok := expvar.Get(name).(*Budgets)
	require.True(t, ok)
	host := fmt.Sprintf("run%d.expvar.example", expvarRuns.Add(1))
	published.For(host, BudgetConfig{}).Record()
	var m map[string]BudgetStats
	require.NoError(t, json.Unmarshal([]byte(expvar.Get(name).String()), &m))
	assert.Equal(t, 1, m[host].Requests)
}

// TestBudgetStatsJSONRoundTrip: every field of BudgetStats, Copies among
// them, reads back as it was written.
func TestBudgetStatsJSONRoundTrip(t *testing.T) {
	s := BudgetStats{Requests: 100, Retries: 12, Allowance: 20, Credit: 7, Copies: 10,
		HedgeAfter: 12288 * time.Microsecond, DemotedFor: 2500 * time.Millisecond}
	data, err := json.Marshal(s)
	require.NoError(t, err)
	assert.JSONEq(t, `{"requests": 100, "retries": 12, "allowance": 20, "credit": 7, "copies": 10,
		"hedgeAfter": "12.288ms", "demotedFor": "2.5s", "streak": 0, "parked": 0}`, string(data))
	var back BudgetStats
	require.NoError(t, json.Unmarshal(data, &back))
	assert.Equal(t, s, back)
}

// TestBudgetStatsJSONRejects: what BudgetStats.UnmarshalJSON cannot read
// is an error, and the stats are left as they were.
func TestBudgetStatsJSONRejects(t *testing.T) {
	before := BudgetStats{Requests: 7}
	for name, text := range map[string]string{
		"not an object":    `[1]`,
		"a wrong type":     `{"requests": "7"}`,
		"a bad hedgeAfter": `{"hedgeAfter": "soon"}`,
		"a bad demotedFor": `{"demotedFor": "12"}`,
	} {
		t.Run(name, func(t *testing.T) {
			s := before
			assert.Error(t, json.Unmarshal([]byte(text), &s))
			assert.Equal(t, before, s)
		})
	}
}

// TestStatsOfABudgetOfItsOwn: a Budget outside any Budgets reports its
// window, with no learned delay or demotion to add.
func TestStatsOfABudgetOfItsOwn(t *testing.T) {
	var b Budget
	b.Record()
	defer b.stopTicking()
	assert.Equal(t, BudgetStats{Requests: 1, Credit: defaultBudgetMinRetries}, b.Stats())
}

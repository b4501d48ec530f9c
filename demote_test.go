package httpretry

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/httpretry/httpretry/internal/demotion"
)

var dt0 = time.Date(2026, time.November, 29, 12, 0, 0, 0, time.UTC)

func demoteRand() *rand.Rand { return rand.New(rand.NewPCG(17, 18)) }

// demoted returns an origin demoted at dt0 under rule and the
// instant its demotion ends.
func demoted(t *testing.T, rule demotion.Rule, r *rand.Rand) (*demotion.State, time.Time) {
	t.Helper()
	var s demotion.State
	for range rule.After - 1 {
		s.Failed(dt0, demotion.Probe{}, rule, r)
	}
	ok, d := s.Failed(dt0, demotion.Probe{}, rule, r)
	require.True(t, ok)
	return &s, dt0.Add(d)
}

func TestDemoteProblems(t *testing.T) {
	for _, tc := range []struct {
		name string
		d    Demote
		want []string
	}{
		{"zero", Demote{}, nil},
		{"default", Demote{After: 5}, nil},
		{"full", Demote{After: 100, For: time.Second, Max: time.Minute}, nil},
		{"for and max alone", Demote{For: time.Second, Max: 2 * time.Second}, nil},
		{"max equal to for", Demote{After: 1, For: time.Second, Max: time.Second}, nil},
		{"for above the default max", Demote{After: 1, For: time.Minute}, nil},
		{"max below the default for", Demote{After: 1, Max: time.Millisecond}, nil},
		{"after negative: off", Demote{After: -1}, nil},
		{"after very negative: off", Demote{After: -1000}, nil},
		{"after too large", Demote{After: 101}, []string{"Demote.After 101 is above 100"}},
		{"for negative", Demote{After: 5, For: -time.Second}, []string{"Demote.For -1s is negative"}},
		{"max negative", Demote{After: 5, Max: -time.Second}, []string{"Demote.Max -1s is negative"}},
		{"max below for", Demote{After: 5, For: 2 * time.Second, Max: time.Second},
			[]string{"Demote.Max 1s is less than Demote.For 2s"}},
		{"off, still checked", Demote{After: -1, For: -time.Second, Max: -time.Millisecond}, []string{
			"Demote.For -1s is negative",
			"Demote.Max -1ms is negative",
		}},
		{"all at once", Demote{After: 300, For: -time.Second, Max: -time.Millisecond}, []string{
			"Demote.After 300 is above 100",
			"Demote.For -1s is negative",
			"Demote.Max -1ms is negative",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, tc.d.problems())
		})
	}
}

func TestDemoteResolve(t *testing.T) {
	for _, tc := range []struct {
		name string
		d    Demote
		want demotion.Rule
	}{
		{"zero: the default", Demote{}, demotion.Rule{After: 5, Base: time.Second, Max: 30 * time.Second}},
		{"off", Demote{After: -1, For: 2 * time.Second}, demotion.Rule{After: 0, Base: 2 * time.Second, Max: 30 * time.Second}},
		{"default", Demote{After: 5}, demotion.Rule{After: 5, Base: time.Second, Max: 30 * time.Second}},
		{"set", Demote{After: 3, For: 2 * time.Second, Max: 10 * time.Second},
			demotion.Rule{After: 3, Base: 2 * time.Second, Max: 10 * time.Second}},
		{"max only", Demote{After: 1, Max: 5 * time.Second}, demotion.Rule{After: 1, Base: time.Second, Max: 5 * time.Second}},
		{"max below the default for", Demote{After: 1, Max: time.Millisecond},
			demotion.Rule{After: 1, Base: time.Second, Max: time.Millisecond}},
		{"for above the default max", Demote{After: 1, For: time.Minute},
			demotion.Rule{After: 1, Base: time.Minute, Max: time.Minute}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, tc.d.resolve())
		})
	}
}

func TestDemoteLast(t *testing.T) {
	// Upper-case candidates go last.
	for _, tc := range []struct {
		name     string
		in, want string
	}{
		{"none", "", ""},
		{"one candidate", "a", "a"},
		{"one candidate last", "A", "A"},
		{"none last", "abcd", "abcd"},
		{"all last: the configured order", "ABCD", "ABCD"},
		{"the primary", "Abc", "bcA"},
		{"a middle one", "aBc", "acB"},
		{"the last one", "abC", "abC"},
		{"all but one", "ABcD", "cABD"},
		{"stable both ways", "AbCdEf", "bdfACE"},
		{"eight", "hGfEdCbA", "hfdbGECA"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := []byte(tc.in)
			var seen []byte
			demoteLast(s, func(c *byte) bool {
				seen = append(seen, *c)
				return 'A' <= *c && *c <= 'Z'
			})
			assert.Equal(t, tc.want, string(s))
			assert.Equal(t, tc.in, string(seen), "once each, in configured order")
		})
	}
}

// candidate stands for the attempt loop's target: a struct holding the
// origin's shared standing and what the request keeps of it.
type candidate struct {
	name  string
	s     *demotion.State
	probe demotion.Probe
	_     [4]int64 // the rest of a target's size
}

func TestDemoteLastCandidates(t *testing.T) {
	rule := Demote{After: 1}.resolve()
	r := demoteRand()
	primary, end := demoted(t, rule, r)
	backup, _ := demoted(t, rule, r)
	var healthy demotion.State
	order := func(now time.Time, mayProbe bool) (names []string, probing []string) {
		c := []candidate{{name: "primary", s: primary}, {name: "backup", s: backup}, {name: "other", s: &healthy}}
		demoteLast(c, func(c *candidate) bool {
			last, p := place(c.s, now, mayProbe)
			c.probe = p
			return last
		})
		for _, c := range c {
			names = append(names, c.name)
			if c.probe.Claimed() {
				probing = append(probing, c.name)
			}
		}
		return names, probing
	}
	names, probing := order(dt0, true)
	assert.Equal(t, []string{"other", "primary", "backup"}, names)
	assert.Empty(t, probing)

	later := end.Add(time.Hour) // both demotions over
	names, probing = order(later, false)
	assert.Equal(t, []string{"other", "primary", "backup"}, names, "no probe without moving on")
	assert.Empty(t, probing)
	names, probing = order(later, true)
	assert.Equal(t, []string{"primary", "backup", "other"}, names, "probes keep their places")
	assert.Equal(t, []string{"primary", "backup"}, probing)
	names, probing = order(later, true)
	assert.Equal(t, []string{"other", "primary", "backup"}, names, "last while probed")
	assert.Empty(t, probing)

	ok, _ := healthy.Failed(later, demotion.Probe{}, rule, r)
	require.True(t, ok)
	names, _ = order(later, true)
	assert.Equal(t, []string{"primary", "backup", "other"}, names, "all last: the configured order")
}

func TestDemoteLastAllocs(t *testing.T) {
	rule := Demote{After: 1}.resolve()
	down, _ := demoted(t, rule, demoteRand())
	var up demotion.State
	orig := []candidate{{s: down}, {s: &up}, {s: down}, {s: &up}}
	c := make([]candidate, len(orig))
	now := dt0
	assert.Zero(t, testing.AllocsPerRun(100, func() {
		copy(c, orig)
		demoteLast(c, func(c *candidate) bool {
			last, p := place(c.s, now, true)
			c.probe = p
			return last
		})
	}))
	assert.Same(t, &up, c[0].s)
	assert.Same(t, down, c[3].s)
}

// BenchmarkDemoteLast orders a primary and three fallbacks, the primary
// demoted, as a request with fallbacks would.
func BenchmarkDemoteLast(b *testing.B) {
	b.ReportAllocs()
	rule := Demote{After: 1}.resolve()
	var down, up demotion.State
	down.Failed(dt0, demotion.Probe{}, rule, demoteRand())
	orig := []candidate{{s: &down}, {s: &up}, {s: &up}, {s: &up}}
	c := make([]candidate, len(orig))
	for b.Loop() {
		copy(c, orig)
		demoteLast(c, func(c *candidate) bool {
			last, p := place(c.s, dt0, true)
			c.probe = p
			return last
		})
	}
}

// place is Order and Claim at once, as set-up and the first attempt do
// for a candidate. A claim lost puts the origin last.
func place(s *demotion.State, now time.Time, mayProbe bool) (last bool, p demotion.Probe) {
	last, probing := s.Order(now, mayProbe)
	if !probing {
		return last, demotion.Probe{}
	}
	p, ok := s.Claim(now)
	return !ok, p
}

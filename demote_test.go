package httpretry

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

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
		{"after negative", Demote{After: -1}, []string{"Demote.After -1 is outside 0..100"}},
		{"after too large", Demote{After: 101}, []string{"Demote.After 101 is outside 0..100"}},
		{"for negative", Demote{After: 5, For: -time.Second}, []string{"Demote.For -1s is negative"}},
		{"max negative", Demote{After: 5, Max: -time.Second}, []string{"Demote.Max -1s is negative"}},
		{"max below for", Demote{After: 5, For: 2 * time.Second, Max: time.Second},
			[]string{"Demote.Max 1s is less than Demote.For 2s"}},
		{"all at once", Demote{After: -3, For: -time.Second, Max: -time.Millisecond}, []string{
			"Demote.After -3 is outside 0..100",
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
		want demoteRule
	}{
		{"zero", Demote{}, demoteRule{after: 0, base: time.Second, max: 30 * time.Second}},
		{"default", Demote{After: 5}, demoteRule{after: 5, base: time.Second, max: 30 * time.Second}},
		{"set", Demote{After: 3, For: 2 * time.Second, Max: 10 * time.Second},
			demoteRule{after: 3, base: 2 * time.Second, max: 10 * time.Second}},
		{"max only", Demote{After: 1, Max: 5 * time.Second}, demoteRule{after: 1, base: time.Second, max: 5 * time.Second}},
		{"max below the default for", Demote{After: 1, Max: time.Millisecond},
			demoteRule{after: 1, base: time.Second, max: time.Millisecond}},
		{"for above the default max", Demote{After: 1, For: time.Minute},
			demoteRule{after: 1, base: time.Minute, max: time.Minute}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, tc.d.resolve())
		})
	}
}

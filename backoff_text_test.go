package httpretry

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBackoffText(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		text string
		want Backoff
	}{
		{"none", NoBackoff()},
		{"fixed(250ms)", Fixed(250 * ms)},
		{"exponential(100ms, 2s)", Exponential(100*ms, 2*time.Second)},
		{"exponentialJitter(100ms, 2s)", defaultBackoff},
		{"exponentialJitter(100ms, 2s).WithWaitBudget(10s)", defaultBackoff.WithWaitBudget(10 * time.Second)},
		{"exponentialJitter(100ms, 2s).WithWaitBudget(0s)", defaultBackoff.WithWaitBudget(0)},
		{"exponential(1s, 1s).Unbudgeted()", Exponential(time.Second, time.Second).Unbudgeted()},
		{"fixed(1h0m0s).WithWaitBudget(2562047h47m16.854775807s)", Fixed(time.Hour).WithWaitBudget(maxDuration)},
		{"exponential(1ns, 2562047h47m16.854775807s)", Exponential(1, maxDuration)},
		{"fixed(1.5s)", Fixed(1500 * ms)},
	}
	for _, tt := range tests {
		t.Run(tt.text, func(t *testing.T) {
			assert.Equal(t, tt.text, tt.want.String(), "String gives the canonical text")
			var b Backoff
			require.NoError(t, b.UnmarshalText([]byte(tt.text)))
			assert.Equal(t, tt.want, b)
			text, err := tt.want.MarshalText()
			require.NoError(t, err)
			assert.Equal(t, tt.text, string(text))
		})
	}
}

func TestBackoffTextLenient(t *testing.T) {
	tests := []struct {
		text string
		want Backoff
	}{
		{"exponential(100ms,2s)", Exponential(100*time.Millisecond, 2*time.Second)},
		{"exponential( 100ms ,  2s )", Exponential(100*time.Millisecond, 2*time.Second)},
		{"fixed(1s).WithWaitBudget(30s)", Fixed(time.Second)},
		{"fixed(1000ms)", Fixed(time.Second)},
		{"fixed(1s).WithWaitBudget( 5s )", Fixed(time.Second).WithWaitBudget(5 * time.Second)},
	}
	for _, tt := range tests {
		var b Backoff
		require.NoError(t, b.UnmarshalText([]byte(tt.text)), tt.text)
		assert.Equal(t, tt.want, b, tt.text)
	}
}

func TestBackoffTextErrors(t *testing.T) {
	syntax := "want none, fixed(d), exponential(initial, max) or exponentialJitter(initial, max), " +
		"optionally followed by .WithWaitBudget(total) or .Unbudgeted()"
	tests := []struct{ text, why string }{
		{"", syntax},
		{"None", syntax},
		{"none()", syntax},
		{"none.Unbudgeted()", syntax},
		{"default", syntax},
		{"fixed", syntax},
		{"fixed(1s", syntax},
		{"Fixed(1s)", syntax},
		{"linear(1s)", syntax},
		{" fixed(1s)", syntax},
		{"fixed()", `"" is not a duration`},
		{"fixed(1)", `"1" is not a duration`},
		{"fixed(1s, 2s)", "fixed takes one duration"},
		{"exponential(1s)", "exponential takes 2 durations"},
		{"exponentialJitter(1s, 2s, 3s)", "exponentialJitter takes 2 durations"},
		{"fixed(0s)", "the wait must be positive; use none for no wait"},
		{"fixed(-1s)", "the wait must be positive; use none for no wait"},
		{"exponential(0s, 1s)", "the initial wait must be positive"},
		{"exponentialJitter(2s, 1s)", "max is below the initial wait"},
		{"exponential(1s, 99999999999h)", `"99999999999h" is not a duration`},
		{"fixed(1s) ", `" " is neither .WithWaitBudget(total) nor .Unbudgeted()`},
		{"fixed(1s).Unbudgeted", `".Unbudgeted" is neither .WithWaitBudget(total) nor .Unbudgeted()`},
		{"fixed(1s).Unbudgeted().WithWaitBudget(1s)", `".Unbudgeted().WithWaitBudget(1s)" is neither .WithWaitBudget(total) nor .Unbudgeted()`},
		{"fixed(1s).WithWaitBudget(-1s)", "the wait budget must not be negative"},
		{"fixed(1s).WithWaitBudget()", `"" is not a duration`},
		{"fixed(1s).WithWaitBudget(1s, 2s)", "WithWaitBudget takes one duration"},
		{"fixed(1s).WithWaitBudget(1s))", `"1s)" is not a duration`},
	}
	for _, tt := range tests {
		t.Run(tt.text, func(t *testing.T) {
			b := Fixed(time.Minute)
			err := b.UnmarshalText([]byte(tt.text))
			require.Error(t, err)
			assert.Equal(t, `httpretry: backoff "`+tt.text+`": `+tt.why, err.Error())
			assert.Equal(t, Fixed(time.Minute), b, "unchanged on error")
		})
	}
}

func TestBackoffJSON(t *testing.T) {
	tests := []struct {
		b    Backoff
		want string
	}{
		{Backoff{}, `"exponentialJitter(100ms, 2s)"`},
		{NoBackoff(), `"none"`},
		{Fixed(time.Second).Unbudgeted(), `"fixed(1s).Unbudgeted()"`},
	}
	for _, tt := range tests {
		data, err := json.Marshal(tt.b)
		require.NoError(t, err)
		assert.Equal(t, tt.want, string(data))
		var b Backoff
		require.NoError(t, json.Unmarshal(data, &b))
		assert.Equal(t, tt.b.resolve(), b, "the zero Backoff comes back as defaultBackoff, which it means")
	}
	var b Backoff
	assert.Error(t, json.Unmarshal([]byte(`1`), &b))
}

// FuzzBackoffText checks that the text parser never panics and that
// whatever it accepts prints as a text it parses back to the same value.
func FuzzBackoffText(f *testing.F) {
	for _, s := range []string{"none", "fixed(250ms)", "exponential(100ms, 2s).Unbudgeted()",
		"exponentialJitter(100ms,2s).WithWaitBudget(10s)", "fixed(1s).WithWaitBudget(-0s)", "exponential(1ns, 2562047h47m16.854775807s)"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b, err := parseBackoff(s)
		if err != nil {
			if b != (Backoff{}) {
				t.Fatalf("parseBackoff(%q) failed with a value: %#v", s, b)
			}
			return
		}
		again, err := parseBackoff(b.String())
		if err != nil {
			t.Fatalf("parseBackoff(%q) = %v, whose text does not parse: %v", s, b, err)
		}
		if again != b {
			t.Fatalf("parseBackoff(%q) = %#v, but its text %q parses to %#v", s, b, b.String(), again)
		}
		if b.Ceiling(1) < 0 || b.waitBudget() < -1 {
			t.Fatalf("parseBackoff(%q) = %#v: negative wait", s, b)
		}
	})
}

package httpretry

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const durationMax = time.Duration(math.MaxInt64)

func TestBackoffCeiling(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name           string
		b              Backoff
		failedAttempts int
		want           time.Duration
	}{
		{"none", NoBackoff(), 1, 0},
		{"none many", NoBackoff(), 1000, 0},
		{"fixed 1", Fixed(250 * ms), 1, 250 * ms},
		{"fixed 5", Fixed(250 * ms), 5, 250 * ms},
		{"fixed huge", Fixed(250 * ms), math.MaxInt, 250 * ms},
		{"exponential 1", Exponential(100*ms, 2*time.Second), 1, 100 * ms},
		{"exponential 2", Exponential(100*ms, 2*time.Second), 2, 200 * ms},
		{"exponential 3", Exponential(100*ms, 2*time.Second), 3, 400 * ms},
		{"exponential 4", Exponential(100*ms, 2*time.Second), 4, 800 * ms},
		{"exponential 5", Exponential(100*ms, 2*time.Second), 5, 1600 * ms},
		{"exponential 6 capped", Exponential(100*ms, 2*time.Second), 6, 2 * time.Second},
		{"exponential 63", Exponential(100*ms, 2*time.Second), 63, 2 * time.Second},
		{"exponential 64", Exponential(100*ms, 2*time.Second), 64, 2 * time.Second},
		{"exponential 65", Exponential(100*ms, 2*time.Second), 65, 2 * time.Second},
		{"exponential 1000", Exponential(100*ms, 2*time.Second), 1000, 2 * time.Second},
		{"exponential MaxInt", Exponential(100*ms, 2*time.Second), math.MaxInt, 2 * time.Second},
		{"exponential 0 counts as 1", Exponential(100*ms, 2*time.Second), 0, 100 * ms},
		{"exponential -1 counts as 1", Exponential(100*ms, 2*time.Second), -1, 100 * ms},
		{"exponential MinInt counts as 1", Exponential(100*ms, 2*time.Second), math.MinInt, 100 * ms},
		{"initial equals max", Exponential(time.Second, time.Second), 10, time.Second},
		{"jitter 1", ExponentialJitter(100*ms, 2*time.Second), 1, 100 * ms},
		{"jitter 3", ExponentialJitter(100*ms, 2*time.Second), 3, 400 * ms},
		{"jitter 1000", ExponentialJitter(100*ms, 2*time.Second), 1000, 2 * time.Second},
		{"jitter 0 counts as 1", ExponentialJitter(100*ms, 2*time.Second), 0, 100 * ms},
		// max near MaxInt64: the doubling must saturate, never wrap.
		{"1ns to MaxInt64, 1", Exponential(1, durationMax), 1, 1},
		{"1ns to MaxInt64, 62", Exponential(1, durationMax), 62, 1 << 61},
		{"1ns to MaxInt64, 63", Exponential(1, durationMax), 63, 1 << 62},
		{"1ns to MaxInt64, 64", Exponential(1, durationMax), 64, durationMax},
		{"1ns to MaxInt64, 65", Exponential(1, durationMax), 65, durationMax},
		{"1ns to MaxInt64, 1000", Exponential(1, durationMax), 1000, durationMax},
		{"1ns to MaxInt64, MaxInt", Exponential(1, durationMax), math.MaxInt, durationMax},
		{"3ns to MaxInt64, 62", Exponential(3, durationMax), 62, 3 << 61},
		{"3ns to MaxInt64, 63", Exponential(3, durationMax), 63, durationMax},
		{"1h to MaxInt64, 22", Exponential(time.Hour, durationMax), 22, time.Hour << 21},
		{"1h to MaxInt64, 23", Exponential(time.Hour, durationMax), 23, durationMax},
		{"1h to MaxInt64, 40", Exponential(time.Hour, durationMax), 40, durationMax},
		{"1h to MaxInt64-1, 64", Exponential(time.Hour, durationMax-1), 64, durationMax - 1},
		{"MaxInt64 to MaxInt64", Exponential(durationMax, durationMax), 2, durationMax},
		{"jitter 1ns to MaxInt64, 64", ExponentialJitter(1, durationMax), 64, durationMax},
		{"fixed MaxInt64", Fixed(durationMax), 1000, durationMax},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.b.Ceiling(tt.failedAttempts))
		})
	}
}

func TestBackoffCeilingMonotonic(t *testing.T) {
	for _, b := range []Backoff{Exponential(1, durationMax), Exponential(7, durationMax/3), ExponentialJitter(time.Millisecond, time.Hour)} {
		prev := time.Duration(0)
		for n := 1; n <= 200; n++ {
			c := b.Ceiling(n)
			require.GreaterOrEqual(t, c, prev, "%v: Ceiling(%d)", b, n)
			require.Positive(t, c, "%v: Ceiling(%d)", b, n)
			prev = c
		}
	}
}

func TestBackoffDelayNotJittered(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	tests := []struct {
		name string
		b    Backoff
	}{
		{"none", NoBackoff()},
		{"fixed", Fixed(time.Second)},
		{"exponential", Exponential(10*time.Millisecond, time.Second)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for n := 0; n <= 70; n++ {
				assert.Equal(t, tt.b.Ceiling(n), tt.b.Delay(n, r), "Delay(%d)", n)
				assert.Equal(t, tt.b.Ceiling(n), tt.b.Delay(n, nil), "Delay(%d, nil)", n)
			}
		})
	}
}

func TestBackoffJitterBounds(t *testing.T) {
	tests := []struct {
		name string
		b    Backoff
	}{
		{"default", defaultBackoff},
		{"zero value", Backoff{}},
		{"small", ExponentialJitter(1, 4)},
		{"1ns to MaxInt64", ExponentialJitter(1, durationMax)},
		{"MaxInt64", ExponentialJitter(durationMax, durationMax)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(1, 2))
			for _, n := range []int{-5, 0, 1, 2, 3, 5, 10, 62, 63, 64, 1000} {
				c := tt.b.Ceiling(n)
				for range 500 {
					d := tt.b.Delay(n, r)
					require.GreaterOrEqual(t, d, time.Duration(0), "Delay(%d)", n)
					require.LessOrEqual(t, d, c, "Delay(%d)", n)
					d = tt.b.Delay(n, nil)
					require.GreaterOrEqual(t, d, time.Duration(0), "Delay(%d, nil)", n)
					require.LessOrEqual(t, d, c, "Delay(%d, nil)", n)
				}
			}
		})
	}
}

func TestBackoffJitterReachesBothEnds(t *testing.T) {
	// Ceiling 4ns: the five values 0..4 must all come up; full jitter
	// includes the ceiling itself.
	b := ExponentialJitter(1, 4)
	r := rand.New(rand.NewPCG(1, 2))
	seen := map[time.Duration]int{}
	for range 10_000 {
		seen[b.Delay(3, r)]++
	}
	assert.Len(t, seen, 5)
	for d := time.Duration(0); d <= 4; d++ {
		assert.Greater(t, seen[d], 1500, "value %v drawn %d times of 10000", d, seen[d])
	}
}

func TestBackoffJitterDeterministic(t *testing.T) {
	draw := func(seed1, seed2 uint64) []time.Duration {
		r := rand.New(rand.NewPCG(seed1, seed2))
		out := make([]time.Duration, 100)
		for i := range out {
			out[i] = defaultBackoff.Delay(i%8+1, r)
		}
		return out
	}
	a, b := draw(1, 2), draw(1, 2)
	require.Equal(t, a, b)
	assert.NotEqual(t, a, draw(3, 4))
}

func TestBackoffJitterMean(t *testing.T) {
	const draws = 20_000
	b := ExponentialJitter(100*time.Millisecond, 2*time.Second)
	for _, tc := range []struct {
		name string
		r    *rand.Rand
	}{
		{"seeded", rand.New(rand.NewPCG(1, 2))},
		{"nil", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, n := range []int{1, 3, 10} {
				c := b.Ceiling(n)
				var sum float64
				for range draws {
					sum += float64(b.Delay(n, tc.r))
				}
				mean := sum / draws
				// Uniform on [0, c]: the mean is c/2 with a standard error
				// of c/sqrt(12·draws) ≈ c/490; allow c/20.
				assert.InDelta(t, float64(c)/2, mean, float64(c)/20, "failedAttempts %d", n)
			}
		})
	}
}

func TestBackoffConstructorPanics(t *testing.T) {
	tests := []struct {
		name string
		fn   func()
		want string
	}{
		{"Fixed zero", func() { Fixed(0) }, "httpretry: Fixed(0s): the wait must be positive; use NoBackoff for none"},
		{"Fixed negative", func() { Fixed(-time.Second) }, "httpretry: Fixed(-1s): the wait must be positive; use NoBackoff for none"},
		{"Exponential zero initial", func() { Exponential(0, time.Second) }, "httpretry: Exponential(0s, 1s): the initial wait must be positive"},
		{"Exponential negative initial", func() { Exponential(-1, time.Second) }, "httpretry: Exponential(-1ns, 1s): the initial wait must be positive"},
		{"Exponential max below initial", func() { Exponential(2*time.Second, time.Second) }, "httpretry: Exponential(2s, 1s): max is below the initial wait"},
		{"ExponentialJitter zero initial", func() { ExponentialJitter(0, time.Second) }, "httpretry: ExponentialJitter(0s, 1s): the initial wait must be positive"},
		{"ExponentialJitter max below initial", func() { ExponentialJitter(time.Second, time.Millisecond) }, "httpretry: ExponentialJitter(1s, 1ms): max is below the initial wait"},
		{"WithWaitBudget negative", func() { defaultBackoff.WithWaitBudget(-time.Second) }, "httpretry: WithWaitBudget(-1s): the total must not be negative"},
		{"WithWaitBudget negative on NoBackoff", func() { NoBackoff().WithWaitBudget(-1) }, "httpretry: WithWaitBudget(-1ns): the total must not be negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.PanicsWithValue(t, tt.want, tt.fn)
		})
	}
}

func TestBackoffConstructorsDoNotPanic(t *testing.T) {
	assert.NotPanics(t, func() {
		Fixed(1)
		Exponential(1, 1)
		ExponentialJitter(time.Second, time.Second)
		Exponential(1, durationMax)
		defaultBackoff.WithWaitBudget(0)
		Backoff{}.Unbudgeted()
	})
}

func TestBackoffComparable(t *testing.T) {
	a, b := Exponential(1, 2), Exponential(1, 2)
	assert.True(t, a == b)
	assert.True(t, defaultBackoff == ExponentialJitter(100*time.Millisecond, 2*time.Second))
	n1, n2 := NoBackoff(), NoBackoff()
	assert.True(t, n1 == n2)
	f1, f2 := Fixed(time.Second), Fixed(time.Second)
	assert.True(t, f1 == f2)
	assert.False(t, Fixed(time.Second) == Fixed(2*time.Second))
	assert.True(t, defaultBackoff.WithWaitBudget(30*time.Second) == defaultBackoff)
	assert.True(t, Backoff{}.WithWaitBudget(5*time.Second) == defaultBackoff.WithWaitBudget(5*time.Second))
	assert.True(t, NoBackoff().Unbudgeted() == NoBackoff())

	assert.False(t, Exponential(1, 2) == ExponentialJitter(1, 2))
	assert.False(t, Exponential(1, 2) == Exponential(1, 3))
	assert.False(t, Fixed(time.Second) == Exponential(time.Second, time.Second))
	assert.False(t, defaultBackoff == defaultBackoff.Unbudgeted())
	assert.False(t, defaultBackoff == defaultBackoff.WithWaitBudget(5*time.Second))

	// Usable as a map key.
	m := map[Backoff]int{defaultBackoff: 1, NoBackoff(): 2}
	assert.Equal(t, 1, m[ExponentialJitter(100*time.Millisecond, 2*time.Second)])
}

func TestBackoffZeroValueIsDefault(t *testing.T) {
	var zero Backoff
	for n := -1; n <= 70; n++ {
		assert.Equal(t, defaultBackoff.Ceiling(n), zero.Ceiling(n), "Ceiling(%d)", n)
	}
	assert.Equal(t, defaultBackoff.String(), zero.String())
	assert.Equal(t, "exponentialJitter(100ms, 2s)", zero.String())
	assert.Equal(t, defaultBackoff.waitBudget(), zero.waitBudget())
	assert.Equal(t, defaultBackoff, zero.resolve())

	// The zero value jitters like defaultBackoff, draw for draw.
	r1, r2 := rand.New(rand.NewPCG(1, 2)), rand.New(rand.NewPCG(1, 2))
	for n := 1; n <= 20; n++ {
		require.Equal(t, defaultBackoff.Delay(n, r1), zero.Delay(n, r2), "Delay(%d)", n)
	}
}

func TestBackoffString(t *testing.T) {
	tests := []struct {
		name string
		b    Backoff
		want string
	}{
		{"zero", Backoff{}, "exponentialJitter(100ms, 2s)"},
		{"default", defaultBackoff, "exponentialJitter(100ms, 2s)"},
		{"none", NoBackoff(), "none"},
		{"none with budget", NoBackoff().WithWaitBudget(5 * time.Second), "none"},
		{"none unbudgeted", NoBackoff().Unbudgeted(), "none"},
		{"fixed", Fixed(250 * time.Millisecond), "fixed(250ms)"},
		{"exponential", Exponential(time.Second, time.Minute), "exponential(1s, 1m0s)"},
		{"jitter", ExponentialJitter(50*time.Millisecond, 5*time.Second), "exponentialJitter(50ms, 5s)"},
		{"default with budget", defaultBackoff.WithWaitBudget(5 * time.Second), "exponentialJitter(100ms, 2s).WithWaitBudget(5s)"},
		{"zero with budget", Backoff{}.WithWaitBudget(5 * time.Second), "exponentialJitter(100ms, 2s).WithWaitBudget(5s)"},
		{"fixed with zero budget", Fixed(time.Second).WithWaitBudget(0), "fixed(1s).WithWaitBudget(0s)"},
		{"budget of 30s is the default", Fixed(time.Second).WithWaitBudget(30 * time.Second), "fixed(1s)"},
		{"exponential unbudgeted", Exponential(time.Second, time.Minute).Unbudgeted(), "exponential(1s, 1m0s).Unbudgeted()"},
		{"zero unbudgeted", Backoff{}.Unbudgeted(), "exponentialJitter(100ms, 2s).Unbudgeted()"},
		{"unbudgeted then budgeted", defaultBackoff.Unbudgeted().WithWaitBudget(time.Minute), "exponentialJitter(100ms, 2s).WithWaitBudget(1m0s)"},
		{"budgeted then unbudgeted", defaultBackoff.WithWaitBudget(time.Minute).Unbudgeted(), "exponentialJitter(100ms, 2s).Unbudgeted()"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.b.String())
		})
	}
}

func TestBackoffWaitBudget(t *testing.T) {
	tests := []struct {
		name string
		b    Backoff
		want time.Duration
	}{
		{"zero", Backoff{}, 30 * time.Second},
		{"default", defaultBackoff, 30 * time.Second},
		// NoBackoff never waits, so nothing bounds its waits (point 19).
		{"none", NoBackoff(), -1},
		{"none with budget", NoBackoff().WithWaitBudget(time.Minute), -1},
		{"none unbudgeted", NoBackoff().Unbudgeted(), -1},
		{"fixed", Fixed(time.Second), 30 * time.Second},
		{"exponential", Exponential(time.Second, time.Minute), 30 * time.Second},
		{"jitter", ExponentialJitter(time.Second, time.Minute), 30 * time.Second},
		{"with 5s", defaultBackoff.WithWaitBudget(5 * time.Second), 5 * time.Second},
		{"with 0", Fixed(time.Second).WithWaitBudget(0), 0},
		{"zero with 5s", Backoff{}.WithWaitBudget(5 * time.Second), 5 * time.Second},
		{"unbudgeted", Exponential(time.Second, time.Minute).Unbudgeted(), -1},
		{"zero unbudgeted", Backoff{}.Unbudgeted(), -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.b.waitBudget())
		})
	}
}

// The default backoff is DefaultPolicy's and the zero Backoff's, and no
// exported variable names it: a copy was a trap, as assigning it changed
// nothing (issue 29).
func TestDefaultBackoffIsNoVariable(t *testing.T) {
	assert.Equal(t, ExponentialJitter(100*time.Millisecond, 2*time.Second), DefaultPolicy().Backoff)
	assert.Equal(t, 2*time.Second, Backoff{}.Ceiling(10))
	assert.Equal(t, "exponentialJitter(100ms, 2s)", Backoff{}.String())
	for _, line := range exportedSurface(t, ".") {
		if name, ok := strings.CutPrefix(line, "var "); ok {
			assert.True(t, strings.HasPrefix(name, "Err"), "exported variable %s: only error sentinels may be variables", name)
		}
	}
}

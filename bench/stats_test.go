package bench

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func ms(v ...float64) []time.Duration {
	out := make([]time.Duration, len(v))
	for i, x := range v {
		out[i] = time.Duration(x * float64(time.Millisecond))
	}
	return out
}

func TestWindowShare(t *testing.T) {
	tests := []struct {
		name string
		ts   []time.Duration
		want float64
	}{
		{"none", nil, 0},
		{"one", ms(5), 1},
		{"all in one window", ms(0, 3, 9.9), 1},
		// 10 ms windows are half-open: 0 and 10 never share one.
		{"edge excluded", ms(0, 10, 20, 30), 0.25},
		{"busiest in the middle", ms(0, 15, 16, 17, 24.9, 40, 60, 80), 0.5},
		{"unsorted input", ms(80, 17, 0, 16, 60, 24.9, 40, 15), 0.5},
		{"ties", ms(5, 5, 5, 50), 0.75},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := append([]time.Duration(nil), tt.ts...)
			assert.InDelta(t, tt.want, WindowShare(tt.ts, 10*time.Millisecond), 1e-12)
			assert.Equal(t, in, tt.ts, "input must not be reordered")
		})
	}
}

func TestPercentile(t *testing.T) {
	ten := ms(10, 1, 9, 2, 8, 3, 7, 4, 6, 5)
	tests := []struct {
		name string
		ds   []time.Duration
		p    float64
		want time.Duration
	}{
		{"empty", nil, 50, 0},
		{"single", ms(7), 99, 7 * time.Millisecond},
		{"p0 is the least", ten, 0, 1 * time.Millisecond},
		{"p50 of ten", ten, 50, 5 * time.Millisecond},
		{"p51 of ten rounds up", ten, 51, 6 * time.Millisecond},
		{"p99 of ten", ten, 99, 10 * time.Millisecond},
		{"p100", ten, 100, 10 * time.Millisecond},
		{"above 100 clamps", ten, 150, 10 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, Percentile(tt.ds, tt.p))
		})
	}
	var hundred []time.Duration
	for i := 100; i >= 1; i-- {
		hundred = append(hundred, time.Duration(i))
	}
	assert.Equal(t, time.Duration(99), Percentile(hundred, 99))
	assert.Equal(t, time.Duration(50), Percentile(hundred, 50))
	assert.Equal(t, time.Duration(100), hundred[0], "input must not be reordered")
}

func TestRecoveryTime(t *testing.T) {
	step := 100 * time.Millisecond
	at := func(msec float64, ok bool) Completion {
		return Completion{At: time.Duration(msec * float64(time.Millisecond)), OK: ok}
	}
	tests := []struct {
		name   string
		cs     []Completion
		want   time.Duration
		wantOK bool
	}{
		{"nothing completed", nil, 0, false},
		{"never recovered", []Completion{at(10, true), at(150, false)}, 0, false},
		{"healthy from the start", []Completion{at(10, true), at(250, true)}, 0, true},
		{"bad then good", []Completion{at(10, false), at(120, false), at(210, true), at(320, true)}, 200 * time.Millisecond, true},
		{"late bad interval wins", []Completion{at(10, true), at(150, false), at(260, true)}, 200 * time.Millisecond, true},
		// Nothing completes while callers wait in a backoff: the clock
		// starts at the first completion after the bad interval.
		{"gap is skipped", []Completion{at(50, false), at(730, true), at(810, true)}, 700 * time.Millisecond, true},
		{"only waits, then success", []Completion{at(3050, true)}, 3 * time.Second, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := RecoveryTime(tt.cs, step, 0.95)
			assert.Equal(t, tt.wantOK, ok)
			assert.Equal(t, tt.want, got)
		})
	}

	// 19 of 20 is exactly 95 %: healthy; 18 of 20 is not.
	var cs []Completion
	for i := range 20 {
		cs = append(cs, at(float64(i), i != 0))
	}
	got, ok := RecoveryTime(cs, step, 0.95)
	assert.True(t, ok)
	assert.Equal(t, time.Duration(0), got)
	cs[1].OK = false
	_, ok = RecoveryTime(cs, step, 0.95)
	assert.False(t, ok)
}

func TestUniformReference(t *testing.T) {
	a := UniformReference(200, 101, 100*time.Millisecond, 10*time.Millisecond, 1)
	b := UniformReference(200, 101, 100*time.Millisecond, 10*time.Millisecond, 1)
	assert.Equal(t, a, b, "a seed makes the reference reproducible")
	// 200 uniform draws put 20 in a 10 ms window on average; the busiest
	// of the sliding windows holds about half as many again.
	assert.Greater(t, a, 0.12)
	assert.Less(t, a, 0.19)
	assert.Equal(t, 1.0, UniformReference(5, 3, time.Millisecond, 10*time.Millisecond, 1))
	assert.Equal(t, 0.0, UniformReference(0, 3, time.Millisecond, 10*time.Millisecond, 1))
}

func TestMedianRatio(t *testing.T) {
	tests := []struct {
		name string
		a, b []float64
		want float64
	}{
		{"empty", nil, nil, 0},
		{"lengths differ", []float64{1}, []float64{1, 2}, 0},
		{"zero base", []float64{1}, []float64{0}, 0},
		{"one", []float64{3}, []float64{2}, 1.5},
		// Paired: each round's ratio is 1.1 although the medians of the
		// two series taken apart would give 200/100 = 2.
		{"paired by round", []float64{110, 220, 550}, []float64{100, 200, 500}, 1.1},
		{"odd count", []float64{1, 4, 9}, []float64{1, 2, 3}, 2},
		{"even count", []float64{1, 4, 9, 16}, []float64{1, 2, 3, 4}, 2.5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.InDelta(t, tt.want, MedianRatio(tt.a, tt.b), 1e-12)
		})
	}
}

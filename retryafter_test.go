package httpretry

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// raNow is the fixed instant Retry-After dates are measured from: a Sunday.
var raNow = time.Date(2026, time.November, 29, 12, 0, 0, 0, time.UTC)

func TestParseRetryAfter(t *testing.T) {
	const maxSecs = 9223372036 // math.MaxInt64 / 1e9, rounded down
	tests := []struct {
		name   string
		v      string
		want   time.Duration
		wantOK bool
	}{
		{"zero", "0", 0, true},
		{"seconds", "120", 120 * time.Second, true},
		{"one", "1", time.Second, true},
		{"spaces around", " 5 ", 5 * time.Second, true},
		{"tabs around", "\t7\t", 7 * time.Second, true},
		{"leading zeros", "0000000000000000000000000012", 12 * time.Second, true},
		{"largest that fits", "9223372036", maxSecs * time.Second, true},
		{"one past the largest", "9223372037", 0, false},
		{"overflowing", "99999999999999999999", 0, false},
		{"fraction", "1.5", 0, false},
		{"negative", "-1", 0, false},
		{"plus sign", "+1", 0, false},
		{"exponent", "1e9", 0, false},
		{"hex", "0x10", 0, false},
		{"unit", "5s", 0, false},
		{"inner space", "5 5", 0, false},
		{"empty", "", 0, false},
		{"blank", "   ", 0, false},
		{"letters", "abc", 0, false},
		{"IMF-fixdate", "Sun, 29 Nov 2026 12:02:00 GMT", 2 * time.Minute, true},
		{"IMF-fixdate padded", "  Sun, 29 Nov 2026 12:00:30 GMT ", 30 * time.Second, true},
		{"RFC 850", "Sunday, 29-Nov-26 12:02:00 GMT", 2 * time.Minute, true},
		{"asctime", "Sun Nov 29 12:02:00 2026", 2 * time.Minute, true},
		{"asctime one-digit day", "Tue Dec  1 12:00:00 2026", 48 * time.Hour, true},
		{"date now", "Sun, 29 Nov 2026 12:00:00 GMT", 0, true},
		{"date in the past", "Sun, 29 Nov 2026 11:00:00 GMT", 0, true},
		{"date in 1970", "Thu, 01 Jan 1970 00:00:00 GMT", 0, true},
		{"date in 9999 saturates", "Fri, 31 Dec 9999 23:59:59 GMT", durationMax, true},
		{"date with another zone", "Sun, 29 Nov 2026 12:02:00 PST", 0, false},
		{"ISO 8601", "2026-11-29T12:02:00Z", 0, false},
		{"truncated date", "Sun, 29 Nov 2026", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := ParseRetryAfter(tt.v, raNow)
			assert.Equal(t, tt.wantOK, ok)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestParseRetryAfterDateRoundTrip(t *testing.T) {
	for _, d := range []time.Duration{0, time.Second, 90 * time.Second, 36 * time.Hour} {
		v := raNow.Add(d).Format(http.TimeFormat)
		got, ok := ParseRetryAfter(v, raNow)
		assert.True(t, ok, v)
		assert.Equal(t, d, got, v)
	}
	// A now with a sub-second part: the date has whole seconds only.
	got, ok := ParseRetryAfter("Sun, 29 Nov 2026 12:00:10 GMT", raNow.Add(250*time.Millisecond))
	assert.True(t, ok)
	assert.Equal(t, 9750*time.Millisecond, got)
}

func TestRetryAfterHeader(t *testing.T) {
	tests := []struct {
		name   string
		values []string
		want   time.Duration
		wantOK bool
	}{
		{"none", nil, 0, false},
		{"one", []string{"3"}, 3 * time.Second, true},
		{"zero", []string{"0"}, 0, true},
		{"longest of seconds", []string{"3", "10", "7"}, 10 * time.Second, true},
		{"longest is a date", []string{"30", "Sun, 29 Nov 2026 12:01:00 GMT"}, time.Minute, true},
		{"longest is seconds", []string{"Sun, 29 Nov 2026 12:00:20 GMT", "45"}, 45 * time.Second, true},
		{"garbage ignored", []string{"abc", "5", "-100", "1.5"}, 5 * time.Second, true},
		{"overflow ignored", []string{"99999999999999999999", "2"}, 2 * time.Second, true},
		{"only garbage", []string{"abc", "", "-1"}, 0, false},
		{"zero among garbage", []string{"x", "0"}, 0, true},
		{"past date", []string{"Thu, 01 Jan 1970 00:00:00 GMT"}, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			for _, v := range tt.values {
				h.Add("retry-after", v)
			}
			got, ok := retryAfter(h, raNow)
			assert.Equal(t, tt.wantOK, ok)
			assert.Equal(t, tt.want, got)
		})
	}
}

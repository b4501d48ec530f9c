package httpretry

import (
	"net/http"
	"strings"
	"time"
)

// ParseRetryAfter reads a Retry-After value (RFC 9110 §10.2.3) as the wait it
// asks for, measured from now. Both forms are accepted. One is delay-seconds:
// 1*DIGIT, so "1.5" and "-1" are not. The other is an HTTP-date in any of the
// three formats http.ParseTime knows. A date in the past asks for no wait.
//
// It reports false for anything else, such as a number of seconds too large for
// a time.Duration. The caller then falls back to its own backoff.
func ParseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.Trim(v, " \t")
	if v == "" {
		return 0, false
	}
	if isDigits(v) {
		const maxSeconds = int64(maxDuration / time.Second)
		var secs int64
		for i := 0; i < len(v); i++ {
			secs = secs*10 + int64(v[i]-'0')
			if secs > maxSeconds {
				return 0, false
			}
		}
		return time.Duration(secs) * time.Second, true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	d := t.Sub(now) // saturates rather than overflowing for far dates
	if d < 0 {
		d = 0
	}
	return d, true
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// retryAfter is the longest valid wait among a response's Retry-After
// headers: when a server (or a proxy in front of it) says two things, the
// later time is the one that cannot be too early.
func retryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	var longest time.Duration
	found := false
	for _, v := range h["Retry-After"] { // the canonical key: Values would canonicalise it each time
		if d, ok := ParseRetryAfter(v, now); ok && (!found || d > longest) {
			longest, found = d, true
		}
	}
	return longest, found
}

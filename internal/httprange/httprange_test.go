package httprange

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestParseContentRange(t *testing.T) {
	for _, tt := range []struct {
		v                 string
		first, last, size int64
		ok                bool
	}{
		{"bytes 0-9/10", 0, 9, 10, true},
		{"bytes 5-5/6", 5, 5, 6, true},
		{" bytes 1-2/300 ", 1, 2, 300, true},
		{"bytes 0-9/*", 0, 0, 0, false},
		{"bytes */10", 0, 0, 0, false},
		{"bytes 5-4/10", 0, 0, 0, false},
		{"bytes 0-10/10", 0, 0, 0, false},
		{"items 0-9/10", 0, 0, 0, false},
		{"bytes 0-9", 0, 0, 0, false},
		{"bytes -1-9/10", 0, 0, 0, false},
		{"bytes 0-99999999999999999999/1", 0, 0, 0, false},
		{"", 0, 0, 0, false},
	} {
		first, last, size, ok := ParseContentRange([]string{tt.v})
		assert.Equal(t, tt.ok, ok, tt.v)
		assert.Equal(t, [3]int64{tt.first, tt.last, tt.size}, [3]int64{first, last, size}, tt.v)
	}
	_, _, _, ok := ParseContentRange([]string{"bytes 0-9/10", "bytes 0-9/10"})
	assert.False(t, ok, "two values")
}

func TestStrongValidator(t *testing.T) {
	const date = "Sun, 29 Nov 2026 12:00:00 GMT"
	for _, tc := range []struct {
		name string
		h    http.Header
		want Validator
		ok   bool
	}{
		{"strong ETag", http.Header{"Etag": {`"a"`}}, Validator{`"a"`, true}, true},
		{"weak ETag", http.Header{"Etag": {`W/"a"`}}, Validator{}, false},
		{"weak ETag rules out Last-Modified", http.Header{"Etag": {`W/"a"`},
			"Last-Modified": {"Sun, 29 Nov 2026 11:00:00 GMT"}, "Date": {date}}, Validator{}, false},
		{"malformed ETag", http.Header{"Etag": {`"`}}, Validator{}, false},
		{"Last-Modified 60 s before Date", http.Header{"Last-Modified": {"Sun, 29 Nov 2026 11:59:00 GMT"}, "Date": {date}},
			Validator{Value: "Sun, 29 Nov 2026 11:59:00 GMT"}, true},
		{"Last-Modified 59 s before Date", http.Header{"Last-Modified": {"Sun, 29 Nov 2026 11:59:01 GMT"}, "Date": {date}},
			Validator{}, false},
		{"Last-Modified without Date", http.Header{"Last-Modified": {"Sun, 29 Nov 2026 11:00:00 GMT"}}, Validator{}, false},
		{"Last-Modified malformed", http.Header{"Last-Modified": {"yesterday"}, "Date": {date}}, Validator{}, false},
		{"Date malformed", http.Header{"Last-Modified": {"Sun, 29 Nov 2026 11:00:00 GMT"}, "Date": {"now"}}, Validator{}, false},
		{"none", http.Header{}, Validator{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, ok := StrongValidator(tc.h)
			assert.Equal(t, tc.ok, ok)
			assert.Equal(t, tc.want, v)
		})
	}
}

func TestValidatorIn(t *testing.T) {
	etag := Validator{Value: `"a"`, ETag: true}
	lm := Validator{Value: "Sun, 29 Nov 2026 11:00:00 GMT"}
	for _, tc := range []struct {
		name        string
		v           Validator
		h           http.Header
		named, same bool
	}{
		{"same ETag", etag, http.Header{"Etag": {`"a"`}}, true, true},
		{"another ETag", etag, http.Header{"Etag": {`"b"`}}, true, false},
		{"no ETag, a Last-Modified", etag, http.Header{"Last-Modified": {lm.Value}}, false, false},
		{"same Last-Modified", lm, http.Header{"Last-Modified": {lm.Value}, "Etag": {`"a"`}}, true, true},
		{"another Last-Modified", lm, http.Header{"Last-Modified": {"Sun, 29 Nov 2026 11:00:01 GMT"}}, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			named, same := tc.v.In(tc.h)
			assert.Equal(t, [2]bool{tc.named, tc.same}, [2]bool{named, same})
		})
	}
}

func TestIdentityCodedAndNoRanges(t *testing.T) {
	for _, tc := range []struct {
		values []string
		want   bool
	}{
		{nil, true}, {[]string{""}, true}, {[]string{" identity "}, true}, {[]string{"IDENTITY", ""}, true},
		{[]string{"gzip"}, false}, {[]string{"identity", "br"}, false},
	} {
		assert.Equal(t, tc.want, IdentityCoded(http.Header{"Content-Encoding": tc.values}), "%q", tc.values)
	}
	for _, tc := range []struct {
		values []string
		want   bool
	}{
		{nil, false}, {[]string{"bytes"}, false}, {[]string{" None "}, true}, {[]string{"bytes", "none"}, true},
	} {
		assert.Equal(t, tc.want, NoRanges(http.Header{"Accept-Ranges": tc.values}), "%q", tc.values)
	}
}

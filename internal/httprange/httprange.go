// Package httprange reads the headers that say whether the rest of a
// response body may be asked for by Range, and whether an answer is the
// rest of the same representation: Content-Range, the validators,
// Content-Encoding and Accept-Ranges. It reads headers only, and
// allocates nothing.
package httprange

import (
	"net/http"
	"strings"
	"time"
)

// validatorAge is how long before its Date a Last-Modified must lie to be
// a strong validator (RFC 9110 §8.8.2.2): a resource modified within the
// same second as it was served may change again unseen. 60 s is
// Chromium's margin.
const validatorAge = 60 * time.Second

// Validator pins a range to one representation, as If-Range carries it.
type Validator struct {
	// Value is the ETag, or else the Last-Modified.
	Value string
	// ETag says Value is an ETag.
	ETag bool
}

// StrongValidator returns the validator of h that a range may be pinned
// to: a strong ETag, or else a Last-Modified at least 60 s before Date. A
// weak ETag rules out Last-Modified too: a client holding an entity tag
// must not send a date in If-Range (RFC 9110 §13.1.5). A malformed ETag is
// no validator at all.
func StrongValidator(h http.Header) (Validator, bool) {
	if et := h["Etag"]; len(et) > 0 {
		v := et[0]
		if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
			return Validator{}, false // weak (W/"…") or malformed
		}
		return Validator{Value: v, ETag: true}, true
	}
	lm, date := h["Last-Modified"], h["Date"]
	if len(lm) == 0 || len(date) == 0 {
		return Validator{}, false
	}
	modified, err := http.ParseTime(lm[0])
	if err != nil {
		return Validator{}, false
	}
	served, err := http.ParseTime(date[0])
	if err != nil || modified.After(served.Add(-validatorAge)) {
		return Validator{}, false
	}
	return Validator{Value: lm[0]}, true
}

// In reports whether h, the headers of an answer to a range request, have
// v's field (the ETag, or the Last-Modified), and if so whether it names
// the same representation.
func (v Validator) In(h http.Header) (named, same bool) {
	name := "Last-Modified"
	if v.ETag {
		name = "Etag"
	}
	got := h[name]
	if len(got) == 0 {
		return false, false
	}
	return true, got[0] == v.Value
}

// IdentityCoded reports whether h declares no content coding but
// identity: a range counts the bytes of the coded form.
func IdentityCoded(h http.Header) bool {
	for _, v := range h["Content-Encoding"] {
		if v = strings.TrimSpace(v); v != "" && !strings.EqualFold(v, "identity") {
			return false
		}
	}
	return true
}

// NoRanges reports whether h says the origin serves no ranges.
func NoRanges(h http.Header) bool {
	for _, v := range h["Accept-Ranges"] {
		if strings.EqualFold(strings.TrimSpace(v), "none") {
			return true
		}
	}
	return false
}

// ParseContentRange reads the one Content-Range "bytes first-last/size"
// of a 206, with a known complete length. Anything else, "*" for the
// size, a range outside the size, or several values, is not ok.
func ParseContentRange(values []string) (first, last, size int64, ok bool) {
	if len(values) != 1 {
		return 0, 0, 0, false
	}
	s, found := strings.CutPrefix(strings.TrimSpace(values[0]), "bytes ")
	if !found {
		return 0, 0, 0, false
	}
	span, total, found := strings.Cut(s, "/")
	a, b, found2 := strings.Cut(span, "-")
	if !found || !found2 {
		return 0, 0, 0, false
	}
	var okA, okB, okS bool
	first, okA = decimal(a)
	last, okB = decimal(b)
	size, okS = decimal(total)
	if !okA || !okB || !okS || first > last || last >= size {
		return 0, 0, 0, false
	}
	return first, last, size, true
}

// decimal reads 1*DIGIT as a non-negative int64, refusing overflow.
func decimal(s string) (int64, bool) {
	if s == "" || len(s) > 18 {
		return 0, false
	}
	var n int64
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
		n = n*10 + int64(s[i]-'0')
	}
	return n, true
}

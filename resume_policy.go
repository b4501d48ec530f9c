package httpretry

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/httpretry/httpretry/internal/httprange"
)

// Resume continues a response body that breaks mid-stream, from the byte it
// reached. A break is a reset, an unexpected EOF or an HTTP/2 stream error.
// With Idle, it is also a body that stops arriving. A GET whose body fails in
// the caller's Read then asks the same origin for the rest, with Range and
// If-Range. The caller reads on as if nothing had happened. Or it gets an error
// that wraps the original one and says why the rest could not be had.
//
// Only a body that can be resumed exactly is. That is the body of a response
// that meets all of these:
//
//   - It answers a GET, not an Upgrade request, under a policy that may
//     resend (MaxRetries > 0).
//   - It is a 200, or a 206 to the caller's own single Range.
//   - It is not decoded by Go's transparent gzip, and has no
//     Content-Encoding but identity.
//   - Its length is known, and at least MinBytes.
//   - It has a strong validator: an ETag not marked W/, else a
//     Last-Modified at least 60 s before Date.
//   - It has no Accept-Ranges: none.
//
// Any other response is returned exactly as it came, at no cost.
//
// A resume's answer is delivered only if it is the rest of the same version.
// One such answer is a 206 of exactly that range. Its ETag, if it has one, must
// be the validator (its Last-Modified, for a Last-Modified validator). Its
// Content-Length, if any, must be the range's. The other is a 200 with the
// validator, whose first bytes are skipped. Any other answer ends the body with
// ErrBodyChanged. No byte past the end the headers declare is delivered.
//
// A resume request is a resend in every other way. It is charged to the
// origin's retry budget. It honours Retry-After up to MaxRetryAfter. When
// resume requests fail in a row without a byte delivered between them, it waits
// the policy's backoff. It is not sent once the policy's Deadline has passed.
// It ends with the request's context or the body's Close.
type Resume struct {
	// Max is the number of resume requests one response body may make, at most
	// 100. 0 means 3, and a negative value turns resuming off.
	Max int
	// Idle, when set, makes a body that delivers no byte for Idle count as
	// broken. Its attempt is abandoned and the rest asked for. 0 means no
	// timer.
	Idle time.Duration
	// MinBytes is the shortest body that is resumed; 0 means 64 KiB.
	MinBytes int64
}

const (
	defaultResumeMax      = 3
	maxResumeMax          = 100
	defaultResumeMinBytes = 64 << 10
)

// problems words each invalid field of r as "Resume.Field text".
func (r Resume) problems() []string {
	var bad []string
	if r.Max > maxResumeMax {
		bad = append(bad, fmt.Sprintf("Resume.Max %d is above %d", r.Max, maxResumeMax))
	}
	if r.Idle < 0 {
		bad = append(bad, fmt.Sprintf("Resume.Idle %v is negative", r.Idle))
	}
	if r.MinBytes < 0 {
		bad = append(bad, fmt.Sprintf("Resume.MinBytes %d is negative", r.MinBytes))
	}
	return bad
}

// resumeRule is a valid Resume with its defaults resolved, built once per
// host policy. A max of 0 turns resuming off.
type resumeRule struct {
	max      int
	idle     time.Duration
	minBytes int64
}

// resolve applies r's defaults; r must be valid.
func (r Resume) resolve() resumeRule {
	rule := resumeRule{max: r.Max, idle: r.Idle, minBytes: r.MinBytes}
	switch {
	case rule.max == 0:
		rule.max = defaultResumeMax
	case rule.max < 0:
		rule.max = 0
	}
	if rule.minBytes == 0 {
		rule.minBytes = defaultResumeMinBytes
	}
	return rule
}

// resumeAt is where an eligible body lies in its representation and the
// validator that pins that representation.
type resumeAt struct {
	validator httprange.Validator
	// first and last are the positions of the body's first and last byte
	// in the representation, size its complete length.
	first, last, size int64
}

// resumable decides whether the body of resp, about to be handed to the
// caller of req, may be resumed if it breaks, and from what. It reads only
// headers and allocates nothing, so that an ineligible response costs no
// more than these checks; the cheap ones come first.
func (p *hostPolicy) resumable(req *http.Request, resp *http.Response,
	maxRetries int) (resumeAt, bool) {
	if p.resume.max == 0 || maxRetries <= 0 || req.Method != http.MethodGet && req.Method != "" ||
		hasBody(req) || resp.Body == nil || resp.Body == http.NoBody || resp.Uncompressed || upgrades(req) {
		return resumeAt{}, false
	}
	var at resumeAt
	h := resp.Header
	switch resp.StatusCode {
	case http.StatusOK:
		if resp.ContentLength < p.resume.minBytes {
			return resumeAt{}, false
		}
		at.last, at.size = resp.ContentLength-1, resp.ContentLength
	case http.StatusPartialContent:
		// Only an answer to the caller's own single range: a multipart
		// answer has no Content-Range, and its parts cannot be resumed.
		ranges := req.Header["Range"]
		if len(ranges) != 1 || strings.IndexByte(ranges[0], ',') >= 0 {
			return resumeAt{}, false
		}
		var ok bool
		if at.first, at.last, at.size, ok = httprange.ParseContentRange(h["Content-Range"]); !ok ||
			at.size < p.resume.minBytes ||
			resp.ContentLength >= 0 && resp.ContentLength != at.last-at.first+1 {
			return resumeAt{}, false
		}
	default:
		return resumeAt{}, false
	}
	if !httprange.IdentityCoded(h) || httprange.NoRanges(h) {
		return resumeAt{}, false
	}
	var ok bool
	if at.validator, ok = httprange.StrongValidator(h); !ok {
		return resumeAt{}, false
	}
	return at, true
}

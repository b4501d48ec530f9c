package httpretry

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// The decoder behind Policy.UnmarshalJSON and ParseConfig: it reads JSON
// into Go fields and collects every problem under its JSON path, instead
// of stopping at the first.

// jsonError is every problem found in one JSON document, each prefixed by
// its path. It wraps ErrInvalidPolicy when some value is invalid rather
// than malformed or of the wrong type.
type jsonError struct {
	what     string
	problems []string
	invalid  bool
}

func (e *jsonError) Error() string {
	return "httpretry: " + e.what + ": " + strings.Join(e.problems, "; ")
}

func (e *jsonError) Unwrap() error {
	if e.invalid {
		return ErrInvalidPolicy
	}
	return nil
}

// decoder decodes JSON values into Go fields and collects every problem
// under its JSON path, instead of stopping at the first.
type decoder struct {
	problems []string
	invalid  bool
	// undecoded holds the paths of list elements of the wrong type, so
	// that validation does not report them again.
	undecoded map[string]bool
}

// addf records a problem with the JSON itself at path.
func (d *decoder) addf(path, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if path != "" {
		msg = path + ": " + msg
	}
	d.problems = append(d.problems, msg)
}

// invalidf records a value that is invalid: one that decoded, or a
// duration that would decode as 0 though it is not 0 as written.
func (d *decoder) invalidf(path, format string, args ...any) {
	d.addf(path, format, args...)
	d.invalid = true
}

// validate records the invalid values of p, the policy at path, under
// their JSON paths, except the problems in inherited, reported already. The
// elements of RetryOn and Fallbacks are checked one by one, each under its
// own path ("retryOn[2]"), those that did not decode left out. It returns
// the problems of p's other fields: a few at most, so that a caller may
// pass them as inherited for every host at no more than constant cost.
func (d *decoder) validate(path string, p Policy, inherited []problem) []problem {
	retryOn, fallbacks := p.RetryOn, p.Fallbacks
	p.RetryOn, p.Fallbacks = nil, nil
	bad := p.problems()
	for _, b := range bad {
		if !slices.Contains(inherited, b) {
			d.invalidf(joinPath(path, jsonName(b.field)), "%s", b.text)
		}
	}
	// An element alone in a zero Policy, which is valid, is checked by
	// the same rule as Validate's.
	for i, s := range retryOn {
		d.validateElement(fmt.Sprintf("%s[%d]", joinPath(path, "retryOn"), i), Policy{RetryOn: []int{s}})
	}
	for i, s := range fallbacks {
		d.validateElement(fmt.Sprintf("%s[%d]", joinPath(path, "fallbacks"), i), Policy{Fallbacks: []string{s}})
	}
	return bad
}

// validateElement records the problems of one, a zero Policy holding one
// list element, under path, the element's.
func (d *decoder) validateElement(path string, one Policy) {
	if d.undecoded[path] {
		return
	}
	for _, b := range one.problems() {
		d.invalidf(path, "%s", b.text)
	}
}

func (d *decoder) err(what string) error {
	if len(d.problems) == 0 {
		return nil
	}
	return &jsonError{what, d.problems, d.invalid}
}

// member is one name and value of a JSON object, in document order.
type member struct {
	name  string
	value json.RawMessage
}

// members splits the JSON object at path into its members, reporting
// anything else. A name given twice is reported under at(name) and only
// its first value kept; a nil at names it as an object's field.
func (d *decoder) members(data []byte, path string, at func(name string) string) []member {
	if at == nil {
		at = func(name string) string { return joinPath(path, name) }
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		d.addf(path, "%s: want an object", excerpt(data))
		return nil
	}
	var ms []member
	seen := make(map[string]bool)
	for dec.More() {
		tok, err := dec.Token()
		name, _ := tok.(string)
		var value json.RawMessage
		if err == nil {
			err = dec.Decode(&value)
		}
		if err != nil {
			d.addf(path, "invalid JSON: %v", err)
			return nil
		}
		if seen[name] {
			d.addf(at(name), "given twice")
			continue
		}
		seen[name] = true
		ms = append(ms, member{name, value})
	}
	return ms
}

// object decodes the members of a JSON object into fields. It returns the
// names of the fields the object names.
func (d *decoder) object(data []byte, path string, fields []jsonField) (named []string) {
	for _, m := range d.members(data, path, nil) {
		at := joinPath(path, m.name)
		i := 0
		for i < len(fields) && fields[i].name != m.name {
			i++
		}
		if i == len(fields) {
			if near := nearestName(m.name, fields); near != "" {
				d.addf(at, "unknown field (did you mean %s?)", near)
			} else {
				d.addf(at, "unknown field")
			}
			continue
		}
		d.value(m.value, at, fields[i].ptr)
		named = append(named, m.name)
	}
	return named
}

// nearestName is the name in fields closest to name, when one is close
// enough to be the name meant: at most one edit (a letter added, dropped,
// changed, or two swapped) for every four letters of it, ignoring case. It
// is "" when none is, so that a wrong guess is never offered.
func nearestName(name string, fields []jsonField) string {
	best, bestDist := "", -1
	for _, f := range fields {
		limit := max(1, len(f.name)/4)
		if len(name) > len(f.name)+limit || len(name) < len(f.name)-limit {
			continue // too far apart already, and a long name costs nothing
		}
		dist := editDistance(strings.ToLower(name), strings.ToLower(f.name))
		if dist <= limit && (bestDist < 0 || dist < bestDist) {
			best, bestDist = f.name, dist
		}
	}
	return best
}

// editDistance is the optimal string alignment distance between a and b,
// in bytes: insertions, deletions, substitutions and swaps of neighbours,
// the usual slips of a hand typing a field name.
func editDistance(a, b string) int {
	// Three rows of the classic table: the swap looks two rows back.
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}

// value decodes one JSON value into the field ptr points to. A value that
// does not decode leaves the field as it was, but for lists (decodeList).
func (d *decoder) value(raw []byte, path string, ptr any) {
	switch v := ptr.(type) {
	case *int:
		decodeScalar(d, raw, path, v, "an integer")
	case *int64:
		decodeScalar(d, raw, path, v, "an integer")
	case *bool:
		decodeScalar(d, raw, path, v, "true or false")
	case *string:
		decodeScalar(d, raw, path, v, "a string")
	case *[]int:
		decodeList(d, raw, path, v, "an integer")
	case *[]string:
		decodeList(d, raw, path, v, "a string")
	case *time.Duration:
		d.duration(raw, path, v)
	case *Backoff:
		d.backoff(raw, path, v)
	case *float64:
		decodeScalar(d, raw, path, v, "a number")
	case jsonObject:
		// Decoded over what the field holds, so that a member left out
		// keeps it: a host's entry merges with default's field by field.
		if string(raw) != "null" {
			d.object(raw, path, v.jsonFields())
		}
	default:
		panic(fmt.Sprintf("httpretry: no JSON decoding for %T", ptr))
	}
}

// duration decodes a Go duration string ("250ms") into *dst; null leaves
// it as it is.
func (d *decoder) duration(raw []byte, path string, dst *time.Duration) {
	if string(raw) == "null" {
		return
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		d.addf(path, `%s: want a duration such as "250ms"`, excerpt(raw))
		return
	}
	v, err := parseDuration(s)
	if errors.Is(err, errBelowNanosecond) {
		d.invalidf(path, "%s: %v", excerpt(raw), err)
		return
	}
	if err != nil {
		d.addf(path, `%s: want a duration such as "250ms"`, excerpt(raw))
		return
	}
	*dst = v
}

// backoff decodes a Backoff's String form into *dst; null leaves it as it
// is. A malformed one is reported with parseBackoff's reason; one with a
// duration below 1ns but not 0 is invalid, as such a duration is alone.
func (d *decoder) backoff(raw []byte, path string, dst *Backoff) {
	if string(raw) == "null" {
		return
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		d.addf(path, `%s: want a backoff such as "exponentialJitter(100ms, 2s)"`, excerpt(raw))
		return
	}
	b, err := parseBackoff(s)
	if errors.Is(err, errBelowNanosecond) {
		d.invalidf(path, "%s: %v", excerpt(raw), err)
		return
	}
	if err != nil {
		d.addf(path, "%s: %v", excerpt(raw), err)
		return
	}
	*dst = b
}

// errBelowNanosecond is parseDuration's refusal of a duration that is
// not 0 as written but below 1ns.
var errBelowNanosecond = errors.New("not 0, yet below 1ns, the shortest duration")

// parseDuration is time.ParseDuration, which truncates to whole
// nanoseconds, except that a duration not 0 as written that it would read
// as 0 ("0.5ns") is errBelowNanosecond: 0 means none, or the default,
// wherever a policy holds a duration, and the tightest bound asked for
// must not silently become none. 0 as written ("0", "0s", "0.0ms") is 0.
func parseDuration(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, err
	}
	// Once ParseDuration has accepted s, a digit other than 0 is a
	// number other than 0.
	if d == 0 && strings.ContainsAny(s, "123456789") {
		return 0, errBelowNanosecond
	}
	return d, nil
}

// decodeScalar decodes raw into *dst; null leaves it as it is.
func decodeScalar[T any](d *decoder, raw []byte, path string, dst *T, want string) {
	v := *dst
	if err := json.Unmarshal(raw, &v); err != nil {
		d.addf(path, "%s: want %s", excerpt(raw), want)
		return
	}
	*dst = v
}

// decodeList decodes a JSON array into a fresh slice, never into the
// backing array *dst may share with another policy; null makes it nil. An
// element of the wrong type is reported, left zero and noted as undecoded,
// and the others are decoded all the same, so that validation reports every
// bad one. A value that is no list makes *dst nil: the value is rejected,
// and its neighbours' checks need not see the list it replaced.
func decodeList[T any](d *decoder, raw []byte, path string, dst *[]T, want string) {
	var elems []json.RawMessage
	if err := json.Unmarshal(raw, &elems); err != nil {
		d.addf(path, "%s: want a list, each %s", excerpt(raw), want)
		*dst = nil
		return
	}
	if elems == nil {
		*dst = nil
		return
	}
	list := make([]T, len(elems))
	for i, e := range elems {
		if string(e) == "null" || json.Unmarshal(e, &list[i]) != nil {
			at := fmt.Sprintf("%s[%d]", path, i)
			d.addf(at, "%s: want %s", excerpt(e), want)
			if d.undecoded == nil {
				d.undecoded = make(map[string]bool)
			}
			d.undecoded[at] = true
		}
	}
	*dst = list
}

// joinPath is the JSON path of member name in the object at path.
func joinPath(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// jsonName is a Go field path ("Budget.Percent", "Fallbacks[1]") as its
// JSON path ("budget.percent", "fallbacks[1]"): JSON names are the Go names
// in lower camel case.
func jsonName(field string) string {
	parts := strings.Split(field, ".")
	for i, p := range parts {
		if p != "" {
			parts[i] = strings.ToLower(p[:1]) + p[1:]
		}
	}
	return strings.Join(parts, ".")
}

// excerpt is raw JSON compacted and cut short, to quote in a problem.
func excerpt(raw []byte) string {
	var buf bytes.Buffer
	if json.Compact(&buf, raw) != nil {
		buf.Reset()
		buf.Write(raw)
	}
	b := buf.Bytes()
	if len(b) <= 40 {
		return string(b)
	}
	n := 40
	for n > 0 && !utf8.RuneStart(b[n]) {
		n--
	}
	return string(b[:n]) + "…"
}

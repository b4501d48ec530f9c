package httpretry

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
)

// defaultWaitBudget is the sum of waits a constructed Backoff allows one
// request unless WithWaitBudget or Unbudgeted says otherwise.
const defaultWaitBudget = 30 * time.Second

type backoffKind uint8

const (
	kindDefault backoffKind = iota // the zero Backoff: behaves as defaultBackoff
	kindNone
	kindFixed
	kindExponential
	kindExponentialJitter
)

// Backoff says how long to wait before each resend. Values are immutable and
// comparable with ==. Build them with NoBackoff, Fixed, Exponential or
// ExponentialJitter. The zero Backoff is the default: full jitter over an
// exponential ceiling from 100 ms to 2 s, with a 30 s wait budget.
type Backoff struct {
	kind    backoffKind
	initial time.Duration
	max     time.Duration
	// budget is the total wait allowed per request; negative means unbounded.
	budget time.Duration
}

// defaultBackoff is what the zero Backoff, and DefaultPolicy, mean. It is
// unexported because an exported copy was a trap: assigning it changed
// nothing. Code that wants it names DefaultPolicy().Backoff.
var defaultBackoff = ExponentialJitter(100*time.Millisecond, 2*time.Second)

// NoBackoff resends at once. It never waits, so it has no wait budget.
func NoBackoff() Backoff { return Backoff{kind: kindNone} }

// Fixed waits d before every resend. It panics if d is not positive. NoBackoff
// resends without waiting.
func Fixed(d time.Duration) Backoff {
	if d <= 0 {
		panic(fmt.Sprintf("httpretry: Fixed(%v): the wait must be positive; use NoBackoff for none", d))
	}
	return Backoff{kind: kindFixed, initial: d, max: d, budget: defaultWaitBudget}
}

// Exponential waits initial before the first resend, then twice as long
// before each next one, never more than max. It panics if initial is not
// positive or max is below initial.
func Exponential(initial, max time.Duration) Backoff {
	checkExponential("Exponential", initial, max)
	return Backoff{kind: kindExponential, initial: initial, max: max, budget: defaultWaitBudget}
}

// ExponentialJitter draws each wait uniformly in [0, ceiling] ("full jitter").
// The ceiling grows as in Exponential. So clients that failed together do not
// come back together. It panics like Exponential.
func ExponentialJitter(initial, max time.Duration) Backoff {
	checkExponential("ExponentialJitter", initial, max)
	return Backoff{kind: kindExponentialJitter, initial: initial, max: max, budget: defaultWaitBudget}
}

func checkExponential(name string, initial, max time.Duration) {
	if why := exponentialProblem(initial, max); why != "" {
		panic(fmt.Sprintf("httpretry: %s(%v, %v): %s", name, initial, max, why))
	}
}

// exponentialProblem says why Exponential and ExponentialJitter refuse
// these waits, or "".
func exponentialProblem(initial, max time.Duration) string {
	if initial <= 0 {
		return "the initial wait must be positive"
	}
	if max < initial {
		return "max is below the initial wait"
	}
	return ""
}

// WithWaitBudget returns b with a cap on the sum of all waits of one request.
// The wait that would overrun it is shortened to what is left. Once the cap is
// spent, no resend goes to an origin already tried, and the request ends with
// ReasonWaitBudget. A fallback origin not yet tried still gets its first
// attempt, which never waits.
//
// A total of 0 is spent from the start. It panics on a negative total.
func (b Backoff) WithWaitBudget(total time.Duration) Backoff {
	if total < 0 {
		panic(fmt.Sprintf("httpretry: WithWaitBudget(%v): the total must not be negative", total))
	}
	b = b.resolve()
	if b.kind != kindNone {
		b.budget = total
	}
	return b
}

// Unbudgeted returns b without a cap on the sum of its waits.
func (b Backoff) Unbudgeted() Backoff {
	b = b.resolve()
	if b.kind != kindNone {
		b.budget = -1
	}
	return b
}

// waitBudget is the cap on the sum of the waits of one request, negative
// when there is none, as for NoBackoff, which never waits.
func (b Backoff) waitBudget() time.Duration {
	b = b.resolve()
	if b.kind == kindNone {
		return -1
	}
	return b.budget
}

// resolve turns the zero Backoff into the default one.
func (b Backoff) resolve() Backoff {
	if b.kind == kindDefault {
		return defaultBackoff
	}
	return b
}

// Ceiling is the longest wait before resend number failedAttempts (1 for the
// first resend). It is initial·2^(failedAttempts−1) capped at max, without
// overflow. A failedAttempts below 1 counts as 1.
func (b Backoff) Ceiling(failedAttempts int) time.Duration {
	b = b.resolve()
	switch b.kind {
	case kindNone:
		return 0
	case kindFixed:
		return b.initial
	}
	// Clamp before subtracting: math.MinInt-1 would wrap to math.MaxInt.
	shift := max(failedAttempts, 1) - 1
	// A positive max shifted by 63 or more is 0, so the test alone
	// saturates; initial<<shift is then at most max and cannot overflow.
	if shift >= 63 || b.initial > b.max>>shift {
		return b.max
	}
	return b.initial << shift
}

// Delay is the wait before resend number failedAttempts, before any wait budget
// or Retry-After applies. Jittered backoffs draw from r. A nil r uses
// math/rand/v2's fast shared source. Delay is safe for concurrent use when r is
// nil.
func (b Backoff) Delay(failedAttempts int, r *rand.Rand) time.Duration {
	b = b.resolve()
	c := b.Ceiling(failedAttempts)
	if b.kind != kindExponentialJitter || c <= 0 {
		return c
	}
	if c == maxDuration {
		// c+1 would overflow; a single missing nanosecond cannot matter.
		if r == nil {
			return time.Duration(rand.Int64N(int64(c)))
		}
		return time.Duration(r.Int64N(int64(c)))
	}
	if r == nil {
		return time.Duration(rand.Int64N(int64(c) + 1))
	}
	return time.Duration(r.Int64N(int64(c) + 1))
}

const maxDuration = time.Duration(1<<63 - 1)

// String describes b, for example "exponentialJitter(100ms, 2s)". A wait budget
// other than the default 30 s is appended.
func (b Backoff) String() string {
	b = b.resolve()
	var s string
	switch b.kind {
	case kindNone:
		return "none"
	case kindFixed:
		s = fmt.Sprintf("fixed(%v)", b.initial)
	case kindExponential:
		s = fmt.Sprintf("exponential(%v, %v)", b.initial, b.max)
	default:
		s = fmt.Sprintf("exponentialJitter(%v, %v)", b.initial, b.max)
	}
	switch {
	case b.budget < 0:
		s += ".Unbudgeted()"
	case b.budget != defaultWaitBudget:
		s += fmt.Sprintf(".WithWaitBudget(%v)", b.budget)
	}
	return s
}

// MarshalText is b's String form, which UnmarshalText reads back exactly. The
// zero Backoff gives the default's text. A Backoff is a string in JSON.
func (b Backoff) MarshalText() ([]byte, error) { return []byte(b.String()), nil }

// UnmarshalText sets b from its String form. The forms are "none", "fixed(d)",
// "exponential(initial, max)" and "exponentialJitter(initial, max)". Each may
// end with ".WithWaitBudget(total)" or ".Unbudgeted()". Durations are read as
// time.ParseDuration reads them ("100ms", "2s"), with spaces around them
// allowed. Values the constructors would panic on are an error, and b is left
// as it was.
func (b *Backoff) UnmarshalText(text []byte) error {
	v, err := parseBackoff(string(text))
	if err != nil {
		return fmt.Errorf("httpretry: backoff %q: %w", text, err)
	}
	*b = v
	return nil
}

// parseBackoff is the inverse of String.
func parseBackoff(s string) (Backoff, error) {
	if s == "none" {
		return NoBackoff(), nil
	}
	name, rest, ok := strings.Cut(s, "(")
	args, suffix, ok2 := strings.Cut(rest, ")")
	if !ok || !ok2 {
		return Backoff{}, errBackoffSyntax
	}
	b, err := parseBackoffCall(name, args)
	if err != nil {
		return Backoff{}, err
	}
	return parseWaitBudget(b, suffix)
}

// parseBackoffCall is the Backoff that the constructor name makes of args,
// the text between its parentheses. Values the constructor would panic on
// are an error instead, saying why.
func parseBackoffCall(name, args string) (Backoff, error) {
	switch name {
	case "fixed":
		d, err := parseDurations(name, args, 1)
		if err != nil {
			return Backoff{}, err
		}
		if d[0] <= 0 {
			return Backoff{}, errors.New("the wait must be positive; use none for no wait")
		}
		return Fixed(d[0]), nil
	case "exponential", "exponentialJitter":
		d, err := parseDurations(name, args, 2)
		if err != nil {
			return Backoff{}, err
		}
		if why := exponentialProblem(d[0], d[1]); why != "" {
			return Backoff{}, errors.New(why)
		}
		if name == "exponentialJitter" {
			return ExponentialJitter(d[0], d[1]), nil
		}
		return Exponential(d[0], d[1]), nil
	}
	return Backoff{}, errBackoffSyntax
}

// parseWaitBudget applies suffix, the text after the constructor's call,
// to b: nothing, ".Unbudgeted()" or ".WithWaitBudget(total)".
func parseWaitBudget(b Backoff, suffix string) (Backoff, error) {
	if suffix == "" {
		return b, nil
	}
	if suffix == ".Unbudgeted()" {
		return b.Unbudgeted(), nil
	}
	arg, ok := strings.CutPrefix(suffix, ".WithWaitBudget(")
	arg, ok2 := strings.CutSuffix(arg, ")")
	if !ok || !ok2 {
		return Backoff{}, fmt.Errorf("%q is neither .WithWaitBudget(total) nor .Unbudgeted()", suffix)
	}
	d, err := parseDurations("WithWaitBudget", arg, 1)
	if err != nil {
		return Backoff{}, err
	}
	if d[0] < 0 {
		return Backoff{}, errors.New("the wait budget must not be negative")
	}
	return b.WithWaitBudget(d[0]), nil
}

// parseDurations parses the n comma-separated durations of name's args.
func parseDurations(name, args string, n int) ([]time.Duration, error) {
	parts := strings.Split(args, ",")
	if len(parts) != n {
		if n == 1 {
			return nil, fmt.Errorf("%s takes one duration", name)
		}
		return nil, fmt.Errorf("%s takes %d durations", name, n)
	}
	ds := make([]time.Duration, n)
	for i, p := range parts {
		d, err := parseDuration(strings.TrimSpace(p))
		if errors.Is(err, errBelowNanosecond) {
			return nil, fmt.Errorf("%q: %w", strings.TrimSpace(p), err)
		}
		if err != nil {
			return nil, fmt.Errorf("%q is not a duration", strings.TrimSpace(p))
		}
		ds[i] = d
	}
	return ds, nil
}

// retryAfterWait is the wait before resend n when the server's Retry-After
// ra is longer than the backoff's own wait. A backoff that jitters draws
// it uniformly from [ra, ra+spread], spread = max(Ceiling(n), ra/10), so
// that a crowd told the same Retry-After does not come back in the same
// instant; the spread is cut so that the wait stays below room, the time
// left before the deadline. Deterministic backoffs wait exactly ra. It is
// never below ra: never earlier than the server asked. r is as for Delay.
func (b Backoff) retryAfterWait(n int, ra, room time.Duration, r *rand.Rand) time.Duration {
	if b.resolve().kind != kindExponentialJitter {
		return ra
	}
	spread := max(b.Ceiling(n), ra/10)
	if room <= ra {
		return ra
	}
	spread = min(spread, room-ra-1)
	if spread <= 0 {
		return ra
	}
	if spread == maxDuration {
		spread-- // spread+1 below must not overflow
	}
	if r == nil {
		return ra + time.Duration(rand.Int64N(int64(spread)+1))
	}
	return ra + time.Duration(r.Int64N(int64(spread)+1))
}

package httpretry

import (
	"cmp"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/httpretry/httpretry/internal/demotion"
)

// MaxRetriesLimit is the most resends a Policy or WithMaxRetries may ask for.
const MaxRetriesLimit = 16

// Policy says when and how a request is resent. A Policy is a plain value. New
// resolves it once, so changing it afterwards has no effect on a transport.
//
// A Go literal means what its JSON means. Every field but MaxRetries left zero
// takes DefaultPolicy's value, as a key left out of JSON does. A feature
// DefaultPolicy turns on is turned off by a negative value (Demote.After -1).
// So Policy{MaxRetries: 2} and {"maxRetries": 2} are one policy. The zero
// Policy turns retrying off.
//
// A Policy reads and writes JSON, RetryIf aside (see ParseConfig).
type Policy struct {
	// MaxRetries is the number of resends after the first attempt, at most 16.
	// 0 turns retrying off. Each fallback origin still gets its one attempt
	// then, and the time bounds still hold.
	//
	// With MaxRetries 0, no fallback origin, and no PerTryTimeout or Deadline,
	// requests pass through untouched. They get no buffering and no extra work.
	// Over a base other than an *http.Transport, each goes in a copy marked as
	// attempt 1. So an httpretry inside resends nothing either.
	MaxRetries int
	// Backoff sets the wait before each resend. The zero value means
	// DefaultPolicy's: full jitter from 100 ms to 2 s.
	Backoff Backoff
	// RetryOn lists the statuses that are retried. nil means
	// DefaultRetryStatuses. An empty non-nil slice retries only transport
	// errors.
	RetryOn []int
	// PerTryTimeout bounds each attempt until its response headers arrive; 0
	// means no bound. It is re-armed in full for every attempt. The body of the
	// returned response is governed by the request's context alone.
	PerTryTimeout time.Duration
	// Deadline bounds the whole request, from the first attempt to the last and
	// the waits between them. 0 leaves only the context's deadline.
	Deadline time.Duration
	// MaxRetryAfter is the longest Retry-After honoured; 0 means 30 s. A
	// response asking for longer is returned at once.
	MaxRetryAfter time.Duration
	// MaxReplayBytes is the largest body without GetBody that is recorded for
	// replay as it is sent. A longer body is sent once, whole, and not resent.
	// 0 means 1 MiB; negative means never record.
	MaxReplayBytes int64
	// IdempotencyHeader names the header that makes a POST or PATCH resendable;
	// "" means Idempotency-Key or X-Idempotency-Key. The header makes it so
	// when it has a non-blank value. So does a nil or empty one: net/http's way
	// to mark a request idempotent without sending the header.
	IdempotencyHeader string
	// AutoIdempotencyKey adds a random key to POST and PATCH requests that lack
	// one, so that they can be resent. Requests that WithIdempotent marks get
	// none. Every attempt carries the same key, and the caller's request is not
	// modified.
	AutoIdempotencyKey bool
	// Budget sizes the per-host retry budget every resend is charged to.
	Budget BudgetConfig
	// Hedge sends speculative copies of slow requests; the zero value sends
	// none. A copy is a resend. So a Hedge that sends copies needs MaxRetries
	// of at least 1.
	Hedge Hedge
	// Fallbacks are other origins ("https://backup.example.com",
	// "http://10.0.0.7:8080") that serve the same requests. They are tried in
	// order after the request's own. WithFallbacks sets one request's list. One
	// request costs at most 1 + len(Fallbacks) + MaxRetries upstream calls. An
	// https request is never sent to an http origin.
	Fallbacks []string
	// Demote moves an origin that keeps failing behind the request's other
	// candidates for a while. When it is zero, that happens after 5 consecutive
	// failures, as in DefaultPolicy. Demote{After: -1} keeps their configured
	// order.
	Demote Demote
	// Resume continues a GET response body that breaks mid-stream from the byte
	// it reached, with a Range request (see Resume). DefaultPolicy resumes up
	// to 3 times.
	Resume Resume
	// Prefetch is the largest answer read whole before RoundTrip returns. Such
	// an answer has a known Content-Length and a request that may be resent.
	// It is read into memory first, so a body cut short is a failed attempt,
	// resent as any, and RetryIf may read it. 0 means 64 KiB, Resume's
	// MinBytes by default: every body of known length is read whole or
	// resumes. A negative value never reads ahead.
	Prefetch int64
	// RetryIf, when set, decides which outcomes are failures worth another
	// attempt. It takes the place of RetryOn and the transport-error rule. It
	// may read the body of an answer read whole (see Prefetch), which is
	// rewound after; it must not read any other body, nor close one. The
	// caller's context ending is never retried. Every other check still
	// applies: idempotency, body, MaxRetries, waits, deadline and budget. It
	// is not part of JSON.
	RetryIf func(resp *http.Response, err error) bool
}

const (
	defaultMaxRetries     = 3
	defaultMaxRetryAfter  = 30 * time.Second
	defaultMaxReplayBytes = 1 << 20
)

// DefaultRetryStatuses returns a fresh slice of the statuses retried by
// default: 429, 502, 503 and 504. A 500 is not among them. It usually reports a
// bug that a resend repeats.
func DefaultRetryStatuses() []int {
	return []int{http.StatusTooManyRequests, http.StatusBadGateway,
		http.StatusServiceUnavailable, http.StatusGatewayTimeout}
}

// DefaultPolicy is the policy New uses without WithPolicy. It makes up to 3
// resends on statuses 429 502 503 504, waiting with full jitter from 100 ms
// to 2 s. It honours Retry-After up to 30 s, and records bodies up to 1 MiB
// for replay.
//
// Its budget grants 20 % of the requests of the last 10 s. Beyond that share,
// it grants up to 10 from a floor credit that the requests earn back (see
// BudgetConfig). It demotes an origin after 5 failures in a row, and resumes a
// broken body up to 3 times.
//
// It sets no time bound (PerTryTimeout, Deadline), so that a long poll is never
// cut.
func DefaultPolicy() Policy {
	return Policy{
		MaxRetries:     defaultMaxRetries,
		Backoff:        defaultBackoff,
		RetryOn:        DefaultRetryStatuses(),
		MaxRetryAfter:  defaultMaxRetryAfter,
		MaxReplayBytes: defaultMaxReplayBytes,
		Budget: BudgetConfig{
			Percent:    defaultBudgetPercent,
			MinRetries: defaultBudgetMinRetries,
			Window:     defaultBudgetWindow,
			Hold:       defaultBudgetHold,
			HoldFor:    defaultBudgetHoldFor,
		},
		Demote: Demote{After: defaultDemoteAfter},
		Resume: Resume{Max: defaultResumeMax},
	}
}

// Validate reports every invalid field of p in one error that wraps
// ErrInvalidPolicy, or nil.
func (p Policy) Validate() error {
	bad := p.problems()
	if len(bad) == 0 {
		return nil
	}
	texts := make([]string, len(bad))
	for i, b := range bad {
		texts[i] = b.field + " " + b.text
	}
	return fmt.Errorf("%w: %s", ErrInvalidPolicy, strings.Join(texts, "; "))
}

// problem is one invalid value of a Policy: the field that holds it, named
// as in Go ("Budget.Percent"), and what is wrong with it ("-5 is outside
// 0..1000"). Validate prints the field as it is, ParseConfig as its JSON
// path, so that one check serves both.
type problem struct{ field, text string }

// problems lists every invalid value of p, in field order.
func (p Policy) problems() []problem {
	var bad []problem
	add := func(field, format string, args ...any) {
		bad = append(bad, problem{field, fmt.Sprintf(format, args...)})
	}
	if p.MaxRetries < 0 || p.MaxRetries > MaxRetriesLimit {
		add("MaxRetries", "%d is outside 0..%d", p.MaxRetries, MaxRetriesLimit)
	}
	for _, s := range p.RetryOn {
		if s < 400 || s > 599 {
			// A 1xx-3xx status is no failure: retrying it would resend
			// every healthy request.
			add("RetryOn", "status %d is outside 400..599", s)
		}
	}
	if p.PerTryTimeout < 0 {
		add("PerTryTimeout", "%v is negative", p.PerTryTimeout)
	}
	if p.Deadline < 0 {
		add("Deadline", "%v is negative", p.Deadline)
	}
	if p.MaxRetryAfter < 0 {
		add("MaxRetryAfter", "%v is negative", p.MaxRetryAfter)
	}
	if h := p.IdempotencyHeader; h != "" && !validHeaderName(h) {
		add("IdempotencyHeader", "%q is not a header name", h)
	}
	// The nested structs word each problem as "Type.Field text".
	for _, s := range slices.Concat(p.Budget.problems(), p.Hedge.problems(), p.Demote.problems(),
		p.Resume.problems()) {
		field, text, _ := strings.Cut(s, " ")
		bad = append(bad, problem{field, text})
	}
	if p.MaxRetries == 0 && p.Hedge.copies() > 0 {
		// Copies count against MaxRetries: such a Hedge would never send
		// one, and say nothing.
		add("Hedge", "a copy is a resend: maxRetries must be at least 1")
	}
	for i, s := range p.Fallbacks {
		var oe *originError
		if _, err := parseOrigin(s); errors.As(err, &oe) {
			add(fmt.Sprintf("Fallbacks[%d]", i), "%q: %s", oe.origin, oe.why)
		}
	}
	return bad
}

// validHeaderName reports whether s is an RFC 9110 token.
func validHeaderName(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return s != ""
}

// hostPolicy is a validated Policy with its defaults resolved, built once by
// New and only read afterwards.
type hostPolicy struct {
	maxRetries    int
	backoff       Backoff
	waitBudget    time.Duration // negative: unbounded
	retryOn       statusSet
	retryIf       func(*http.Response, error) bool // nil: retryOn and the transport-error rule
	fallbacks     []origin                         // parsed, in order, duplicates dropped
	perTry        time.Duration
	deadline      time.Duration
	maxRetryAfter time.Duration
	maxReplay     int64 // negative: never record
	idemHeaders   []string
	autoKeyHeader string // "" unless AutoIdempotencyKey
	budget        BudgetConfig
	hedge         Hedge
	demote        demotion.Rule
	resume        resumeRule
	prefetch      int64 // the largest answer read whole; negative: none
	// untimed: no attempt needs a timer, so a first attempt may go out as
	// the caller's own request (see sendsAsIs).
	untimed bool
}

// resolvePolicy turns a valid p into its resolved form.
func resolvePolicy(p Policy) *hostPolicy {
	hp := &hostPolicy{
		maxRetries:    p.MaxRetries,
		backoff:       p.Backoff.resolve(),
		perTry:        p.PerTryTimeout,
		deadline:      p.Deadline,
		maxRetryAfter: p.MaxRetryAfter,
		maxReplay:     p.MaxReplayBytes,
		idemHeaders:   defaultIdempotencyHeaders,
		budget:        p.Budget.withDefaults(),
		hedge:         p.Hedge,
		demote:        p.Demote.resolve(),
		resume:        p.Resume.resolve(),
		retryIf:       p.RetryIf,
		prefetch:      cmp.Or(p.Prefetch, defaultPrefetch),
	}
	for _, s := range p.Fallbacks {
		if o, err := parseOrigin(s); err == nil && !slices.Contains(hp.fallbacks, o) {
			hp.fallbacks = append(hp.fallbacks, o)
		}
	}
	hp.waitBudget = hp.backoff.waitBudget()
	hp.untimed = hp.perTry == 0 && hp.deadline == 0
	statuses := p.RetryOn
	if statuses == nil {
		statuses = DefaultRetryStatuses()
	}
	for _, s := range statuses {
		hp.retryOn.add(s)
	}
	if hp.maxRetryAfter == 0 {
		hp.maxRetryAfter = defaultMaxRetryAfter
	}
	if hp.maxReplay == 0 {
		hp.maxReplay = defaultMaxReplayBytes
	}
	if p.IdempotencyHeader != "" {
		hp.idemHeaders = []string{http.CanonicalHeaderKey(p.IdempotencyHeader)}
	}
	if p.AutoIdempotencyKey {
		hp.autoKeyHeader = hp.idemHeaders[0]
	}
	return hp
}

// statusSet is a bit set of status codes 0..639.
type statusSet [10]uint64

func (s *statusSet) add(code int) { s[code/64] |= 1 << (code % 64) }

func (s *statusSet) has(code int) bool {
	return code >= 0 && code < 640 && s[code/64]&(1<<(code%64)) != 0
}

// policyTable finds the policy of a request's host: a "host:port" rule wins
// over a "host" rule, which wins over the policy for every host.
type policyTable struct {
	all   *hostPolicy
	hosts map[string]*hostRules // by lower-case host name, without brackets
}

type hostRules struct {
	any   *hostPolicy
	ports map[string]*hostPolicy
}

// newPolicyTable validates def and the host options and resolves them once,
// for RoundTrip to read. Its error is the first bad option's: Validate's
// message for def, or the host and what is wrong with it.
func newPolicyTable(def Policy, hosts []hostOption) (policyTable, error) {
	if err := def.Validate(); err != nil {
		return policyTable{}, err
	}
	t := policyTable{all: resolvePolicy(def)}
	for _, h := range hosts {
		name, port, err := splitHostRule(h.host)
		if err != nil {
			return policyTable{}, fmt.Errorf("httpretry: WithHostPolicy(%q): %w", h.host, err)
		}
		if err := h.policy.Validate(); err != nil {
			return policyTable{}, fmt.Errorf("httpretry: WithHostPolicy(%q): %w", h.host, err)
		}
		hp := resolvePolicy(h.policy)
		if t.hosts == nil {
			t.hosts = make(map[string]*hostRules)
		}
		r := t.hosts[name]
		if r == nil {
			r = &hostRules{}
			t.hosts[name] = r
		}
		if port == "" {
			r.any = hp
			continue
		}
		if r.ports == nil {
			r.ports = make(map[string]*hostPolicy)
		}
		r.ports[port] = hp
	}
	return t, nil
}

// lookup returns the policy of a request to o, a canonical origin: a rule
// for its host and port (the scheme's default when o names none), else
// one for its host, else the policy for every host.
func (t *policyTable) lookup(o origin) *hostPolicy {
	if len(t.hosts) == 0 {
		return t.all
	}
	name, port, _ := splitHost(o.host)
	r := t.hosts[name]
	if r == nil {
		return t.all
	}
	if port == "" {
		port = defaultPort(o.scheme)
	}
	if p := r.ports[port]; p != nil {
		return p
	}
	if r.any != nil {
		return r.any
	}
	return t.all
}

// answers reports whether resp, which came without an error, is an answer
// to return rather than a failure to retry.
func (p *hostPolicy) answers(resp *http.Response) bool {
	if p.retryIf != nil {
		return !p.retryIf(resp, nil)
	}
	return !p.retryOn.has(resp.StatusCode)
}

// answersGuarded is answers for a response no attempt holds yet: a RetryIf
// that panics leaves it closed.
func (p *hostPolicy) answersGuarded(resp *http.Response) bool {
	if p.retryIf == nil {
		return p.answers(resp)
	}
	defer closeOnPanic(resp)
	answers := p.answers(resp)
	rewind(resp) // RetryIf may have read an answer read whole
	return answers
}

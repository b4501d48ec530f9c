package httpretry

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"math/big"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptrace"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// FuzzParseRetryAfter checks ParseRetryAfter against a plain reference:
// delay-seconds is 1*DIGIT (surrounding spaces and tabs allowed) and fits a
// time.Duration, an HTTP-date is what http.ParseTime accepts and a past one
// means no wait, and anything else is rejected. A parsed wait is never
// negative, and no input panics.
func FuzzParseRetryAfter(f *testing.F) {
	for _, v := range []string{
		"0", "120", " 5 ", "\t7", "-1", "+1", "1.5", "1e9", "0x10", "",
		"99999999999999999999", "9223372036", "9223372037",
		"Fri, 31 Dec 9999 23:59:59 GMT", "Thu, 01 Jan 1970 00:00:00 GMT",
		"Sun, 06 Nov 1994 08:49:37 GMT", "Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994",
		"Sun, 29 Nov 2026 18:00:30 GMT", "Sun, 29 Nov 2026 18:00:30 +0000", "2026-11-29T18:00:30Z",
	} {
		f.Add(v, int64(1795975200)) // 2026-11-29 18:00:00 UTC
	}
	f.Fuzz(func(t *testing.T, v string, nowSec int64) {
		// Any instant from 1970 to 9999, so that Sub stays meaningful.
		now := time.Unix(fzClamp(nowSec, 0, 253402300799), 0).UTC()
		got, ok := ParseRetryAfter(v, now)
		if ok && got < 0 {
			t.Fatalf("ParseRetryAfter(%q) = %v, a negative wait", v, got)
		}
		want, wantOK := fzRetryAfterReference(v, now)
		if ok != wantOK || (ok && got != want) {
			t.Fatalf("ParseRetryAfter(%q, %v) = %v, %t; the reference says %v, %t", v, now, got, ok, want, wantOK)
		}
	})
}

// fzRetryAfterReference is the obvious, slow reading of RFC 9110 §10.2.3.
func fzRetryAfterReference(v string, now time.Time) (time.Duration, bool) {
	v = strings.Trim(v, " \t")
	if v != "" && strings.Trim(v, "0123456789") == "" {
		secs, err := strconv.ParseInt(strings.TrimLeft(v, "0")+"0", 10, 64)
		if err != nil || secs/10 > math.MaxInt64/int64(time.Second) {
			return 0, false // too large for a time.Duration: ignored
		}
		return time.Duration(secs/10) * time.Second, true
	}
	at, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	return max(at.Sub(now), 0), true
}

func fzClamp(v, lo, hi int64) int64 { return min(max(v, lo), hi) }

// errFzSource is the read error FuzzBodyReplay injects into the body.
var errFzSource = errors.New("fuzz: source read failed")

// fzSource is a caller's request body: data, then EOF, or errFzSource once
// errAt bytes were read. It records its Close.
type fzSource struct {
	r      *bytes.Reader
	errAt  int // negative: never
	read   int
	closed atomic.Bool
}

func (s *fzSource) Read(p []byte) (int, error) {
	if s.errAt >= 0 {
		if s.read >= s.errAt {
			return 0, errFzSource
		}
		p = p[:min(len(p), s.errAt-s.read)]
	}
	n, err := s.r.Read(p)
	s.read += n
	return n, err
}

func (s *fzSource) Close() error {
	s.closed.Store(true)
	return nil
}

// fzAttempt is how the fuzzed base treats one attempt.
type fzAttempt uint8

const (
	fzOK        fzAttempt = iota // read all of the body, answer 200
	fz503                        // read all of the body, answer 503
	fzEarly503                   // answer 503 at once, go on reading the body afterwards, as net/http's writeLoop can
	fzReset                      // read part of the body, fail with a connection reset
	fzDialError                  // fail to dial: no connection, no byte read
	fzAttemptKinds
)

// fzBase is an in-memory base RoundTripper that behaves per attempt as
// told, reads the body in random chunk sizes, reports GotConn as a real
// transport does, and keeps what each attempt read.
type fzBase struct {
	plan []fzAttempt
	rnd  *rand.Rand
	bg   sync.WaitGroup

	mu       sync.Mutex
	attempts int
	wired    int      // attempts that obtained a connection
	reads    [][]byte // per attempt, the body bytes read
	whole    []bool   // per attempt, whether the read reached EOF
	gone     int      // attempts whose body was cut short by another's reading
}

func (b *fzBase) RoundTrip(req *http.Request) (*http.Response, error) {
	b.mu.Lock()
	n := b.attempts
	b.attempts++
	kind := fzOK
	if n < len(b.plan) {
		kind = b.plan[n]
	}
	chunk := 1 + b.rnd.IntN(64)
	stopAt := b.rnd.IntN(4096)
	b.reads = append(b.reads, nil)
	b.whole = append(b.whole, false)
	b.mu.Unlock()

	if kind == fzDialError {
		fzClose(req.Body)
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	}
	b.mu.Lock()
	b.wired++
	b.mu.Unlock()
	if trace := httptrace.ContextClientTrace(req.Context()); trace != nil && trace.GotConn != nil {
		trace.GotConn(httptrace.GotConnInfo{})
	}
	switch kind {
	case fzEarly503:
		b.bg.Add(1)
		go func() {
			defer b.bg.Done()
			_ = b.readBody(n, req.Body, chunk, -1)
			fzClose(req.Body)
		}()
		return fzResponse(req, http.StatusServiceUnavailable), nil
	case fzReset:
		_ = b.readBody(n, req.Body, chunk, stopAt)
		fzClose(req.Body)
		return nil, &net.OpError{Op: "write", Net: "tcp", Err: syscall.ECONNRESET}
	}
	err := b.readBody(n, req.Body, chunk, -1)
	fzClose(req.Body)
	if err != nil {
		return nil, fmt.Errorf("fuzz base: writing the body: %w", err)
	}
	if kind == fz503 {
		return fzResponse(req, http.StatusServiceUnavailable), nil
	}
	return fzResponse(req, http.StatusOK), nil
}

// readBody reads body in chunks of up to chunk bytes, at most limit bytes
// when limit is not negative, and records what it read for attempt n.
func (b *fzBase) readBody(n int, body io.Reader, chunk, limit int) error {
	if body == nil || body == http.NoBody {
		b.mu.Lock()
		b.whole[n] = true
		b.mu.Unlock()
		return nil
	}
	var got []byte
	buf := make([]byte, chunk)
	var err error
	for limit < 0 || len(got) < limit {
		p := buf
		if limit >= 0 {
			p = buf[:min(len(buf), limit-len(got))]
		}
		var k int
		k, err = body.Read(p)
		got = append(got, p[:k]...)
		if err != nil {
			break
		}
	}
	b.mu.Lock()
	b.reads[n] = got
	b.whole[n] = err == io.EOF
	if errors.Is(err, errBodyGone) {
		b.gone++
	}
	b.mu.Unlock()
	if err == io.EOF {
		return nil
	}
	return err
}

func fzResponse(req *http.Request, status int) *http.Response {
	return &http.Response{
		StatusCode: status, Status: http.StatusText(status), Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{}, Body: io.NopCloser(strings.NewReader("answer")), ContentLength: 6, Request: req,
	}
}

func fzClose(b io.ReadCloser) {
	if b != nil {
		b.Close()
	}
}

// FuzzBodyReplay sends a random body, with or without GetBody, through a
// base that fails the first attempts in random ways (503 after reading,
// 503 while still reading, a reset mid-body, a refused dial) and reads in
// random chunk sizes, with a read error injected at a random offset. Every
// attempt must see exactly the original bytes (a prefix, when it stopped
// early, but never because another attempt read on past the record), or
// the call must fail; the caller's body is always closed; an
// unkeyed POST goes on the wire at most once; and a replayable body that
// meets only retryable failures ends in a 200.
func FuzzBodyReplay(f *testing.F) {
	f.Add([]byte("hello, world"), uint64(1), uint8(0x12), false, int16(-1), uint8(0), uint16(64))
	f.Add(bytes.Repeat([]byte("abcdefgh"), 600), uint64(2), uint8(0x2f), true, int16(-1), uint8(1), uint16(8192))
	f.Add(bytes.Repeat([]byte{0, 1, 2, 3}, 300), uint64(3), uint8(0x33), false, int16(700), uint8(1), uint16(4096))
	f.Add([]byte{}, uint64(4), uint8(0x44), false, int16(-1), uint8(2), uint16(0))
	f.Add(bytes.Repeat([]byte("z"), 5000), uint64(5), uint8(0x21), false, int16(-1), uint8(1), uint16(100))
	f.Add([]byte("unkeyed"), uint64(6), uint8(0x44), false, int16(-1), uint8(2), uint16(64))
	f.Fuzz(func(t *testing.T, data []byte, seed uint64, planBits uint8, getBody bool, errAt int16, method uint8, replay uint16) {
		rnd := rand.New(rand.NewPCG(seed, seed>>32|1))
		failures := int(planBits & 3)
		var plan []fzAttempt
		for i := 0; i < failures; i++ {
			plan = append(plan, fzAttempt(1+int(planBits>>(2+i*2))%int(fzAttemptKinds-1)))
		}
		base := &fzBase{plan: plan, rnd: rnd}

		p := DefaultPolicy()
		p.MaxRetries = 3
		p.Backoff = NoBackoff()
		p.Budget = BudgetConfig{Disabled: true}
		p.MaxReplayBytes = int64(replay)
		if p.MaxReplayBytes == 0 {
			p.MaxReplayBytes = -1 // 0 would mean the 1 MiB default
		}
		if seed&1 == 1 {
			p.PerTryTimeout = time.Hour // the timed path, which never fires here
		}
		rt := New(base, WithPolicy(p))

		src := &fzSource{r: bytes.NewReader(data), errAt: int(errAt)}
		if int(errAt) > len(data) {
			src.errAt = -1
		}
		m := []string{http.MethodPut, http.MethodPost, http.MethodPost}[method%3]
		req, err := http.NewRequestWithContext(context.Background(), m, "http://fuzz.test/upload", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Body, req.ContentLength = src, int64(len(data))
		if seed&2 == 2 {
			req.ContentLength = -1 // unknown length, as a chunked upload
		}
		if getBody {
			req.GetBody = func() (io.ReadCloser, error) {
				return &fzSource{r: bytes.NewReader(data), errAt: src.errAt}, nil
			}
		}
		keyed := method%3 == 1
		if keyed {
			req.Header.Set("Idempotency-Key", "fuzz")
		}

		resp, err := rt.RoundTrip(req)
		if resp != nil && err != nil {
			t.Fatalf("a response (%d) and an error (%v) together", resp.StatusCode, err)
		}
		if resp == nil && err == nil {
			t.Fatal("neither a response nor an error")
		}
		if resp != nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		base.bg.Wait()

		base.mu.Lock()
		defer base.mu.Unlock()
		if base.attempts > 1+p.MaxRetries {
			t.Fatalf("%d attempts for MaxRetries %d", base.attempts, p.MaxRetries)
		}
		if base.gone > 0 {
			// A discarded attempt still uploading must never leave a
			// resend with a body cut short.
			t.Fatalf("%d attempt(s) lost their body to another attempt's reading (plan %v)", base.gone, plan)
		}
		for i, got := range base.reads {
			if !bytes.HasPrefix(data, got) {
				t.Fatalf("attempt %d of %d read %d bytes that are not a prefix of the %d-byte body (plan %v)", i+1, base.attempts, len(got), len(data), plan)
			}
			if base.whole[i] && len(got) != len(data) && !(len(got) == 0 && src.errAt == 0) {
				t.Fatalf("attempt %d read %d bytes to EOF of a %d-byte body (plan %v)", i+1, len(got), len(data), plan)
			}
		}
		if !src.closed.Load() {
			t.Fatalf("the caller's body was never closed (plan %v, %d attempts)", plan, base.attempts)
		}
		unkeyed := m == http.MethodPost && !keyed
		if unkeyed && base.wired > 1 {
			t.Fatalf("an unkeyed POST went on the wire %d times (plan %v)", base.wired, plan)
		}
		// Liveness: a body that can be replayed, meeting only failures the
		// policy retries, must get through.
		replayable := src.errAt < 0 && (getBody || int64(len(data)) <= p.MaxReplayBytes || len(data) == 0)
		retriable := !unkeyed
		if unkeyed {
			retriable = true
			for _, a := range plan {
				retriable = retriable && a == fzDialError
			}
		}
		if replayable && retriable && (resp == nil || resp.StatusCode != http.StatusOK) {
			t.Fatalf("a replayable body failed after %d attempts (plan %v): status %d, error %v", base.attempts, plan, fzStatus(resp), err)
		}
	})
}

func fzStatus(resp *http.Response) int {
	if resp == nil {
		return 0
	}
	return resp.StatusCode
}

// FuzzPolicyValidate builds random policies: Validate never panics; a
// policy it accepts never makes New or a RoundTrip panic, and one it
// rejects makes New panic, as New documents.
func FuzzPolicyValidate(f *testing.F) {
	f.Add(3, uint8(3), int64(100e6), int64(2e9), int64(-2), []byte{0x01, 0xf7}, int64(0), int64(0), int64(30e9), int64(1<<20), "", false, 20, 10, int64(10e9), false, int64(0), 0)
	f.Add(-1, uint8(1), int64(-5), int64(0), int64(0), []byte{0xff, 0xff}, int64(-1), int64(-1), int64(-1), int64(-1), "Bad Header", true, -1, -1, int64(-1), true, int64(1), 2)
	f.Add(17, uint8(2), int64(1), int64(1), int64(1), []byte{}, int64(1), int64(1), int64(1), int64(0), "X-Key", true, 0, 0, int64(1), false, int64(0), 0)
	f.Add(16, uint8(4), int64(math.MaxInt64), int64(math.MaxInt64), int64(math.MaxInt64), []byte{0, 100, 2, 87}, int64(math.MaxInt64), int64(math.MaxInt64), int64(math.MaxInt64), int64(math.MaxInt64), "Idempotency-Key", false, math.MaxInt, math.MinInt, int64(math.MaxInt64), false, int64(0), 0)
	f.Fuzz(func(t *testing.T, maxRetries int, backoffKind uint8, initial, maxWait, waitBudget int64, retryOn []byte,
		perTry, deadline, maxRetryAfter, maxReplay int64, idemHeader string, autoKey bool,
		percent, minRetries int, window int64, disabled bool, hedgeAfter int64, hedgeMax int) {
		p := Policy{
			MaxRetries:         maxRetries,
			Backoff:            fzBackoff(backoffKind, time.Duration(initial), time.Duration(maxWait), time.Duration(waitBudget)),
			PerTryTimeout:      time.Duration(perTry),
			Deadline:           time.Duration(deadline),
			MaxRetryAfter:      time.Duration(maxRetryAfter),
			MaxReplayBytes:     maxReplay,
			IdempotencyHeader:  idemHeader,
			AutoIdempotencyKey: autoKey,
			Budget:             BudgetConfig{Percent: percent, MinRetries: minRetries, Window: time.Duration(window), Disabled: disabled},
			Hedge:              Hedge{After: time.Duration(hedgeAfter), Max: hedgeMax},
		}
		if len(retryOn) > 0 {
			p.RetryOn = []int{}
			for i := 0; i+1 < len(retryOn); i += 2 {
				p.RetryOn = append(p.RetryOn, int(int16(uint16(retryOn[i])<<8|uint16(retryOn[i+1]))))
			}
		}
		err := p.Validate()
		if err != nil {
			if !errors.Is(err, ErrInvalidPolicy) {
				t.Fatalf("Validate error %v does not wrap ErrInvalidPolicy", err)
			}
			fzMustPanic(t, "New with a policy Validate rejects", func() { New(fzConstBase{}, WithPolicy(p)) })
			return
		}
		base := &fzStatusBase{}
		rt := New(base, WithPolicy(p), WithHostPolicy("fuzz.test", p))
		// Only policies whose first wait is short are driven through a
		// failure, so that no exec sleeps.
		if p.Backoff.Ceiling(1) <= time.Millisecond {
			base.failFirst.Store(true)
		}
		for _, m := range []string{http.MethodGet, http.MethodPost} {
			req, _ := http.NewRequest(m, "http://fuzz.test/", strings.NewReader("body"))
			if m == http.MethodPost {
				req.GetBody = nil
			}
			resp, err := rt.RoundTrip(req)
			if err == nil {
				resp.Body.Close()
			}
		}
	})
}

// fzBackoff builds a Backoff from fuzzed values, keeping to the arguments
// its constructors accept (they panic on others, by contract).
func fzBackoff(kind uint8, initial, maxWait, budget time.Duration) Backoff {
	var b Backoff
	switch kind % 5 {
	case 1:
		b = NoBackoff()
	case 2:
		if initial > 0 {
			b = Fixed(initial)
		}
	case 3:
		if initial > 0 && maxWait >= initial {
			b = Exponential(initial, maxWait)
		}
	case 4:
		if initial > 0 && maxWait >= initial {
			b = ExponentialJitter(initial, maxWait)
		}
	}
	switch {
	case budget == -1:
		b = b.Unbudgeted()
	case budget >= 0 && kind&8 == 8:
		b = b.WithWaitBudget(budget)
	}
	return b
}

func fzMustPanic(t *testing.T, what string, fn func()) {
	t.Helper()
	defer func() {
		if recover() == nil {
			t.Fatalf("%s did not panic", what)
		}
	}()
	fn()
}

// fzConstBase answers 200 to everything.
type fzConstBase struct{}

func (fzConstBase) RoundTrip(req *http.Request) (*http.Response, error) {
	fzClose(req.Body)
	return fzResponse(req, http.StatusOK), nil
}

// fzStatusBase answers 200, or 503 then 200 when failFirst is set, so that a
// fuzzed policy also runs its retry decision.
type fzStatusBase struct{ failFirst atomic.Bool }

func (b *fzStatusBase) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		_, _ = io.Copy(io.Discard, req.Body)
	}
	fzClose(req.Body)
	if b.failFirst.CompareAndSwap(true, false) {
		return fzResponse(req, http.StatusServiceUnavailable), nil
	}
	return fzResponse(req, http.StatusOK), nil
}

// FuzzConfigDuration puts a fuzzed text at one duration of the JSON
// schema, a backoff's wait budget included, and checks it against an
// exact reading of the text: a malformed duration is refused; one that is
// not 0 as written but that time.ParseDuration reads as 0 ("0.5ns") is
// invalid, named under its path, never read as 0, which means none; any
// other is read as time.ParseDuration reads it (DESIGN point 23).
func FuzzConfigDuration(f *testing.F) {
	for i, s := range []string{"0.5ns", "0.9ns", "0.0000001ms", "-0.5ns", "0.5ns0.5ns", "0", "0.0s", "-0s",
		"1.5ns", "1e-3ms", "0.0005µs", "250ms", "9223372036854775807ns", ".5ns", "0.", "1h0.0000000001s"} {
		f.Add(s, uint8(i))
	}
	var p Policy
	paths := slices.Sorted(maps.Keys(durationPaths(&p)))
	f.Fuzz(func(t *testing.T, s string, at uint8) {
		// What the decoder sees of s: JSON has no invalid UTF-8.
		raw, _ := json.Marshal(s)
		_ = json.Unmarshal(raw, &s)
		i := int(at) % (len(paths) + 1)
		if i == len(paths) {
			fzWaitBudget(t, s)
			return
		}
		path := paths[i]
		doc := atPath(path, string(raw))
		var got Policy
		err := json.Unmarshal([]byte(doc), &got)
		_, cfgErr := ParseConfig([]byte(`{"default": ` + doc + `}`))
		want, parseErr := time.ParseDuration(s)
		exact, _ := fzExactNanos(s)
		switch {
		case parseErr != nil:
			if err == nil || errors.Is(err, ErrInvalidPolicy) || cfgErr == nil {
				t.Fatalf("%s: malformed, read with %v / %v", doc, err, cfgErr)
			}
		case want == 0 && exact.Sign() != 0:
			problem := fmt.Sprintf(": %s: not 0, yet below 1ns, the shortest duration", raw)
			if err == nil || err.Error() != "httpretry: policy: "+path+problem || !errors.Is(err, ErrInvalidPolicy) {
				t.Fatalf("%s: %v of the exact value, read with %v", doc, exact, err)
			}
			if cfgErr == nil || !strings.Contains(cfgErr.Error(), "default."+path+problem) || !errors.Is(cfgErr, ErrInvalidPolicy) {
				t.Fatalf(`{"default": %s}: %v of the exact value, ParseConfig says %v`, doc, exact, cfgErr)
			}
		default:
			if err != nil {
				t.Fatalf("%s: %v", doc, err)
			}
			if d := *durationPaths(&got)[path]; d != want || (d == 0) != (exact.Sign() == 0) {
				t.Fatalf("%s read as %v; ParseDuration says %v, the exact value %v", doc, d, want, exact)
			}
			if cfgErr != nil && strings.Contains(cfgErr.Error(), "below 1ns") {
				t.Fatalf(`{"default": %s}: %v`, doc, cfgErr)
			}
		}
	})
}

// fzWaitBudget is FuzzConfigDuration for the wait budget of a backoff's
// text: the same rules, and a negative budget is malformed.
func fzWaitBudget(t *testing.T, s string) {
	text := "exponential(1ms, 1s).WithWaitBudget(" + s + ")"
	doc, _ := json.Marshal(map[string]string{"backoff": text})
	var got Policy
	err := json.Unmarshal(doc, &got)
	arg := strings.TrimSpace(s)
	want, parseErr := time.ParseDuration(arg)
	exact, _ := fzExactNanos(arg)
	switch {
	case strings.Contains(s, ",") || parseErr != nil || want < 0:
		if err == nil || errors.Is(err, ErrInvalidPolicy) {
			t.Fatalf("%s: malformed, read with %v", doc, err)
		}
	case want == 0 && exact.Sign() != 0:
		if err == nil || !strings.HasSuffix(err.Error(), "not 0, yet below 1ns, the shortest duration") || !errors.Is(err, ErrInvalidPolicy) {
			t.Fatalf("%s: %v of the exact value, read with %v", doc, exact, err)
		}
	default:
		if err != nil || got.Backoff != Exponential(time.Millisecond, time.Second).WithWaitBudget(want) {
			t.Fatalf("%s read as %v, %v; ParseDuration says %v", doc, got.Backoff, err, want)
		}
	}
}

// durationPaths are the JSON paths of every duration in a Policy, read
// from the field tables, so that a duration added later is checked too.
func durationPaths(p *Policy) map[string]*time.Duration {
	paths := make(map[string]*time.Duration)
	var walk func(path string, fields []jsonField)
	walk = func(path string, fields []jsonField) {
		for _, f := range fields {
			switch v := f.ptr.(type) {
			case *time.Duration:
				paths[joinPath(path, f.name)] = v
			case jsonObject:
				walk(joinPath(path, f.name), v.jsonFields())
			}
		}
	}
	walk("", p.jsonFields())
	return paths
}

// atPath is a JSON object holding value, itself JSON, at path ("hedge.after").
func atPath(path, value string) string {
	name, rest, nested := strings.Cut(path, ".")
	if nested {
		value = atPath(rest, value)
	}
	return fmt.Sprintf(`{%q: %s}`, name, value)
}

// fzUnits are time.ParseDuration's units in nanoseconds.
var fzUnits = map[string]int64{"ns": 1, "us": 1e3, "µs": 1e3, "μs": 1e3, "ms": 1e6, "s": 1e9, "m": 60e9, "h": 3600e9}

// fzExactNanos is the exact value of a duration text that
// time.ParseDuration accepts, in nanoseconds, without its truncation.
func fzExactNanos(s string) (*big.Rat, bool) {
	sum := new(big.Rat)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimLeft(s, "+-")
	if s == "0" {
		return sum, true
	}
	for s != "" {
		n := strings.IndexFunc(s, func(r rune) bool { return r != '.' && (r < '0' || r > '9') })
		if n <= 0 {
			return nil, false
		}
		num := s[:n]
		s = s[n:]
		u := strings.IndexAny(s, ".0123456789")
		if u < 0 {
			u = len(s)
		}
		scale, ok := fzUnits[s[:u]]
		s = s[u:]
		if num == "." || !ok {
			return nil, false
		}
		if strings.HasPrefix(num, ".") {
			num = "0" + num
		}
		v, ok := new(big.Rat).SetString(strings.TrimSuffix(num, "."))
		if !ok {
			return nil, false
		}
		sum.Add(sum, v.Mul(v, new(big.Rat).SetInt64(scale)))
	}
	if neg {
		sum.Neg(sum)
	}
	return sum, true
}

// fzRoundsToZero reports whether time.ParseDuration reads s as 0 though
// it is not 0 as written.
func fzRoundsToZero(s string) bool {
	d, err := time.ParseDuration(s)
	if err != nil || d != 0 {
		return false
	}
	exact, ok := fzExactNanos(s)
	return ok && exact.Sign() != 0
}

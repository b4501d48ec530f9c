package httpretry

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/httpretry/httpretry/internal/httprange"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every eligibility rule of Resume, one response at a time: what is not
// eligible is handed over as it came.
func TestResumeEligibility(t *testing.T) {
	served := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	date := served.Format(http.TimeFormat)
	old := served.Add(-time.Minute).Format(http.TimeFormat)
	recent := served.Add(-59 * time.Second).Format(http.TimeFormat)
	ok200 := func() *http.Response {
		return &http.Response{StatusCode: 200, ContentLength: 64 << 10, Body: io.NopCloser(strings.NewReader("")),
			Header: http.Header{"Etag": {`"a"`}, "Date": {date}}}
	}
	tests := []struct {
		name       string
		method     string
		reqHeader  http.Header
		body       bool
		maxRetries int
		resume     Resume
		edit       func(*http.Response)
		want       bool
		first      int64
		validator  string
	}{
		{name: "200 with a strong ETag", want: true, validator: `"a"`},
		{name: "empty method is GET", method: "", want: true, validator: `"a"`},
		{name: "HEAD", method: http.MethodHead},
		{name: "POST", method: http.MethodPost},
		{name: "PUT", method: http.MethodPut},
		{name: "GET with a body", body: true},
		{name: "Upgrade request", reqHeader: http.Header{"Connection": {"Upgrade"}, "Upgrade": {"websocket"}}},
		{name: "MaxRetries 0", maxRetries: -1},
		{name: "Resume.Max negative", resume: Resume{Max: -1}},
		{name: "304", edit: func(r *http.Response) { r.StatusCode = 304 }},
		{name: "404", edit: func(r *http.Response) { r.StatusCode = 404 }},
		{name: "no body", edit: func(r *http.Response) { r.Body = http.NoBody }},
		{name: "unknown length", edit: func(r *http.Response) { r.ContentLength = -1 }},
		{name: "shorter than MinBytes", edit: func(r *http.Response) { r.ContentLength = 64<<10 - 1 }},
		{name: "MinBytes set lower", resume: Resume{MinBytes: 10}, edit: func(r *http.Response) { r.ContentLength = 10 },
			want: true, validator: `"a"`},
		{name: "gzip", edit: func(r *http.Response) { r.Header.Set("Content-Encoding", "gzip") }},
		{name: "identity coding", edit: func(r *http.Response) { r.Header.Set("Content-Encoding", "identity") },
			want: true, validator: `"a"`},
		{name: "transparently decompressed", edit: func(r *http.Response) { r.Uncompressed = true }},
		{name: "weak ETag", edit: func(r *http.Response) { r.Header.Set("Etag", `W/"a"`) }},
		{name: "weak ETag beside an old Last-Modified", edit: func(r *http.Response) {
			r.Header.Set("Etag", `W/"a"`)
			r.Header.Set("Last-Modified", old)
		}},
		{name: "malformed ETag", edit: func(r *http.Response) { r.Header.Set("Etag", `a`) }},
		{name: "Last-Modified 60 s before Date", edit: func(r *http.Response) {
			r.Header.Del("Etag")
			r.Header.Set("Last-Modified", old)
		}, want: true, validator: old},
		{name: "Last-Modified 59 s before Date", edit: func(r *http.Response) {
			r.Header.Del("Etag")
			r.Header.Set("Last-Modified", recent)
		}},
		{name: "Last-Modified without Date", edit: func(r *http.Response) {
			r.Header.Del("Etag")
			r.Header.Del("Date")
			r.Header.Set("Last-Modified", old)
		}},
		{name: "no validator", edit: func(r *http.Response) { r.Header.Del("Etag") }},
		{name: "Accept-Ranges: none", edit: func(r *http.Response) { r.Header.Set("Accept-Ranges", "none") }},
		{name: "Accept-Ranges: bytes", edit: func(r *http.Response) { r.Header.Set("Accept-Ranges", "bytes") },
			want: true, validator: `"a"`},
		{name: "206 to the caller's single range", reqHeader: http.Header{"Range": {"bytes=100-"}},
			edit: func(r *http.Response) {
				r.StatusCode, r.ContentLength = 206, 1<<20-100
				r.Header.Set("Content-Range", "bytes 100-1048575/1048576")
			}, want: true, first: 100, validator: `"a"`},
		{name: "206 to several ranges", reqHeader: http.Header{"Range": {"bytes=0-1,5-9"}},
			edit: func(r *http.Response) {
				r.StatusCode = 206
				r.Header.Set("Content-Range", "bytes 0-1/1048576")
			}},
		{name: "206 the caller did not ask for", edit: func(r *http.Response) {
			r.StatusCode = 206
			r.Header.Set("Content-Range", "bytes 0-65535/1048576")
		}},
		{name: "206 without Content-Range", reqHeader: http.Header{"Range": {"bytes=0-"}},
			edit: func(r *http.Response) { r.StatusCode = 206 }},
		{name: "206 of unknown complete length", reqHeader: http.Header{"Range": {"bytes=0-"}},
			edit: func(r *http.Response) {
				r.StatusCode = 206
				r.Header.Set("Content-Range", "bytes 0-65535/*")
			}},
		{name: "206 whose length disagrees", reqHeader: http.Header{"Range": {"bytes=0-"}},
			edit: func(r *http.Response) {
				r.StatusCode, r.ContentLength = 206, 10
				r.Header.Set("Content-Range", "bytes 0-65535/1048576")
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := DefaultPolicy()
			p.Resume = tt.resume
			hp := resolvePolicy(p)
			method := tt.method
			if method == "" && !strings.Contains(tt.name, "empty") {
				method = http.MethodGet
			}
			req, err := http.NewRequest(method, "http://o.example/x", nil)
			require.NoError(t, err)
			req.Method = method
			if tt.reqHeader != nil {
				req.Header = tt.reqHeader
			}
			if tt.body {
				req.Body = io.NopCloser(strings.NewReader("x"))
			}
			resp := ok200()
			if tt.edit != nil {
				tt.edit(resp)
			}
			maxRetries := hp.maxRetries
			if tt.maxRetries < 0 {
				maxRetries = 0
			}
			at, ok := hp.resumable(req, resp, maxRetries)
			assert.Equal(t, tt.want, ok)
			if tt.want {
				assert.Equal(t, tt.first, at.first)
				assert.Equal(t, tt.validator, at.validator.Value)
				assert.Equal(t, at.size-1, at.last)
			}
		})
	}
}

// An eligible response costs one allocation, its wrapper; an ineligible
// one none.
func TestResumeWrapCost(t *testing.T) {
	hp := resolvePolicy(DefaultPolicy())
	tr := New(stubTransport{})
	req, _ := http.NewRequest(http.MethodGet, "http://o.example/x", nil)
	body := io.NopCloser(strings.NewReader(""))
	header := http.Header{"Etag": {`"a"`}}
	resp := &http.Response{StatusCode: 200, ContentLength: 1 << 20, Header: header, Body: body}
	tg := &target{scheme: "http", host: "o.example"}
	r := &route{t: tr, applier: applier{req: req, p: hp, observers: tr.observers}, maxRetries: 3}
	assert.Equal(t, 1.0, testing.AllocsPerRun(100, func() {
		resp.Body = body
		r.wrapResumable(tg, 1, 1, resp)
	}))
	_, wrapped := resp.Body.(*resumeBody)
	assert.True(t, wrapped)
	resp.ContentLength = 100
	assert.Zero(t, testing.AllocsPerRun(100, func() {
		resp.Body = body
		r.wrapResumable(tg, 1, 1, resp)
	}))
	assert.Equal(t, body, resp.Body)
}

// A body cut mid-stream over a real connection reads whole: the resume
// asks for the rest, pinned to the ETag, and is counted as a retry.
func TestResumeAfterCut(t *testing.T) {
	const size = 300_000
	o := newObject(size, cuts(100_000, 50_001))
	srv := o.serve(t)
	rec := &recorder{}
	budgets := NewBudgets()
	p := resumePolicy()
	p.Budget.Disabled = false
	rt := New(nil, WithPolicy(p), WithObserver(rec.observe), WithBudgets(budgets))
	defer rt.CloseIdleConnections()
	resp := getObject(t, rt, srv.URL)
	got, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	assert.True(t, bytes.Equal(o.data, got), "the object, byte for byte")
	assert.Equal(t, []asked{{"", ""}, {"bytes=100000-", `"v1"`}, {"bytes=150001-", `"v1"`}}, o.asked())
	assert.Equal(t, int64(size), o.bytesServed(), "no byte served twice")

	evs := rec.all()
	require.Len(t, evs, 2)
	for i, off := range []int64{100_000, 150_001} {
		assert.Equal(t, EventResume, evs[i].Kind)
		assert.Equal(t, off, evs[i].Offset)
		assert.Equal(t, i+1, evs[i].Attempt, "the attempt whose body broke")
		assert.ErrorIs(t, evs[i].Err, io.ErrUnexpectedEOF)
		assert.Zero(t, evs[i].Delay, "after progress a resume goes at once")
		assert.Equal(t, srv.URL, evs[i].Origin)
	}
	s := budgets.For(strings.TrimPrefix(srv.URL, "http://"), p.Budget).Stats()
	assert.Equal(t, 1, s.Requests, "a resume is no request")
	assert.Equal(t, 2, s.Retries, "each resume is a retry")
}

// A 206 to the caller's own range resumes inside that range.
func TestResumeInsideCallersRange(t *testing.T) {
	o := newObject(300_000, cuts(50_000))
	srv := o.serve(t)
	rt := New(nil, WithPolicy(resumePolicy()))
	defer rt.CloseIdleConnections()
	resp := getObject(t, rt, srv.URL, "Range", "bytes=1000-199999")
	require.Equal(t, http.StatusPartialContent, resp.StatusCode)
	got, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	resp.Body.Close()
	assert.True(t, bytes.Equal(o.data[1000:200000], got))
	assert.Equal(t, []asked{{"bytes=1000-199999", ""}, {"bytes=51000-199999", `"v1"`}}, o.asked())
}

// A server that ignores Range answers 200 with the same validator: what
// was delivered is skipped, and a caller's range still ends where it did.
func TestResumeServerIgnoresRange(t *testing.T) {
	for _, tt := range []struct {
		name     string
		rng      string
		from, to int
	}{
		{"whole", "", 0, 300_000},
		{"caller's range", "bytes=1000-199999", 1000, 200_000},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o := newObject(300_000, func(n int) fault {
				if n == 1 {
					return fault{cut: 70_000}
				}
				return fault{ignoreRange: true}
			})
			srv := o.serve(t)
			rt := New(nil, WithPolicy(resumePolicy()))
			defer rt.CloseIdleConnections()
			var header []string
			if tt.rng != "" {
				header = []string{"Range", tt.rng}
			}
			resp := getObject(t, rt, srv.URL, header...)
			got, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			resp.Body.Close()
			assert.True(t, bytes.Equal(o.data[tt.from:tt.to], got))
		})
	}
}

// The object replaced mid-way: If-Range gets the new version whole, a 200
// with another ETag, and not one byte of it is delivered.
func TestResumeBodyChanged(t *testing.T) {
	newer := bytes.Repeat([]byte{'n'}, 300_000)
	for _, tt := range []struct {
		name   string
		second fault
		etag   bool
	}{
		{"another ETag", fault{replace: newer}, true},
		{"another Last-Modified", fault{replace: newer}, false},
		{"416", fault{status: http.StatusRequestedRangeNotSatisfiable}, true},
		{"206 of another range", fault{status: http.StatusPartialContent,
			header: http.Header{"Content-Range": {"bytes 0-9/300000"}}}, true},
		{"206 of another size", fault{status: http.StatusPartialContent,
			header: http.Header{"Content-Range": {"bytes 100000-299999/300001"}}}, true},
		{"206 without Content-Range", fault{status: http.StatusPartialContent}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o := newObject(300_000, func(n int) fault {
				if n == 1 {
					return fault{cut: 100_000}
				}
				return tt.second
			})
			o.etag = tt.etag
			o.modtime = time.Now().Add(-time.Hour)
			original := bytes.Clone(o.data)
			srv := o.serve(t)
			rec := &recorder{}
			rt := New(nil, WithPolicy(resumePolicy()), WithObserver(rec.observe))
			defer rt.CloseIdleConnections()
			resp := getObject(t, rt, srv.URL)
			got, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			require.Error(t, err)
			assert.ErrorIs(t, err, ErrBodyChanged)
			assert.ErrorIs(t, err, io.ErrUnexpectedEOF, "the original read error")
			assert.Equal(t, 100_000, len(got), "only the bytes of the first version")
			assert.True(t, bytes.Equal(original[:100_000], got))
			assert.NotContains(t, string(got), "nnnn")
			assert.Equal(t, ReasonBodyChanged, rec.giveUp(t))
			assert.Equal(t, int64(100_000), rec.all()[len(rec.all())-1].Offset)
			_, err = resp.Body.Read(make([]byte, 1))
			assert.ErrorIs(t, err, ErrBodyChanged, "every further Read says so")
		})
	}
}

// Resume.Max bounds the resume requests of one body; the error then wraps
// the original one.
func TestResumeMax(t *testing.T) {
	o := newObject(300_000, func(int) fault { return fault{cut: 10_000} })
	srv := o.serve(t)
	rec := &recorder{}
	p := resumePolicy()
	p.Resume.Max = 2
	rt := New(nil, WithPolicy(p), WithObserver(rec.observe))
	defer rt.CloseIdleConnections()
	resp := getObject(t, rt, srv.URL)
	got, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.ErrorIs(t, err, io.ErrUnexpectedEOF)
	assert.Equal(t, 30_000, len(got), "three cuts, each after 10,000 more bytes")
	assert.True(t, bytes.Equal(o.data[:30_000], got))
	assert.Len(t, o.asked(), 3)
	assert.Equal(t, ReasonExhausted, rec.giveUp(t))
	assert.Equal(t, []EventKind{EventResume, EventResume, EventGiveUp}, rec.kinds())
}

// A budget that refuses leaves the original error, and no resume request
// is sent.
func TestResumeBudgetRefuses(t *testing.T) {
	o := newObject(300_000, cuts(100_000))
	srv := o.serve(t)
	rec := &recorder{}
	p := resumePolicy()
	p.Budget = BudgetConfig{Percent: 1, MinRetries: -1}
	rt := New(nil, WithPolicy(p), WithObserver(rec.observe))
	defer rt.CloseIdleConnections()
	resp := getObject(t, rt, srv.URL)
	got, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.ErrorIs(t, err, io.ErrUnexpectedEOF)
	host := strings.TrimPrefix(srv.URL, "http://")
	assert.Contains(t, err.Error(), "not resumed: retry budget of "+host+" spent after 0 resume request(s)",
		"whose budget, as a resend's give-up says")
	assert.Equal(t, 100_000, len(got))
	assert.Len(t, o.asked(), 1)
	assert.Equal(t, ReasonBudget, rec.giveUp(t))
	assert.Equal(t, int64(100_000), rec.all()[0].Offset)
}

// A break after the last byte loses nothing, and an answer that is not
// retried ends the body with an error naming it.
func TestResumeEnds(t *testing.T) {
	t.Run("break after the last byte", func(t *testing.T) {
		o := newObject(100_000, nil)
		base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
			resp, err := o.memoryBase().RoundTrip(r)
			if err == nil {
				resp.Body = &errAfter{ReadCloser: resp.Body}
			}
			return resp, err
		})
		rt := New(base, WithPolicy(resumePolicy()))
		resp := getObject(t, rt, "http://o.example/x")
		got, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		assert.Equal(t, 100_000, len(got))
		assert.Len(t, o.asked(), 1)
	})
	t.Run("404", func(t *testing.T) {
		o := newObject(100_000, func(n int) fault {
			if n == 1 {
				return fault{cut: 10}
			}
			return fault{status: http.StatusNotFound}
		})
		rec := &recorder{}
		rt := New(o.memoryBase(), WithPolicy(resumePolicy()), WithObserver(rec.observe))
		resp := getObject(t, rt, "http://o.example/x")
		_, err := io.ReadAll(resp.Body)
		assert.ErrorIs(t, err, io.ErrUnexpectedEOF)
		assert.ErrorContains(t, err, "404 Not Found")
		assert.Equal(t, ReasonNotRetryable, rec.giveUp(t))
	})
}

// errAfter fails a Read that reaches the end of its body with a reset in
// place of io.EOF.
type errAfter struct{ io.ReadCloser }

func (b *errAfter) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF {
		err = errors.New("connection reset by peer")
	}
	return n, err
}

// A resume request paid for and never sent, because the caller's context
// ended during its wait, is given back to the budget.
func TestResumeRefundsWhatItDidNotSend(t *testing.T) {
	o := newObject(300_000, func(n int) fault {
		switch n {
		case 1:
			return fault{cut: 100_000}
		case 2:
			return fault{status: http.StatusServiceUnavailable}
		}
		return fault{}
	})
	srv := o.serve(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rec := &recorder{}
	budgets := NewBudgets()
	p := resumePolicy()
	p.Budget.Disabled = false
	p.Backoff = Fixed(time.Hour)
	rt := New(nil, WithPolicy(p), WithBudgets(budgets), WithObserver(func(e Event) {
		rec.observe(e)
		if e.Kind == EventResume && e.Status == http.StatusServiceUnavailable {
			cancel() // during the hour's wait, which it pays for first
		}
	}))
	defer rt.CloseIdleConnections()
	resp := getCtx(t, ctx, rt, srv.URL)
	_, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.ErrorIs(t, err, context.Canceled)
	assert.ErrorIs(t, err, io.ErrUnexpectedEOF)
	assert.Len(t, o.asked(), 2)
	assert.Equal(t, ReasonCanceled, rec.giveUp(t))
	s := budgets.For(strings.TrimPrefix(srv.URL, "http://"), p.Budget).Stats()
	assert.Equal(t, 1, s.Retries, "the resume sent, not the one refunded")
}

// Bodies that end oddly: io.EOF before the declared length, in the same
// Read as their last bytes; a 200 to a resume that breaks before reaching
// the byte the body had; a 206 of the right range under another ETag.
func TestResumeOddBodies(t *testing.T) {
	for _, tt := range []struct {
		name    string
		script  func(n int) fault
		ok      bool
		asked   int
		delays  int // resumes announced
		changed bool
	}{
		{"io.EOF early", func(n int) fault {
			if n == 1 {
				return fault{cut: 40_000, early: true}
			}
			return fault{}
		}, true, 2, 1, false},
		{"200 breaks during the skip", func(n int) fault {
			switch n {
			case 1:
				return fault{cut: 50_000}
			case 2:
				return fault{ignoreRange: true, cut: 10_000}
			}
			return fault{}
		}, true, 3, 2, false},
		{"206 under another ETag", func(n int) fault {
			switch n {
			case 1:
				return fault{cut: 50_000}
			case 2:
				return fault{etag: `"v2"`}
			}
			return fault{}
		}, false, 2, 1, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o := newObject(100_000, tt.script)
			rec := &recorder{}
			rt := New(o.memoryBase(), WithPolicy(resumePolicy()), WithObserver(rec.observe))
			resp := getObject(t, rt, "http://o.example/x")
			got, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if tt.ok {
				require.NoError(t, err)
				assert.True(t, bytes.Equal(o.data, got))
			} else {
				assert.ErrorIs(t, err, io.ErrUnexpectedEOF)
				assert.Equal(t, tt.changed, errors.Is(err, ErrBodyChanged))
				assert.True(t, bytes.Equal(o.data[:len(got)], got))
			}
			assert.Len(t, o.asked(), tt.asked)
			assert.Equal(t, tt.delays, len(delays(rec.all())))
		})
	}
}

// An empty Read returns at once, even while a 200 to a resume request is
// being skipped.
func TestResumeEmptyRead(t *testing.T) {
	o := newObject(100_000, func(n int) fault {
		if n == 1 {
			return fault{cut: 50_000}
		}
		return fault{ignoreRange: true}
	})
	rt := New(o.memoryBase(), WithPolicy(resumePolicy()))
	resp := getObject(t, rt, "http://o.example/x")
	defer resp.Body.Close()
	buf := make([]byte, 50_000)
	_, err := io.ReadFull(resp.Body, buf)
	require.NoError(t, err)
	n, err := resp.Body.Read(nil)
	assert.Zero(t, n)
	assert.NoError(t, err)
	rest, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	assert.True(t, bytes.Equal(o.data, append(buf, rest...)))
	n, err = resp.Body.Read(nil)
	assert.Zero(t, n)
	assert.Equal(t, io.EOF, err, "after the end, the end")
}

// No resend, no resume: the zero Policy, Resume.Max -1 and
// WithMaxRetries(ctx, 0) hand the body over as it came; an outer
// httpretry's resend is resumed by the outer one alone.
func TestResumeOff(t *testing.T) {
	o := newObject(100_000, nil)
	off := resumePolicy()
	off.Resume.Max = -1
	for _, tt := range []struct {
		name string
		rt   http.RoundTripper
		ctx  context.Context
	}{
		{"zero Policy", New(o.memoryBase(), WithPolicy(Policy{})), context.Background()},
		{"Resume.Max -1", New(o.memoryBase(), WithPolicy(off)), context.Background()},
		{"WithMaxRetries 0", New(o.memoryBase(), WithPolicy(resumePolicy())), WithMaxRetries(context.Background(), 0)},
	} {
		resp := getCtx(t, tt.ctx, tt.rt, "http://o.example/x")
		_, wrapped := resp.Body.(*resumeBody)
		assert.False(t, wrapped, tt.name)
		resp.Body.Close()
	}
	inner := New(o.memoryBase(), WithPolicy(resumePolicy()))
	outer := New(roundTripFunc(func(r *http.Request) (*http.Response, error) {
		resp, err := inner.RoundTrip(r)
		if err == nil && AttemptFromContext(r.Context()) > 1 {
			_, wrapped := resp.Body.(*resumeBody)
			assert.False(t, wrapped, "the inner transport does not resume an outer resend")
		}
		return resp, err
	}), WithPolicy(fastPolicy(2)))
	o.script = func(n int) fault {
		if n == 1 {
			return fault{status: http.StatusServiceUnavailable}
		}
		return fault{}
	}
	resp := getObject(t, outer, "http://o.example/x")
	_, wrapped := resp.Body.(*resumeBody)
	assert.True(t, wrapped, "the outer one resumes")
	resp.Body.Close()
}

// judgeResume reads only the status and headers of an answer to a resume
// request from a fixed position: a table of fixed inputs, as judge's.
func TestJudgeResumeOfFixedAnswers(t *testing.T) {
	etag := resumeAt{validator: httprange.Validator{Value: `"v1"`, ETag: true}, first: 0, last: 99, size: 100}
	lm := resumeAt{validator: httprange.Validator{Value: "Mon, 02 Jan 2006 15:04:05 GMT"}, first: 0, last: 99, size: 100}
	ranged := resumeAt{validator: httprange.Validator{Value: `"v1"`, ETag: true}, first: 10, last: 49, size: 100}
	h := func(kv ...string) http.Header {
		hh := http.Header{}
		for i := 0; i < len(kv); i += 2 {
			hh[kv[i]] = []string{kv[i+1]}
		}
		return hh
	}
	tests := []struct {
		name   string
		at     resumeAt
		status int
		header http.Header
		length int64 // ContentLength; -1: unknown
		gzip   bool  // resp.Uncompressed
		want   resumeVerdict
	}{
		{"the rest", etag, 206, h("Content-Range", "bytes 40-99/100", "Etag", `"v1"`), 60, false, resumeAccepted},
		{"the rest, no validator field", etag, 206, h("Content-Range", "bytes 40-99/100"), -1, false, resumeAccepted},
		{"the rest of another version", etag, 206, h("Content-Range", "bytes 40-99/100", "Etag", `"v2"`), 60, false, resumeChanged},
		{"another start", etag, 206, h("Content-Range", "bytes 39-99/100"), 61, false, resumeChanged},
		{"another end", ranged, 206, h("Content-Range", "bytes 40-99/100"), 60, false, resumeChanged},
		{"the caller's range", ranged, 206, h("Content-Range", "bytes 40-49/100"), 10, false, resumeAccepted},
		{"another size", etag, 206, h("Content-Range", "bytes 40-99/101"), 60, false, resumeChanged},
		{"a length that disagrees", etag, 206, h("Content-Range", "bytes 40-99/100"), 59, false, resumeChanged},
		{"no Content-Range", etag, 206, h(), 60, false, resumeChanged},
		{"a coded range", etag, 206, h("Content-Range", "bytes 40-99/100", "Content-Encoding", "gzip"), 60, false, resumeChanged},
		{"the whole again", etag, 200, h("Etag", `"v1"`), 100, false, resumeWhole},
		{"the whole again, length unknown", etag, 200, h("Etag", `"v1"`), -1, false, resumeWhole},
		{"the whole by Last-Modified", lm, 200, h("Last-Modified", lm.validator.Value), 100, false, resumeWhole},
		{"a whole without its validator", etag, 200, h(), 100, false, resumeChanged},
		{"a whole of another version", etag, 200, h("Etag", `"v2"`), 100, false, resumeChanged},
		{"a whole of another size", etag, 200, h("Etag", `"v1"`), 101, false, resumeChanged},
		{"a whole decompressed", etag, 200, h("Etag", `"v1"`), -1, true, resumeChanged},
		{"a range not satisfiable", etag, 416, h(), 0, false, resumeChanged},
		{"a failure", etag, 503, h("Retry-After", "1"), 0, false, resumeOther},
		{"another answer", etag, 404, h(), 0, false, resumeOther},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := &http.Response{StatusCode: tt.status, Header: tt.header, ContentLength: tt.length, Uncompressed: tt.gzip}
			assert.Equal(t, tt.want, judgeResume(resp, 40, &tt.at))
		})
	}
}

// nextResume decides, at fixed instants, when the next resume request
// goes: at once after progress, as a copy; after the backoff of as many
// failures as came in a row without a byte, as a resend; never on a pool.
func TestNextResumeAtFixedInstants(t *testing.T) {
	fixed := resolvePolicy(Policy{MaxRetries: 1, Backoff: Exponential(ms(100), time.Second).Unbudgeted()})
	tests := []struct {
		name     string
		stuck    int
		raUntil  time.Duration // after t0; 0: none
		deadline time.Duration // after t0; 0: none
		waitLeft time.Duration // negative: unbounded
		wait     time.Duration
		reason   Reason
	}{
		{name: "after progress, at once", waitLeft: -1},
		{name: "after progress, not in a Retry-After", raUntil: ms(10), waitLeft: -1, reason: ReasonRetryAfterTooLong},
		{name: "after progress, a spent wait budget does not bar it", waitLeft: 0},
		{name: "one failure", stuck: 1, waitLeft: -1, wait: ms(100)},
		{name: "three failures, past MaxRetries", stuck: 3, waitLeft: -1, wait: ms(400)},
		{name: "a Retry-After lengthens", stuck: 1, raUntil: ms(700), waitLeft: -1, wait: ms(700)},
		{name: "the wait budget shortens", stuck: 3, waitLeft: ms(50), wait: ms(50)},
		{name: "the wait budget spent", stuck: 1, waitLeft: 0, reason: ReasonWaitBudget},
		{name: "past the deadline", stuck: 2, deadline: ms(200), waitLeft: -1, reason: ReasonDeadline},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &call{route: route{applier: applier{p: fixed}}, limits: limits{drawn: 7, waitLeft: tt.waitLeft}}
			c.targets = []target{{tried: true}}
			if tt.raUntil != 0 {
				c.targets[0].raUntil = t0.Add(tt.raUntil)
			}
			if tt.deadline != 0 {
				c.deadline = t0.Add(tt.deadline)
			}
			s, reason := c.nextResume(t0, tt.stuck)
			assert.Equal(t, tt.reason, reason)
			assert.Equal(t, tt.wait, s.wait)
			if reason == 0 {
				c.attempted(s)
				c.spend(s)
				assert.Equal(t, 7, c.drawn, "a resume request draws on no pool")
			}
		})
	}
}

package httpretry

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// WithLogger logs every retry, hedge and fallback at slog.LevelDebug and
// every give-up at slog.LevelWarn to l. It is an observer (see
// WithObserver) and nothing more: without it nothing is logged, and a nil l
// is ignored.
//
// A record carries the attributes method, url, attempt, and, where the
// event has them, status, error, delay, reason and origin. The url is the
// scheme, host and path only: the query, user info and fragment, which
// often hold credentials, are never logged, and neither is any header. The
// error text is cleaned the same way, since net/http's errors (*url.Error)
// quote the whole URL.
//
// Each record is checked first with l.Enabled on the request's context, so
// a disabled level costs next to nothing.
func WithLogger(l *slog.Logger) Option {
	if l == nil {
		return WithObserver(nil)
	}
	return WithObserver(func(e Event) { logEvent(l, e) })
}

// logEvent writes one record for e.
func logEvent(l *slog.Logger, e Event) {
	level := slog.LevelDebug
	if e.Kind == EventGiveUp {
		level = slog.LevelWarn
	}
	ctx := context.Background()
	if e.Request != nil {
		ctx = e.Request.Context()
	}
	if !l.Enabled(ctx, level) {
		return
	}
	attrs := make([]slog.Attr, 0, 8)
	if r := e.Request; r != nil {
		attrs = append(attrs, slog.String("method", methodOf(r)))
		if r.URL != nil {
			attrs = append(attrs, slog.String("url", redactURL(r.URL)))
		}
	}
	attrs = append(attrs, slog.Int("attempt", e.Attempt))
	if e.Status != 0 {
		attrs = append(attrs, slog.Int("status", e.Status))
	}
	if e.Err != nil {
		attrs = append(attrs, slog.String("error", redactError(e.Err, e.Request)))
	}
	if e.Kind == EventRetry {
		attrs = append(attrs, slog.Duration("delay", e.Delay))
	}
	if e.Reason != 0 {
		attrs = append(attrs, slog.String("reason", e.Reason.String()))
	}
	if e.Origin != "" {
		attrs = append(attrs, slog.String("origin", e.Origin))
	}
	l.LogAttrs(ctx, level, "httpretry "+e.Kind.String(), attrs...)
}

func methodOf(r *http.Request) string {
	if r.Method == "" {
		return http.MethodGet
	}
	return r.Method
}

// redactURL returns u's scheme, host and path: what identifies the
// endpoint, without the parts that carry credentials.
func redactURL(u *url.URL) string {
	r := url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path, RawPath: u.RawPath}
	return r.String()
}

// redactError returns err's text with every URL it quotes cut down to
// redactURL's form: the URLs of each *url.Error in err's tree, and the
// request's own URL in case a wrapper printed it.
func redactError(err error, req *http.Request) string {
	msg := err.Error()
	var raw []string
	walkErrors(err, func(e error) {
		if ue, ok := e.(*url.Error); ok && ue.URL != "" {
			raw = append(raw, ue.URL)
		}
	})
	if req != nil && req.URL != nil {
		raw = append(raw, req.URL.String(), req.URL.Redacted())
	}
	for _, s := range raw {
		safe := "[unparsable URL]"
		if u, err := url.Parse(s); err == nil {
			safe = redactURL(u)
		}
		if s == "" || s == safe {
			continue
		}
		// url.Error prints its URL with %q.
		msg = strings.ReplaceAll(msg, strconv.Quote(s), strconv.Quote(safe))
		msg = strings.ReplaceAll(msg, s, safe)
	}
	return msg
}

// walkErrors calls fn on err and every error it wraps, depth first.
func walkErrors(err error, fn func(error)) {
	for err != nil {
		fn(err)
		if multi, ok := err.(interface{ Unwrap() []error }); ok {
			for _, e := range multi.Unwrap() {
				walkErrors(e, fn)
			}
			return
		}
		err = errors.Unwrap(err)
	}
}

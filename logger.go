package httpretry

import (
	"context"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
)

// WithLogger logs every event to l. Retries, hedges, fallbacks and resumes go
// at slog.LevelDebug. Give-ups and demotions go at slog.LevelWarn, and restores
// at slog.LevelInfo. It is an observer (see WithObserver) and nothing more.
// Without it nothing is logged, and a nil l is ignored.
//
// A record carries the attributes method, url and attempt. Where the event has
// them, it also carries status, error, delay, offset, reason and origin.
//
// The url is the scheme, host and path only. The query, user info and fragment
// often hold credentials, so they are never logged, and neither is any header.
// The error text is cleaned the same way. net/http's errors (*url.Error), and
// middlewares inside httpretry, quote the whole URL. So every URL in the error
// is cut, whichever origin the attempt went to. The request's user info, query
// and fragment are taken out wherever they appear.
//
// Each event is checked first with l.Enabled on the request's context. So a
// disabled level costs no allocation, retries included.
func WithLogger(l *slog.Logger) Option {
	return optionFunc(func(c *config) {
		if l != nil {
			c.observers = append(c.observers, observer{
				fn:      func(e Event) { logEvent(l, e) },
				enabled: func(ctx context.Context, kind EventKind) bool { return l.Enabled(ctx, levelOf(kind)) },
			})
		}
	})
}

// levelOf is the level an event of kind is logged at: a give-up or a
// demotion is the operator's business, a restore is news, the rest detail.
func levelOf(kind EventKind) slog.Level {
	switch kind {
	case EventGiveUp, EventDemote:
		return slog.LevelWarn
	case EventRestore:
		return slog.LevelInfo
	}
	return slog.LevelDebug
}

// logEvent writes one record for e.
func logEvent(l *slog.Logger, e Event) {
	level := levelOf(e.Kind)
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
	if e.Kind == EventRetry || e.Kind == EventDemote || e.Kind == EventResume ||
		e.Kind == EventHedge && e.Reason == 0 {
		attrs = append(attrs, slog.Duration("delay", e.Delay))
	}
	if e.Offset != 0 {
		attrs = append(attrs, slog.Int64("offset", e.Offset))
	}
	if e.Reason != 0 {
		attrs = append(attrs, slog.String("reason", e.Reason.String()))
	}
	if e.Origin != "" {
		attrs = append(attrs, slog.String("origin", e.Origin))
	}
	msg := "httpretry " + e.Kind.String()
	if e.Kind == EventHedge && e.Reason != 0 {
		msg = "httpretry hedge refused" // due, and not sent: never told as a copy
	}
	l.LogAttrs(ctx, level, msg, attrs...)
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
// redactURL's form, whichever attempt's URL it is (a fallback's included)
// and however it is quoted, and with the parts of the request's URL that
// carry credentials (user info, query, fragment) taken out wherever they
// stand alone, as in a request URI a middleware printed.
func redactError(err error, req *http.Request) string {
	msg := redactURLs(err.Error())
	if req == nil || req.URL == nil {
		return msg
	}
	u := req.URL
	var secrets [3]string
	if u.User != nil {
		secrets[0] = u.User.String() + "@"
	}
	if u.RawQuery != "" {
		secrets[1] = "?" + u.RawQuery
	}
	if u.Fragment != "" {
		secrets[2] = "#" + u.EscapedFragment()
	}
	for _, s := range secrets {
		if s != "" {
			msg = strings.ReplaceAll(msg, s, "")
		}
	}
	return msg
}

// redactURLs cuts every absolute URL in msg ("scheme://…" up to a space,
// a quote or an angle bracket) to redactURL's form; one that does not
// parse becomes "[unparsable URL]".
func redactURLs(msg string) string {
	var b strings.Builder
	for {
		i := strings.Index(msg, "://")
		if i < 0 {
			break
		}
		start := i
		for start > 0 && isSchemeByte(msg[start-1]) {
			start--
		}
		end := i + len("://")
		for end < len(msg) && !strings.ContainsRune(" \t\n\r\"'`<>", rune(msg[end])) {
			end++
		}
		// Punctuation after a URL in running text belongs to the text.
		for end > i+len("://") && strings.ContainsRune(".,;:)", rune(msg[end-1])) {
			end--
		}
		if start == i {
			b.WriteString(msg[:end])
			msg = msg[end:]
			continue
		}
		b.WriteString(msg[:start])
		safe := "[unparsable URL]"
		if u, err := url.Parse(msg[start:end]); err == nil {
			safe = redactURL(u)
		}
		b.WriteString(safe)
		msg = msg[end:]
	}
	if b.Len() == 0 {
		return msg
	}
	b.WriteString(msg)
	return b.String()
}

func isSchemeByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'
}

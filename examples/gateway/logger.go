package main

import (
	"log/slog"
	"strings"

	"github.com/httpretry/httpretry"
)

// withLogger stands in for httpretry.WithLogger until it lands, with the
// same records: retries, hedges and fallbacks at Debug, give-ups at Warn,
// and a url without query or user info. When it lands, call
// httpretry.WithLogger in build and delete this file.
func withLogger(l *slog.Logger) httpretry.Option {
	return httpretry.WithObserver(func(e httpretry.Event) {
		level := slog.LevelDebug
		if e.Kind == httpretry.EventGiveUp {
			level = slog.LevelWarn
		}
		ctx := e.Request.Context()
		if !l.Enabled(ctx, level) {
			return
		}
		u := *e.Request.URL
		u.User, u.RawQuery, u.ForceQuery, u.Fragment = nil, "", false, ""
		attrs := []slog.Attr{
			slog.String("method", e.Request.Method),
			slog.String("url", u.String()),
			slog.Int("attempt", e.Attempt),
		}
		if e.Status != 0 {
			attrs = append(attrs, slog.Int("status", e.Status))
		}
		if e.Err != nil {
			// net/http's errors may quote the whole URL, query included.
			msg := strings.ReplaceAll(e.Err.Error(), e.Request.URL.String(), u.String())
			attrs = append(attrs, slog.String("error", msg))
		}
		if e.Kind == httpretry.EventRetry {
			attrs = append(attrs, slog.Duration("delay", e.Delay))
		}
		if e.Reason != 0 {
			attrs = append(attrs, slog.String("reason", e.Reason.String()))
		}
		attrs = append(attrs, slog.String("origin", e.Origin))
		l.LogAttrs(ctx, level, "httpretry "+e.Kind.String(), attrs...)
	})
}

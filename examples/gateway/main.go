// Command gateway is a small reverse proxy with httpretry as its transport:
// routes and per-upstream retry policies (fallback origins included) from a
// JSON file, reloaded on SIGHUP or when the file changes, a per-request cap
// on resends from the X-Retry-Max header, JSON logs on stderr, and every
// upstream's retry budget at /debug/vars.
//
//	go run ./examples/gateway -config examples/gateway/gateway.json
package main

import (
	"context"
	"errors"
	"expvar"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/httpretry/httpretry"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stderr)
	stop()
	switch {
	case errors.Is(err, flag.ErrHelp):
	case errors.Is(err, errUsage):
		os.Exit(2) // the flag package has said why
	case err != nil:
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// errUsage marks a command line the flag package rejected and reported.
var errUsage = errors.New("gateway: usage")

// shutdownGrace bounds how long requests under way may take to finish once
// the gateway is told to stop.
const shutdownGrace = 10 * time.Second

// budgets is the process's one budget registry, published at /debug/vars
// as "httpretry" once: expvar.Publish panics on a second publish of a name,
// and run may be called more than once in a process (by the tests).
var budgets = sync.OnceValue(func() *httpretry.Budgets {
	b := httpretry.NewBudgets()
	expvar.Publish("httpretry", b)
	return b
})

// run serves the gateway until ctx ends, then shuts it down gracefully.
// It logs to stderr in JSON; its first record after loading, "listening",
// carries the address, so that -listen 127.0.0.1:0 can be found.
func run(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("gateway", flag.ContinueOnError)
	fs.SetOutput(stderr)
	configPath := fs.String("config", "gateway.json", "the configuration `file`")
	listen := fs.String("listen", "127.0.0.1:8080", "the `address` to serve on")
	poll := fs.Duration("poll", time.Second, "how often to look for a change of the configuration file; 0: only on SIGHUP")
	var level slog.Level
	fs.TextVar(&level, "log-level", slog.LevelInfo, "the lowest `level` logged: DEBUG shows every retry and fallback")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	log := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: level}))

	g, err := newGateway(*configPath, budgets(), log)
	if err != nil {
		return err
	}
	defer g.Close()
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return fmt.Errorf("gateway: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/debug/vars", expvar.Handler())
	mux.Handle("/", g)
	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	// Before "listening": from then on a SIGHUP must reload, not kill.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	log.Info("listening", "addr", ln.Addr().String())

	var tick <-chan time.Time
	if *poll > 0 {
		t := time.NewTicker(*poll)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-hup:
			if err := g.Reload(); err != nil {
				log.Error("config reload failed; serving the previous one", "error", err.Error())
			}
		case <-tick:
			if _, err := g.reloadIfChanged(); err != nil {
				log.Error("config reload failed; serving the previous one", "error", err.Error())
			}
		case err := <-served:
			return fmt.Errorf("gateway: %w", err)
		case <-ctx.Done():
			log.Info("shutting down")
			sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
			defer cancel()
			if err := srv.Shutdown(sctx); err != nil {
				srv.Close() // the grace is over: cut the requests still under way
				return fmt.Errorf("gateway: shutdown: %w", err)
			}
			<-served // http.ErrServerClosed, now that Shutdown returned
			return nil
		}
	}
}

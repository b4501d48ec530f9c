// Command fleetclient is one client of a fleet, run as a process of its
// own by cmd/fleetprocs: it sends its share of a bench.FleetConfig's
// requests to an upstream through one library, with that library's state
// (httpretry's budget registry) private to the process, and prints the
// calls that completed as JSON on stdout.
//
//	fleetclient -url URL -lib httpretry -client 3 -clients 20 -start UNIXNANO [-per-window 2 -windows 60 -window 100ms]
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/httpretry/httpretry/bench"
)

func main() {
	var (
		cfg        bench.FleetConfig
		url, name  string
		client     int
		startNanos int64
	)
	flag.StringVar(&url, "url", "", "the upstream's base URL")
	flag.StringVar(&name, "lib", bench.NameHTTPRetry, "the library: httpretry, retryablehttp, failsafe or failsafe-budget")
	flag.IntVar(&client, "client", 0, "this client's number, from 0")
	flag.IntVar(&cfg.Clients, "clients", 1, "how many clients the fleet has")
	flag.IntVar(&cfg.PerWindow, "per-window", 2, "requests per window")
	flag.IntVar(&cfg.Windows, "windows", 60, "how many windows the run lasts")
	flag.DurationVar(&cfg.Window, "window", 100*time.Millisecond, "the compressed budget window")
	flag.Int64Var(&startNanos, "start", 0, "when the fleet starts, in Unix nanoseconds")
	flag.Parse()
	cfg.FailRate = 1
	if err := run(cfg, url, name, client, time.Unix(0, startNanos)); err != nil {
		fmt.Fprintln(os.Stderr, "fleetclient:", err)
		os.Exit(1)
	}
}

func run(cfg bench.FleetConfig, url, name string, client int, start time.Time) error {
	lib, ok := bench.FleetLibraryByName(name)
	if !ok {
		return fmt.Errorf("unknown library %q", name)
	}
	if url == "" || client < 0 || client >= cfg.Clients || start.IsZero() {
		return errors.New("-url, -start and a -client below -clients are required")
	}
	base := bench.NewLoopbackBase()
	defer base.CloseIdleConnections()
	ctx, stop := context.WithDeadline(context.Background(), cfg.Deadline(start))
	defer stop()
	calls := bench.RunFleetClient(ctx, lib.New(base, cfg.Scale()), cfg, client, url, start)
	return json.NewEncoder(os.Stdout).Encode(calls)
}

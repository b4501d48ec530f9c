// Command fleetprocs runs the quiet fleet in an outage twice for each
// library, once in this process (bench.RunFleet) and once as real
// processes (cmd/fleetclient, one process per client, each with its own
// budget registry), against the same kind of loopback upstream, and prints
// both amplifications as a Markdown table, to show that the in-process
// simulation of scenario 6 agrees with a fleet of processes.
//
// Run it from the bench module, whose cmd/fleetclient it builds:
//
//	go run ./cmd/fleetprocs [-procs 20] [-windows 60] [-window 100ms]
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/httpretry/httpretry/bench"
)

// startDelay lets every process start and build its transport before the
// fleet's first request is due.
const startDelay = 2 * time.Second

func main() {
	cfg := bench.FleetConfig{PerWindow: 2, FailRate: 1}
	flag.IntVar(&cfg.Clients, "procs", 20, "clients, and so processes")
	flag.IntVar(&cfg.Windows, "windows", 60, "how many windows the run lasts")
	flag.DurationVar(&cfg.Window, "window", 100*time.Millisecond, "the compressed budget window")
	flag.Parse()
	if err := run(os.Stdout, os.Stderr, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "fleetprocs:", err)
		os.Exit(1)
	}
}

func run(w, log io.Writer, cfg bench.FleetConfig) error {
	dir, err := os.MkdirTemp("", "fleetprocs")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "fleetclient")
	build := exec.Command("go", "build", "-o", bin, "github.com/httpretry/httpretry/bench/cmd/fleetclient")
	build.Stderr = log
	if err := build.Run(); err != nil {
		return fmt.Errorf("build fleetclient: %w", err)
	}

	t := bench.NewTable(1, "library", "in process: requests", "upstream", "amplification",
		fmt.Sprintf("%d processes: requests", cfg.Clients), "upstream", "amplification")
	for _, lib := range bench.FleetLibraries() {
		in, err := bench.RunFleet(lib, cfg)
		if err != nil {
			return err
		}
		fmt.Fprintf(log, "in process %s: %+v\n", lib.Name, in)
		out, err := runProcesses(bin, lib.Name, cfg)
		if err != nil {
			return fmt.Errorf("%s: %w", lib.Name, err)
		}
		fmt.Fprintf(log, "processes %s: %+v\n", lib.Name, out)
		t.Add(lib.Name,
			strconv.Itoa(in.Requests), strconv.FormatInt(in.Upstream, 10), fmt.Sprintf("%.2f×", in.Amplification()),
			strconv.Itoa(out.Requests), strconv.FormatInt(out.Upstream, 10), fmt.Sprintf("%.2f×", out.Amplification()))
	}
	fmt.Fprintf(w, "Quiet fleet in a total outage: %d clients × %d requests per window of %s for %d windows, "+
		"in one process and as %d processes.\n\n", cfg.Clients, cfg.PerWindow, cfg.Window, cfg.Windows, cfg.Clients)
	_, err = t.WriteTo(w)
	return err
}

// runProcesses starts one fleetclient per client against a fresh upstream
// and sums what they report.
func runProcesses(bin, lib string, cfg bench.FleetConfig) (bench.FleetResult, error) {
	up, err := bench.NewFleetUpstream(cfg)
	if err != nil {
		return bench.FleetResult{}, err
	}
	defer up.Close()
	start := time.Now().Add(startDelay)
	var (
		mu    sync.Mutex
		calls []bench.FleetCall
		errs  []error
		wg    sync.WaitGroup
	)
	for c := range cfg.Clients {
		cmd := exec.Command(bin, "-url", up.URL, "-lib", lib,
			"-client", strconv.Itoa(c), "-clients", strconv.Itoa(cfg.Clients),
			"-per-window", strconv.Itoa(cfg.PerWindow), "-windows", strconv.Itoa(cfg.Windows),
			"-window", cfg.Window.String(), "-start", strconv.FormatInt(start.UnixNano(), 10))
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Start(); err != nil {
			return bench.FleetResult{}, err
		}
		wg.Go(func() {
			var got []bench.FleetCall
			err := cmd.Wait()
			if err == nil {
				err = json.Unmarshal(stdout.Bytes(), &got)
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, fmt.Errorf("client %d: %w: %s", c, err, stderr.String()))
				return
			}
			calls = append(calls, got...)
		})
	}
	wg.Wait()
	if len(errs) > 0 {
		return bench.FleetResult{}, errs[0]
	}
	return bench.SummariseFleet(lib, cfg, up, calls, time.Since(start)), nil
}

// Command metastablereport measures whether a server of fixed capacity
// recovers from a trigger under each client (DESIGN point 22), and prints
// Markdown tables: per client, its edge (the highest load up to which the
// server recovers at every load of the sweep) and its median time to
// recovery over the seeds at a few loads.
//
// By default every run is in virtual time, in a synctest bubble, the
// server in process: the figures do not depend on the machine. -loopback
// runs the same server behind a real net/http server on 127.0.0.1, in
// real time (70 s a run).
//
//	go run ./cmd/metastablereport                     # 15 loads × 9 seeds × 5 clients in virtual time: about 10 minutes
//	go run ./cmd/metastablereport -loads 0.5,0.8 -seeds 3
//	go run ./cmd/metastablereport -loopback           # 5 loads × 1 seed × 5 clients over loopback: about 30 minutes
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/httpretry/httpretry/bench"
)

// tableLoads are the loads whose times to recovery the table shows.
var tableLoads = []float64{0.5, 0.8, 0.85, 0.9, 0.95}

type options struct {
	cfg      bench.MetastableConfig // the load and seed aside
	loopback bool
	loads    []float64
	seeds    []uint64
	clients  []bench.MetastableClient
	parallel int
}

func main() {
	testing.Init() // registers the -test flags testing.Main reads
	loopback := flag.Bool("loopback", false, "run over loopback in real time rather than in virtual time")
	loads := flag.String("loads", "", "comma-separated loads (default 0.25 to 0.95 by 0.05; with -loopback, "+formatLoads(tableLoads)+")")
	seeds := flag.Int("seeds", 0, "seeds per load, from 1 (default 9; with -loopback, 1)")
	clients := flag.String("clients", "", "comma-separated clients (default all)")
	parallel := flag.Int("parallel", 0, "runs at once (default GOMAXPROCS; with -loopback, 1)")
	cfg := bench.MetastableScenario(0, 0)
	flag.DurationVar(&cfg.Trigger, "trigger", cfg.Trigger, "how long the trigger cuts the capacity")
	flag.Float64Var(&cfg.TriggerShare, "share", cfg.TriggerShare, "the share of capacity left while the trigger lasts (0: the server stops)")
	flag.Parse()

	opt, err := parseOptions(*loopback, *loads, *seeds, *clients, *parallel)
	opt.cfg = cfg
	if err != nil {
		fmt.Fprintln(os.Stderr, "metastablereport:", err)
		os.Exit(2)
	}
	if opt.loopback {
		if err := report(os.Stdout, os.Stderr, bench.LoopbackMetastable, opt); err != nil {
			fmt.Fprintln(os.Stderr, "metastablereport:", err)
			os.Exit(1)
		}
		return
	}
	// A synctest bubble needs a *testing.T: the sweep runs as the one test
	// of testing.Main, which prints its own verdict on os.Stdout; that goes
	// to stderr, so that stdout carries the tables alone.
	out := os.Stdout
	os.Stdout = os.Stderr
	if err := flag.Set("test.timeout", "0"); err != nil {
		fmt.Fprintln(os.Stderr, "metastablereport:", err)
		os.Exit(1)
	}
	testing.Main(func(string, string) (bool, error) { return true, nil },
		[]testing.InternalTest{{Name: "MetastableSweep", F: func(t *testing.T) {
			if err := report(out, os.Stderr, bench.VirtualMetastable(t), opt); err != nil {
				t.Fatal(err)
			}
		}}}, nil, nil)
}

func parseOptions(loopback bool, loads string, seeds int, clients string, parallel int) (options, error) {
	opt := options{loopback: loopback, parallel: parallel}
	switch {
	case loads != "":
		for f := range strings.SplitSeq(loads, ",") {
			l, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
			if err != nil || l <= 0 {
				return opt, fmt.Errorf("bad load %q", f)
			}
			opt.loads = append(opt.loads, l)
		}
		slices.Sort(opt.loads)
	case loopback:
		opt.loads = tableLoads
	default:
		for i := 5; i <= 19; i++ {
			opt.loads = append(opt.loads, float64(i)/20)
		}
	}
	if seeds <= 0 {
		seeds = 9
		if loopback {
			seeds = 1
		}
	}
	for s := 1; s <= seeds; s++ {
		opt.seeds = append(opt.seeds, uint64(s))
	}
	for _, c := range bench.MetastableClients() {
		if clients == "" || slices.Contains(strings.Split(clients, ","), c.Name) {
			opt.clients = append(opt.clients, c)
		}
	}
	if len(opt.clients) == 0 {
		return opt, fmt.Errorf("no client among %q", clients)
	}
	if opt.parallel <= 0 {
		opt.parallel = runtime.GOMAXPROCS(0)
		if loopback {
			opt.parallel = 1
		}
	}
	return opt, nil
}

// report runs every client at every load and seed, opt.parallel runs at
// once, and writes the tables to w and each (client, load) as it ends to
// progress.
func report(w, progress io.Writer, run bench.MetastableRunner, opt options) error {
	start := time.Now()
	curves := make([][]bench.MetastableLoad, len(opt.clients))
	for i := range curves {
		curves[i] = make([]bench.MetastableLoad, len(opt.loads))
	}
	type job struct{ c, l int }
	jobs := make(chan job)
	errs := make(chan error, opt.parallel)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range opt.parallel {
		wg.Go(func() {
			for j := range jobs {
				t0 := time.Now()
				c, l := opt.clients[j.c], opt.loads[j.l]
				curve, err := bench.MetastableCurve(run, c, opt.cfg, []float64{l}, opt.seeds)
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				curves[j.c][j.l] = curve[0]
				fmt.Fprintf(progress, "%-18s %.2f  %s  attempts/request %.2f  holds %d  took %v\n", c.Name, l,
					recoveryCell(curve[0]), curve[0].Amplification(), holds(curve[0]), time.Since(t0).Round(time.Millisecond))
				mu.Unlock()
			}
		})
	}
	var err error
send:
	for c := range opt.clients {
		for l := range opt.loads {
			select {
			case jobs <- job{c, l}:
			case err = <-errs:
				break send
			}
		}
	}
	close(jobs)
	wg.Wait()
	if err != nil {
		return err
	}
	select {
	case err := <-errs:
		return err
	default:
	}
	return write(w, opt, curves, time.Since(start))
}

func write(w io.Writer, opt options, curves [][]bench.MetastableLoad, took time.Duration) error {
	cfg := opt.cfg
	how := "in virtual time (synctest), the server in process"
	if opt.loopback {
		how = "over loopback in real time, the server behind net/http on 127.0.0.1"
	}
	fmt.Fprintf(w, "## Metastability: does the server recover?\n\n")
	fmt.Fprintf(w, "A FIFO server of %g requests/s that does the work of attempts whose client gave up; open-loop Poisson arrivals at load × capacity; every attempt cut at %s; after %s, capacity cut to %g %% for %s. "+
		"Recovered: from some instant on, for %s, every %s window had at least %g %% of its attempts done within %s and at least %g %% of the requests sent in it succeeded, and so had the last %s before the horizon (%s after the trigger's start). "+
		"Time to recovery is from the trigger's start, the median over %d seeds (a run that did not recover counts as longer); a client recovers at a load when more than half of its seeds do. "+
		"Edge: the highest load up to which it recovers at every load of the sweep (%s). Every client gets the same arrivals for a seed and load. Run %s; took %v.\n\n",
		cfg.Capacity, dur(cfg.Cut), dur(cfg.WarmUp), 100*cfg.TriggerShare, dur(cfg.Trigger),
		dur(cfg.Sustain), dur(bench.MetastableWindow), 100*bench.MetastableInTime, dur(cfg.Cut),
		100*bench.MetastableGoodput, dur(cfg.Sustain), dur(cfg.Horizon),
		len(opt.seeds), formatLoads(opt.loads), how, took.Round(time.Second))

	shown := slices.DeleteFunc(slices.Clone(tableLoads), func(l float64) bool { return !slices.Contains(opt.loads, l) })
	header := []string{"client", "edge", "down from"}
	for _, l := range shown {
		header = append(header, fmt.Sprintf("at %.2f", l))
	}
	t := bench.NewTable(1, header...)
	amp := bench.NewTable(1, append([]string{"client"}, header[3:]...)...)
	for i, c := range opt.clients {
		edge := "below " + formatLoads(opt.loads[:1])
		if e, ok := bench.MetastableEdge(curves[i]); ok {
			edge = fmt.Sprintf("%.2f", e)
		}
		down := "—"
		for _, l := range curves[i] {
			if _, up := l.Median(); !up {
				down = fmt.Sprintf("%.2f", l.Load)
				break
			}
		}
		row := []string{c.Name, edge, down}
		amps := []string{c.Name}
		for _, l := range shown {
			p := curves[i][slices.Index(opt.loads, l)]
			row = append(row, recoveryCell(p))
			amps = append(amps, fmt.Sprintf("%.2f", p.Amplification()))
		}
		t.Add(row...)
		amp.Add(amps...)
	}
	if _, err := t.WriteTo(w); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nAttempts the server admitted per request, over every seed (the whole run, warm-up included):\n\n")
	_, err := amp.WriteTo(w)
	return err
}

// recoveryCell is a load's median time to recovery and how many seeds
// recovered: "2.64 s (9/9)", or "down (2/9)".
func recoveryCell(l bench.MetastableLoad) string {
	d, ok := l.Median()
	if !ok {
		return fmt.Sprintf("down (%d/%d)", l.Recovered(), len(l.Runs))
	}
	return fmt.Sprintf("%.2f s (%d/%d)", d.Seconds(), l.Recovered(), len(l.Runs))
}

// dur prints d as prose does: "200 ms", "1.5 s".
func dur(d time.Duration) string {
	if d < time.Second {
		return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', -1, 64) + " ms"
	}
	return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + " s"
}

func holds(l bench.MetastableLoad) int {
	n := 0
	for _, r := range l.Runs {
		n += r.Holds
	}
	return n
}

func formatLoads(ls []float64) string {
	s := make([]string, len(ls))
	for i, l := range ls {
		s[i] = strconv.FormatFloat(l, 'f', -1, 64)
	}
	return strings.Join(s, ", ")
}

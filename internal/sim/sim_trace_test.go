package sim_test

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"
)

// maxTraceLines bounds a printed trace; beyond it only the lines of the
// requests a violation names are kept.
const maxTraceLines = 400

// report is a failing run made readable: the seed and how to replay it,
// what was drawn, the violations, and the trace in virtual time: whole
// when full (a replay), else beyond maxTraceLines only the lines of the
// requests the violations name.
func (run *simRun) report(vs []violation, full bool) string {
	var b strings.Builder
	cfg := run.cfg
	fmt.Fprintf(&b, "\nsimulator seed %d (%s): %d violation(s)\n", run.seed, cfg.scenario, len(vs))
	hold := ""
	if *simHold != "auto" {
		hold = " -sim.hold=" + *simHold
	}
	fmt.Fprintf(&b, "replay: go test ./internal/sim -run 'TestSimulate$' -sim.seed=%d%s -v\n", run.seed, hold)
	for i, p := range cfg.policies {
		j, _ := json.Marshal(p)
		fmt.Fprintf(&b, "policy of transport %d: %s", i, j)
		if p.RetryIf != nil {
			b.WriteString(" +RetryIf(errors, 502, 503)")
		}
		b.WriteString("\n")
	}
	if cfg.viaJSON {
		b.WriteString("the transports run these policies as ParseConfig reads them back\n")
	}
	if cfg.nested {
		j, _ := json.Marshal(cfg.inner)
		fmt.Fprintf(&b, "nested: each transport wraps an httpretry with policy %s\n", j)
		if cfg.viaMiddleware {
			fmt.Fprintf(&b, "through an opaque middleware\n")
		}
	}
	if cfg.plainBase {
		fmt.Fprintf(&b, "plain base: the origins behind an *http.Transport\n")
	}
	if op := cfg.outage; op != nil {
		fmt.Fprintf(&b, "outage: %s\n", op)
	}
	if cfg.burst {
		fmt.Fprintf(&b, "burst: clients whose one request goes at the first instant\n")
	}
	if len(cfg.policies) > 1 {
		fmt.Fprintf(&b, "shared Budgets: %v\n", cfg.sharedBudgets)
	}
	if cfg.panicOn != nil {
		fmt.Fprintf(&b, "an observer panics on %v for requests whose id is a multiple of %d\n", kinds(cfg.panicOn), cfg.panicEvery)
	}
	if cfg.sleepOn != nil {
		fmt.Fprintf(&b, "an observer sleeps %v on %v\n", cfg.sleepFor, kinds(cfg.sleepOn))
	}
	for _, o := range cfg.origins {
		fmt.Fprintf(&b, "origin %s:", o.url)
		if o.script != nil {
			b.WriteString(" scripted")
		}
		for _, p := range o.phases {
			var ws []string
			for k, w := range p.weights {
				if w > 0 {
					ws = append(ws, fmt.Sprintf("%s×%d", behaviour(k), w))
				}
			}
			fmt.Fprintf(&b, " [until %v: %s]", p.until, strings.Join(ws, " "))
		}
		if len(o.raKinds) > 0 {
			fmt.Fprintf(&b, " Retry-After %q", o.raKinds)
		}
		b.WriteString("\n")
	}
	vs = append([]violation(nil), vs...)
	sort.SliceStable(vs, func(i, j int) bool {
		if vs[i].req != vs[j].req {
			return vs[i].req < vs[j].req
		}
		return vs[i].inv < vs[j].inv
	})
	named := map[int]bool{}
	for _, v := range vs {
		fmt.Fprintf(&b, "VIOLATION %s (request %d): %s\n", v.inv, v.req, v.msg)
		named[v.req] = true
	}
	lines := run.trace
	if len(lines) > maxTraceLines && !full {
		var kept []traceLine
		for _, l := range lines {
			if named[l.req] || named[-1] && len(kept) < maxTraceLines {
				kept = append(kept, l)
			}
		}
		fmt.Fprintf(&b, "trace: %d lines, those of the requests named above:\n", len(lines))
		lines = kept[:min(len(kept), 4*maxTraceLines)]
	} else {
		b.WriteString("trace:\n")
	}
	for _, l := range lines {
		fmt.Fprintf(&b, "%12s  req %3d  %s\n", fmtDur(l.at), l.req, l.text)
	}
	return b.String()
}

func fmtDur(d time.Duration) string {
	return fmt.Sprintf("%.3fms", float64(d)/float64(time.Millisecond))
}

func kinds[K interface {
	comparable
	fmt.Stringer
}](m map[K]bool) []string {
	var s []string
	for k, on := range m {
		if on {
			s = append(s, k.String())
		}
	}
	return s
}

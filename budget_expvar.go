package httpretry

import (
	"bytes"
	"cmp"
	"encoding/json"
	"slices"
	"time"
)

// Range calls fn for every host bs holds, in order of host name, with the
// host's BudgetStats, all taken at one instant, until fn returns false. It
// holds no lock while fn runs, so fn may use bs.
func (bs *Budgets) Range(fn func(host string, s BudgetStats) bool) {
	type entry struct {
		host string
		r    *originRecord
	}
	var hosts []entry
	bs.hosts.Range(func(k, v any) bool {
		hosts = append(hosts, entry{k.(string), v.(*originRecord)})
		return true
	})
	slices.SortFunc(hosts, func(x, y entry) int { return cmp.Compare(x.host, y.host) })
	now := time.Now()
	for _, e := range hosts {
		if !fn(e.host, e.r.stats(now)) {
			return
		}
	}
}

// String returns bs as a JSON object keyed by host, each value that host's
// BudgetStats with its names in lower camel case and its durations as
// duration strings ("12.288ms"), so that a *Budgets is an expvar.Var:
// expvar.Publish("httpretry", budgets) shows every host's window at
// /debug/vars.
func (bs *Budgets) String() string {
	var buf bytes.Buffer
	buf.WriteByte('{')
	bs.Range(func(host string, s BudgetStats) bool {
		if buf.Len() > 1 {
			buf.WriteByte(',')
		}
		k, _ := json.Marshal(host) // a string and a struct of ints and strings cannot fail
		v, _ := json.Marshal(newBudgetStatsJSON(s))
		buf.Write(k)
		buf.WriteByte(':')
		buf.Write(v)
		return true
	})
	buf.WriteByte('}')
	return buf.String()
}

// budgetStatsJSON is BudgetStats as Budgets.String shows it: durations as
// Go duration strings, as in configuration JSON, not encoding/json's
// nanoseconds.
type budgetStatsJSON struct {
	Requests   int    `json:"requests"`
	Retries    int    `json:"retries"`
	Allowance  int    `json:"allowance"`
	Credit     int    `json:"credit"`
	HedgeAfter string `json:"hedgeAfter"`
	DemotedFor string `json:"demotedFor"`
}

func newBudgetStatsJSON(s BudgetStats) budgetStatsJSON {
	return budgetStatsJSON{s.Requests, s.Retries, s.Allowance, s.Credit,
		s.HedgeAfter.String(), s.DemotedFor.String()}
}

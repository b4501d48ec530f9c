package httpretry

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"time"
)

// Range calls fn for every host bs holds, in order of host name, until fn
// returns false. It passes the host's BudgetStats, all taken at one instant. It
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
// BudgetStats. So a *Budgets is an expvar.Var: expvar.Publish("httpretry",
// budgets) shows every host's window at /debug/vars.
func (bs *Budgets) String() string {
	var buf bytes.Buffer
	buf.WriteByte('{')
	bs.Range(func(host string, s BudgetStats) bool {
		if buf.Len() > 1 {
			buf.WriteByte(',')
		}
		k, _ := json.Marshal(host) // a string and a struct of ints cannot fail
		v, _ := json.Marshal(s)
		buf.Write(k)
		buf.WriteByte(':')
		buf.Write(v)
		return true
	})
	buf.WriteByte('}')
	return buf.String()
}

// budgetStatsJSON is BudgetStats as JSON shows it: durations as Go
// duration strings, as in configuration JSON.
type budgetStatsJSON struct {
	Requests   int    `json:"requests"`
	Retries    int    `json:"retries"`
	Allowance  int    `json:"allowance"`
	Credit     int    `json:"credit"`
	Copies     int    `json:"copies"`
	HedgeAfter string `json:"hedgeAfter"`
	DemotedFor string `json:"demotedFor"`
	Streak     int    `json:"streak"`
	Parked     int    `json:"parked"`
}

// MarshalJSON writes s with its field names in lower camel case and its
// durations as duration strings ("12.288ms").
func (s BudgetStats) MarshalJSON() ([]byte, error) {
	return json.Marshal(budgetStatsJSON{s.Requests, s.Retries, s.Allowance, s.Credit,
		s.Copies, s.HedgeAfter.String(), s.DemotedFor.String(), s.Streak, s.Parked})
}

// UnmarshalJSON reads what MarshalJSON writes. A duration left out is 0.
func (s *BudgetStats) UnmarshalJSON(data []byte) error {
	var j budgetStatsJSON
	if err := json.Unmarshal(data, &j); err != nil {
		return err
	}
	v := BudgetStats{Requests: j.Requests, Retries: j.Retries, Allowance: j.Allowance, Credit: j.Credit,
		Copies: j.Copies, Streak: j.Streak, Parked: j.Parked}
	for _, d := range []struct {
		text string
		dst  *time.Duration
	}{{j.HedgeAfter, &v.HedgeAfter}, {j.DemotedFor, &v.DemotedFor}} {
		if d.text == "" {
			continue
		}
		parsed, err := time.ParseDuration(d.text)
		if err != nil {
			return fmt.Errorf("httpretry: budget stats: %w", err)
		}
		*d.dst = parsed
	}
	*s = v
	return nil
}

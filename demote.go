package httpretry

import (
	"fmt"
	"time"

	"github.com/httpretry/httpretry/internal/demotion"
)

// Demote moves an origin that keeps failing behind a request's other candidates
// (its own origin, then Fallbacks) for a while. So requests stop paying an
// attempt, or a whole PerTryTimeout, to an origin that is down.
//
// An origin is never removed. Every candidate still gets its attempt if the
// ones before it fail. When every candidate is demoted, the configured order
// stays. Once a demotion has passed, one request at a time probes the origin in
// its configured place. An answer restores it. A request with one candidate is
// unaffected.
//
// The zero value demotes as DefaultPolicy does, after 5 failures in a row. So
// does a "demote" key left out of JSON. After -1 keeps the configured order.
type Demote struct {
	// After is the number of consecutive failures of an origin that demote it,
	// at most 100. 0 means 5, and a negative value turns demotion off.
	After int
	// For is the length of the first demotion; 0 means 1 s. The nth demotion in
	// a row lasts up to min(n×For, Max), drawn uniformly from its upper half. n
	// falls by 1 for every For the origin then spends undemoted.
	For time.Duration
	// Max is the longest demotion, at least For when both are set; 0
	// means 30 s, or For when that is longer.
	Max time.Duration
}

const (
	defaultDemoteAfter = 5
	maxDemoteAfter     = 100
	defaultDemoteFor   = time.Second
	defaultDemoteMax   = 30 * time.Second
)

// problems words each invalid field of d as "Demote.Field text". Unlike
// Hedge.Max, For and Max do not need After: a negative After alone turns
// demotion off, so that a host entry can do so over a default that sets the
// others, and they are still checked then.
func (d Demote) problems() []string {
	var bad []string
	if d.After > maxDemoteAfter {
		bad = append(bad, fmt.Sprintf("Demote.After %d is above %d", d.After, maxDemoteAfter))
	}
	if d.For < 0 {
		bad = append(bad, fmt.Sprintf("Demote.For %v is negative", d.For))
	}
	if d.Max < 0 {
		bad = append(bad, fmt.Sprintf("Demote.Max %v is negative", d.Max))
	}
	if d.For > 0 && d.Max > 0 && d.Max < d.For {
		bad = append(bad, fmt.Sprintf("Demote.Max %v is less than Demote.For %v", d.Max, d.For))
	}
	return bad
}

// resolve applies d's defaults, once per host policy; d must be valid.
func (d Demote) resolve() demotion.Rule {
	r := demotion.Rule{After: int32(max(d.After, 0)), Base: d.For, Max: d.Max}
	if d.After == 0 {
		r.After = defaultDemoteAfter
	}
	if r.Base == 0 {
		r.Base = defaultDemoteFor
	}
	if r.Max == 0 {
		r.Max = max(defaultDemoteMax, r.Base)
	}
	return r
}

// demoteLast moves the elements of s for which last reports true to the
// back of s, in place and stably: each group keeps its configured order,
// so with none or every one of them last, s is unchanged. Nothing is
// removed. last is called once per element, front to back. A request has a
// handful of candidates: shifting them costs less than any scratch space.
func demoteLast[T any](s []T, last func(*T) bool) {
	front := 0 // where the next element that stays in front goes
	for i := range s {
		if last(&s[i]) {
			continue
		}
		if i > front {
			x := s[i]
			copy(s[front+1:i+1], s[front:i])
			s[front] = x
		}
		front++
	}
}

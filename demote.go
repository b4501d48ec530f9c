package httpretry

import (
	"fmt"
	"time"
)

// Demote moves an origin that keeps failing behind a request's other
// candidates (its own origin, then Fallbacks) for a while, so that requests
// stop paying an attempt, or a whole PerTryTimeout, to an origin that is
// down. An origin is never removed: every candidate still gets its attempt
// if the ones before it fail, and when every candidate is demoted the
// configured order stays. Once a demotion has passed, one request at a time
// probes the origin in its configured place, and an answer restores it. A
// request with one candidate is unaffected. The zero value keeps the
// configured order.
type Demote struct {
	// After is the number of consecutive failures of an origin that
	// demote it, at most 100; 0 turns demotion off.
	After int
	// For is the length of the first demotion: the nth in a row lasts up
	// to min(n×For, Max), drawn uniformly from its upper half, and n falls
	// by 1 for every For the origin then spends undemoted; 0 means 1 s.
	For time.Duration
	// Max is the longest demotion, at least For when both are set; 0
	// means 30 s, or For when that is longer.
	Max time.Duration
}

const (
	maxDemoteAfter   = 100
	defaultDemoteFor = time.Second
	defaultDemoteMax = 30 * time.Second
)

// problems words each invalid field of d as "Demote.Field text". Unlike
// Hedge.Max, For and Max do not need After: After 0 alone turns demotion
// off, so that a host entry can do so over a default that sets the others.
func (d Demote) problems() []string {
	var bad []string
	if d.After < 0 || d.After > maxDemoteAfter {
		bad = append(bad, fmt.Sprintf("Demote.After %d is outside 0..%d", d.After, maxDemoteAfter))
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

// demoteRule is a valid Demote with its defaults resolved, built once per
// host policy. An after of 0 turns demotion off.
type demoteRule struct {
	after     int32
	base, max time.Duration // base > 0
}

// resolve applies d's defaults; d must be valid.
func (d Demote) resolve() demoteRule {
	r := demoteRule{after: int32(d.After), base: d.For, max: d.Max}
	if r.base == 0 {
		r.base = defaultDemoteFor
	}
	if r.max == 0 {
		r.max = max(defaultDemoteMax, r.base)
	}
	return r
}

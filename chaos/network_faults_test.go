package chaos

import (
	"errors"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// outcomeWant is what a fault should do to the calls as a whole.
type outcomeWant int

const (
	wantMixed  outcomeWant = iota // some calls may fail, none may lie
	wantAllOK                     // the fault only slows or splits traffic
	wantNoneOK                    // the fault breaks every exchange
)

// generousPerTry is the per-try timeout of an attempt that gets an answer,
// however slowly: ten times the slowest call measured under a fault that
// only slows traffic, with -race on 2 cores shared with two busy loops,
// and within the callers' 10 s contexts.
const generousPerTry = 5 * time.Second

// TestNetworkFaults drives GETs, keyed POSTs and unkeyed POSTs through each
// toxiproxy toxic and checks the invariants; each case also says whether
// the fault should be invisible to the caller or fatal to every call.
func TestNetworkFaults(t *testing.T) {
	const perKind = 12 // requests of each kind per case
	cases := []struct {
		name     string
		toxics   []toxic
		disabled bool
		want     outcomeWant
		// wire: an unkeyed POST reached the proxy, so it must be sent once.
		wire bool
	}{
		{name: "latency down", toxics: []toxic{{Type: "latency", Attributes: map[string]any{"latency": 40, "jitter": 10}}}, want: wantAllOK, wire: true},
		{name: "latency up", toxics: []toxic{{Type: "latency", Stream: "upstream", Attributes: map[string]any{"latency": 40}}}, want: wantAllOK, wire: true},
		{name: "timeout down", toxics: []toxic{{Type: "timeout", Attributes: map[string]any{"timeout": 0}}}, want: wantNoneOK, wire: true},
		{name: "timeout up", toxics: []toxic{{Type: "timeout", Stream: "upstream", Attributes: map[string]any{"timeout": 0}}}, want: wantNoneOK, wire: true},
		{name: "reset_peer down", toxics: []toxic{{Type: "reset_peer", Attributes: map[string]any{"timeout": 0}}}, want: wantNoneOK, wire: true},
		{name: "reset_peer up after 20ms", toxics: []toxic{{Type: "reset_peer", Stream: "upstream", Attributes: map[string]any{"timeout": 20}}}, want: wantNoneOK, wire: true},
		{name: "slicer down", toxics: []toxic{{Type: "slicer", Attributes: map[string]any{"average_size": 64, "size_variation": 32, "delay": 100}}}, want: wantAllOK, wire: true},
		{name: "slicer up", toxics: []toxic{{Type: "slicer", Stream: "upstream", Attributes: map[string]any{"average_size": 64, "size_variation": 32, "delay": 100}}}, want: wantAllOK, wire: true},
		{name: "limit_data down 2 KiB", toxics: []toxic{{Type: "limit_data", Attributes: map[string]any{"bytes": 2048}}}, want: wantMixed, wire: true},
		{name: "limit_data down 40 B", toxics: []toxic{{Type: "limit_data", Attributes: map[string]any{"bytes": 40}}}, want: wantNoneOK, wire: true},
		{name: "limit_data up 600 B", toxics: []toxic{{Type: "limit_data", Stream: "upstream", Attributes: map[string]any{"bytes": 600}}}, want: wantMixed, wire: true},
		{name: "bandwidth down 128 KB/s", toxics: []toxic{{Type: "bandwidth", Attributes: map[string]any{"rate": 128}}}, want: wantAllOK, wire: true},
		{name: "bandwidth up 128 KB/s", toxics: []toxic{{Type: "bandwidth", Stream: "upstream", Attributes: map[string]any{"rate": 128}}}, want: wantAllOK, wire: true},
		{name: "proxy disabled", disabled: true, want: wantNoneOK},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := chaosPolicy()
			if tc.want == wantAllOK {
				// A fault that only slows traffic must never meet the
				// per-try timeout, or the count of attempts below reads a
				// loaded scheduler: at 250 ms, a 16 KiB body sliced into
				// 64 B chunks took up to 492 ms under -race on 2 busy
				// cores, and was resent or, unkeyed, failed.
				p.PerTryTimeout = generousPerTry
			}
			if tc.disabled {
				// Every refused dial may be resent: a floor that covers all
				// the resends of all the calls, so that whether an unkeyed
				// POST is among the resent does not depend on the order
				// the shuffled calls met the budget in.
				p.Budget.MinRetries = perKind * len(allKinds) * p.MaxRetries
			}
			r := newRig(t, p)
			for _, tx := range tc.toxics {
				r.proxy.add(tx)
			}
			if tc.disabled {
				r.proxy.disable()
			}
			r.drive(r.specs(perKind), 6, 10*time.Second)
			t.Log(r.summary(tc.name))

			switch tc.want {
			case wantAllOK:
				r.requireAllOK()
				assert.EqualValues(t, len(r.tally.calls), r.base.calls.Load(), "a fault that only slows traffic caused resends")
			case wantNoneOK:
				r.assertNoneOK()
			}
			if tc.wire {
				assert.LessOrEqual(t, maxAttempts(r, kindUnkeyedPost), 1, "an unkeyed POST that reached the wire was resent")
			}
			if tc.disabled {
				assert.Zero(t, r.up.calls(), "traffic passed a disabled proxy")
				for _, err := range r.tally.errorsOf(kindGet) {
					assert.True(t, errors.Is(err, syscall.ECONNREFUSED), "error does not wrap ECONNREFUSED: %v", err)
				}
				assert.Greater(t, maxAttempts(r, kindUnkeyedPost), 1, "an unkeyed POST refused at dial was not resent")
			}
			assert.Less(t, r.tally.slowest(), 8*time.Second, "a call ran into the caller's 10 s context")
			r.checkInvariants()
		})
	}
}

// maxAttempts is the most attempts the base saw for one request of kind.
func maxAttempts(r *rig, kind reqKind) int {
	r.base.mu.Lock()
	defer r.base.mu.Unlock()
	most := 0
	for _, c := range r.tally.calls {
		if c.kind == kind {
			most = max(most, r.base.perID[c.id])
		}
	}
	return most
}

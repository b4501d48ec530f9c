package bench

import (
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/httpretry/httpretry/internal/fakeorigin"
)

// OnsetTrouble is what the upstream of an onset run suffers: healthy for
// After from the start of the run, it then fails, for For (0: to the end
// of the run), the attempts Blip picks with Seed and Rate. Rate 1 is a total
// outage (every attempt answered 503), 0.3 a brownout, 0.05 isolated
// blips; Rate 0 is health throughout.
type OnsetTrouble struct {
	After, For time.Duration
	Rate       float64
	Seed       uint64
}

// Fails reports whether attempt n (1 for the first) of request id, sent at
// at after the start of the run, fails. Like Blip it is a pure function,
// so that every contender faces the same failing attempts.
func (tr OnsetTrouble) Fails(id, n int, at time.Duration) bool {
	return tr.Rate > 0 && tr.During(at) && Blip(tr.Seed, id, n, tr.Rate)
}

// During reports whether at, after the start of the run, falls in the
// trouble.
func (tr OnsetTrouble) During(at time.Duration) bool {
	return at >= tr.After && (tr.For <= 0 || at < tr.After+tr.For)
}

// OnsetSend is one attempt an onset upstream received: when, after the
// start of its run, and whether it was its request's first. In process, an
// attempt arrives when it is sent: these are send times.
type OnsetSend struct {
	At    time.Duration
	First bool
}

// OnsetCall is one request of an onset run that completed: the caller got
// a response or an error before the run's deadline.
type OnsetCall struct {
	ID int
	// OK: the caller got a 2xx.
	OK bool
	// Start is when its first attempt was sent, after the start of the run.
	Start time.Duration
	// Attempts counts its attempts the upstream received; FirstFailed says
	// whether the first of them was answered 503.
	Attempts    int
	FirstFailed bool
}

// onsetOrigin is the upstream of the onset runs: in memory, so that a
// synctest bubble runs it in virtual time, it answers 503 to the attempts
// its trouble fails and 200 to the others, each after latency, and
// records every attempt's send time and, per request, its attempts.
type onsetOrigin struct {
	*fakeorigin.Origin
	trouble OnsetTrouble
	latency time.Duration
	start   time.Time

	mu    sync.Mutex
	sends []OnsetSend
	reqs  map[int]*onsetRequest
}

// onsetRequest is what the upstream saw of one request.
type onsetRequest struct {
	start       time.Duration
	attempts    int
	firstFailed bool
}

// onsetURL is where the onset runs send their requests: the in-memory
// upstream answers whatever the URL.
const onsetURL = "http://upstream.invalid/"

// newOnsetOrigin returns an upstream that suffers tr from now on.
func newOnsetOrigin(tr OnsetTrouble, latency time.Duration) *onsetOrigin {
	o := &onsetOrigin{trouble: tr, latency: latency, start: time.Now(), reqs: map[int]*onsetRequest{}}
	o.Origin = fakeorigin.New(o.answer).Quiet()
	return o
}

func (o *onsetOrigin) answer(q *fakeorigin.Request) fakeorigin.Answer {
	at := time.Since(o.start)
	// Every request of a run is numbered; one that is not would count as
	// request -1.
	id, err := strconv.Atoi(q.Header.Get(RequestIDHeader))
	if err != nil {
		id = -1
	}
	o.mu.Lock()
	r := o.reqs[id]
	if r == nil {
		r = &onsetRequest{start: at}
		o.reqs[id] = r
	}
	r.attempts++
	failed := o.trouble.Fails(id, r.attempts, at)
	if r.attempts == 1 {
		r.firstFailed = failed
	}
	o.sends = append(o.sends, OnsetSend{At: at, First: r.attempts == 1})
	o.mu.Unlock()

	a := okAnswer
	if failed {
		a = unavailable
	}
	a.After = o.latency
	return a
}

// run returns what the upstream received, with the calls that completed,
// in the order of their numbers.
func (o *onsetOrigin) run(name string, calls []FleetCall) OnsetRun {
	o.mu.Lock()
	defer o.mu.Unlock()
	r := OnsetRun{Library: name, Trouble: o.trouble, Sends: slices.Clone(o.sends), Started: len(o.reqs)}
	slices.SortFunc(calls, func(a, b FleetCall) int { return a.ID - b.ID })
	for _, c := range calls {
		call := OnsetCall{ID: c.ID, OK: c.OK}
		if q := o.reqs[c.ID]; q != nil {
			call.Start, call.Attempts, call.FirstFailed = q.start, q.attempts, q.firstFailed
		}
		r.Calls = append(r.Calls, call)
	}
	return r
}

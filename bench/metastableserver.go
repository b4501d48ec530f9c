package bench

import (
	"context"
	"sync"
	"time"

	"github.com/httpretry/httpretry/internal/fakeorigin"
)

// metastableServer is the server of the metastability benchmark: one FIFO
// queue served one request at a time at a fixed capacity, cut to a share
// of it while the trigger lasts.
//
// It decides when an attempt is done as the attempt arrives, from the work
// already queued. So an attempt whose client gives up keeps its place and
// still costs its service time: the server does the work whether or not
// anyone waits for it, as a server that cannot see its clients leave does.
// It is safe for concurrent use.
type metastableServer struct {
	service time.Duration // one request's work at full capacity
	from    time.Duration // the trigger, from the start of the run
	to      time.Duration
	share   float64 // the capacity left while the trigger lasts; 0: none

	mu        sync.Mutex
	start     time.Time
	free      time.Duration // when the work admitted so far is done, from start
	attempts  []metastableAttempt
	abandoned int
}

// metastableAttempt is one attempt as the server saw it: when it arrived
// and when its work was done, from the start of the run.
type metastableAttempt struct{ at, done time.Duration }

// sojourn is the attempt's queueing delay, its own service included.
func (a metastableAttempt) sojourn() time.Duration { return a.done - a.at }

func newMetastableServer(cfg MetastableConfig) *metastableServer {
	return &metastableServer{
		service: time.Duration(float64(time.Second) / cfg.Capacity),
		from:    cfg.WarmUp,
		to:      cfg.WarmUp + cfg.Trigger,
		share:   cfg.TriggerShare,
	}
}

// begin sets the instant the run starts, before any attempt arrives.
func (s *metastableServer) begin(start time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.start = start
}

// admit queues an attempt that arrives at now and returns when its work
// will be done.
func (s *metastableServer) admit(now time.Time) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	at := now.Sub(s.start)
	done := s.finish(max(at, s.free))
	s.free = done
	s.attempts = append(s.attempts, metastableAttempt{at: at, done: done})
	return s.start.Add(done)
}

// finish returns when one request's work, begun at from, is done: at full
// capacity outside the trigger, at its share inside.
func (s *metastableServer) finish(from time.Duration) time.Duration {
	work := s.service // left to do, in time at full capacity
	if from < s.from {
		if from+work <= s.from {
			return from + work
		}
		work -= s.from - from
		from = s.from
	}
	if from < s.to {
		if s.share > 0 {
			slow := time.Duration(float64(work) / s.share)
			if from+slow <= s.to {
				return from + slow
			}
			work -= time.Duration(float64(s.to-from) * s.share)
		}
		from = s.to
	}
	return from + work
}

// answer is the server as a fakeorigin.Script: a 200 once the attempt's
// work is done. An attempt whose client goes first is counted as
// abandoned; its work stays queued all the same.
func (s *metastableServer) answer(q *fakeorigin.Request) fakeorigin.Answer {
	now := time.Now()
	done := s.admit(now)
	context.AfterFunc(q.Context(), func() {
		if time.Now().Before(done) {
			s.mu.Lock()
			s.abandoned++
			s.mu.Unlock()
		}
	})
	a := okAnswer
	a.After = done.Sub(now)
	return a
}

// origin returns the server as a fakeorigin.Origin that keeps no record
// of its own: in memory for a synctest bubble, or as the handler of a
// loopback server.
func (s *metastableServer) origin() *fakeorigin.Origin {
	return fakeorigin.New(s.answer).Quiet()
}

// tally returns the attempts admitted so far, in order of arrival, and
// how many of them were abandoned.
func (s *metastableServer) tally() ([]metastableAttempt, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]metastableAttempt(nil), s.attempts...), s.abandoned
}

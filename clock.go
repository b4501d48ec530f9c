package httpretry

import "time"

// The clock is read by the actors only: the front door and the attempt
// loop, an attempt, a hedged round, a resuming body, a budget's ticker,
// and the public wrappers (Budget.TryReserve, Stats, Budgets.Range). What
// they decide, and the state they share, takes the instant they hold, as
// rate.Limiter's AllowN(t, n) does, so that a test walks it through fixed
// instants. TestClockSites holds the count of reads.

// instant is the instant of one step, read from the clock the first time
// something needs it and held after, so that the whole step sees one
// instant. The zero instant is not read yet. A step that needs none reads
// no clock: the first attempt to a host whose budget is ticking is such a
// step, and a read costs about 50 ns on a virtual machine's clock
// (kvm-clock), where BenchmarkGET's whole request costs about 400 ns.
// Its underlying time.Time lets a caller that holds a time.Time, zero
// when not read yet, lend it as (*instant)(&now).
type instant time.Time

// read returns the instant, reading the clock on first use.
func (i *instant) read() time.Time {
	if t := time.Time(*i); !t.IsZero() {
		return t
	}
	*i = instant(time.Now())
	return time.Time(*i)
}

// judgedAt is the instant an outcome is judged at, and the decisions after
// it are taken at: now when need says one of them depends on it, the zero
// time otherwise (see call.clock, clockFor), which spares the read.
func judgedAt(need bool) time.Time {
	if need {
		return time.Now()
	}
	return time.Time{}
}

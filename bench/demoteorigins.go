package bench

import (
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/httpretry/httpretry/internal/fakeorigin"
)

// demoteOrigin is the behaviour of one origin of the demotion scenario: a
// short 200 while healthy, a 503 or a request never answered as its fault
// says. Over loopback, refusing connections is up to whoever serves it;
// in memory, its Origin refuses the dial. It is safe for concurrent use.
type demoteOrigin struct {
	fault  atomic.Int32       // a DemoteFault
	memory *fakeorigin.Origin // in process, for synctest; nil over loopback
}

func (o *demoteOrigin) answer(*fakeorigin.Request) fakeorigin.Answer {
	switch DemoteFault(o.fault.Load()) {
	case FaultUnavailable:
		return unavailable
	case FaultRefuse:
		return fakeorigin.Answer{Fault: fakeorigin.Refuse}
	case FaultBlackHole:
		// Accepted and never answered: the client gives up on it.
		return fakeorigin.Answer{Fault: fakeorigin.BlackHole}
	}
	return okAnswer
}

// loopbackOrigin serves a demoteOrigin on a fixed loopback address, and
// refuses connections by not listening on it.
type loopbackOrigin struct {
	demoteOrigin
	addr string

	mu  sync.Mutex
	srv *http.Server // nil while it refuses connections
}

// listen serves o on its address, which is 127.0.0.1:0 the first time.
func (o *loopbackOrigin) listen() error {
	l, err := net.Listen("tcp", o.addr)
	if err != nil {
		return fmt.Errorf("bench: listen on %s: %w", o.addr, err)
	}
	o.addr = l.Addr().String()
	o.srv = &http.Server{Handler: fakeorigin.New(o.answer).Quiet()}
	go o.srv.Serve(l)
	return nil
}

// setFault switches o to f. Refusing connections closes the listener and
// every connection, so that neither a new dial nor a kept-alive connection
// reaches it; any other fault listens again on the same address.
func (o *loopbackOrigin) setFault(f DemoteFault) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.fault.Store(int32(f))
	switch {
	case f == FaultRefuse && o.srv != nil:
		o.srv.Close()
		o.srv = nil
	case f != FaultRefuse && o.srv == nil:
		return o.listen()
	}
	return nil
}

func (o *loopbackOrigin) close() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.srv != nil {
		o.srv.Close()
		o.srv = nil
	}
}

// loopbackOrigins are the scenario's three origins, primary first.
type loopbackOrigins [3]*loopbackOrigin

func startLoopbackOrigins() (*loopbackOrigins, error) {
	var lo loopbackOrigins
	for i := range lo {
		lo[i] = &loopbackOrigin{addr: "127.0.0.1:0"}
		if err := lo[i].listen(); err != nil {
			lo.close()
			return nil, err
		}
	}
	return &lo, nil
}

func (lo *loopbackOrigins) urls() []string {
	out := make([]string, len(lo))
	for i, o := range lo {
		out[i] = "http://" + o.addr
	}
	return out
}

func (lo *loopbackOrigins) setFault(i int, f DemoteFault) error { return lo[i].setFault(f) }

func (lo *loopbackOrigins) close() {
	for _, o := range lo {
		if o != nil {
			o.close()
		}
	}
}

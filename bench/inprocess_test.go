package bench

import "github.com/httpretry/httpretry/internal/fakeorigin"

// inProcessBase serves each request in memory, in the caller's
// goroutine: a network that takes no time.
type inProcessBase struct{ *fakeorigin.Origin }

func (inProcessBase) CloseIdleConnections() {}

package httpretry

import (
	"fmt"
	"time"
)

// Hedge sends speculative copies of a slow request. The zero value sends
// none.
type Hedge struct {
	// After is how long to wait for response headers before sending another
	// copy; 0 turns hedging off.
	After time.Duration
	// Max is the most copies sent beside the first attempt, at most 16.
	Max int
}

func (h Hedge) problems() []string {
	if h == (Hedge{}) {
		return nil
	}
	return []string{fmt.Sprintf("Hedge %+v: hedging is not implemented yet", h)}
}

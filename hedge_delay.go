package httpretry

import (
	"time"

	"github.com/httpretry/httpretry/internal/latency"
)

// defaultMinAfter is the least learned delay when Hedge.MinAfter is 0.
const defaultMinAfter = time.Millisecond

// hedgeDelay decides how long a hedged round under a learned delay waits
// before a copy, and whether a copy goes at all. It reads the origin's
// estimate (est, warm as latency.Estimator.Estimate returns them) and the
// policy's After and MinAfter. Warm, it waits max(MinAfter, est), MinAfter
// 0 meaning 1 ms; an estimate at latency.Top sends no copy. Cold, it waits
// After, and sends no copy when After is 0.
func hedgeDelay(est time.Duration, warm bool, after, minAfter time.Duration) (d time.Duration, send bool) {
	if !warm {
		return after, after > 0
	}
	if est >= latency.Top {
		return 0, false
	}
	if minAfter == 0 {
		minAfter = defaultMinAfter
	}
	return max(minAfter, est), true
}

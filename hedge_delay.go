package httpretry

import (
	"time"

	"github.com/httpretry/httpretry/internal/latency"
)

// defaultMinAfter is the least learned delay when Hedge.MinAfter is 0.
const defaultMinAfter = time.Millisecond

// hedgeDelay decides how long a hedged round under a learned delay waits
// before a copy, from the origin's estimate (est, warm as
// latency.Estimator.Estimate returns them) and the policy's After and
// MinAfter, and whether a copy goes at all. Warm: max(MinAfter, est),
// MinAfter 0 meaning 1 ms, and no copy for an estimate at the histogram's
// top. Cold: After, or no copy when After is 0.
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

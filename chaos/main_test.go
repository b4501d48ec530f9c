package chaos

import (
	"testing"

	"github.com/rs/zerolog"
	"go.uber.org/goleak"
)

func init() {
	// toxiproxy's bandwidth toxic logs through zerolog's global logger; the
	// tests read their own figures, not its trace lines.
	zerolog.SetGlobalLevel(zerolog.Disabled)
}

// TestMain fails the run on any goroutine left behind, except five of
// toxiproxy v2.5.0's own: when a toxic that ends a stream (reset_peer,
// limit_data) closes its stub, the no-op stub in front of it may be
// blocked forever sending the next chunk into the closed toxic's input,
// and the link reader behind it blocked feeding the no-op; in the long
// soak (make soak) a slicer stub is orphaned the same way, a bandwidth
// stub when a resumed body's abandoned connection goes, and a latency stub
// when its link closes before the toxic is removed, which faultProxy does
// on purpose (removing a toxic from a live link deadlocks: see
// faultProxy.quiesce). No API reaches
// those orphaned stubs once their link is gone, so they cannot be stopped
// from outside; every goroutine of httpretry, net/http and the test
// servers is still checked.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreTopFunction("github.com/Shopify/toxiproxy/v2/toxics.(*NoopToxic).Pipe"),
		goleak.IgnoreTopFunction("github.com/Shopify/toxiproxy/v2/stream.(*ChanWriter).Write"),
		goleak.IgnoreTopFunction("github.com/Shopify/toxiproxy/v2/toxics.(*SlicerToxic).Pipe"),
		goleak.IgnoreTopFunction("github.com/Shopify/toxiproxy/v2/toxics.(*BandwidthToxic).Pipe"),
		goleak.IgnoreTopFunction("github.com/Shopify/toxiproxy/v2/toxics.(*LatencyToxic).Pipe"),
	)
}

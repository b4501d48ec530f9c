package bench

import "testing"

// skipFailsafeUnderRace skips t when it would run failsafe-go under the
// race detector: its retry executor, run in synctest bubbles, crashed the
// race runtime in make test (a SIGSEGV in runtime.(*timer).maybeRunChan,
// Go 1.26.8; twice in about ten runs), a fault of the runtime's, not a race
// report. Without -race these tests run.
func skipFailsafeUnderRace(t *testing.T, name string) {
	t.Helper()
	if raceDetector && (name == NameFailsafe || name == NameFailsafeBudget) {
		t.Skip("failsafe-go in synctest bubbles under -race crashes the runtime; run without -race")
	}
}

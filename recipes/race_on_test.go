//go:build race

package recipes

// raceEnabled says the tests run under the race detector.
const raceEnabled = true

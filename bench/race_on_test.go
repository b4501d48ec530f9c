//go:build race

package bench

// raceDetector says the tests run under the race detector.
const raceDetector = true

//go:build race

package httpretry

// raceEnabled says the tests run under the race detector, which makes a
// few volume tests ten times slower; they feed less then.
const raceEnabled = true

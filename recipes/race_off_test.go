//go:build !race

package recipes

const raceEnabled = false

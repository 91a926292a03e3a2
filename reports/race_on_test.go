//go:build race

package reports

// raceEnabled: the race detector slows rendering ~10x.
const raceEnabled = true

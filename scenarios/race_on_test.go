//go:build race

package scenarios_test

// raceEnabled: under the race detector the fixture tests run one variant
// of each scenario group.
const raceEnabled = true

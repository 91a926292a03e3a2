package vmcp_test

import "testing"

// TestProbePaced runs the tests paced by the gateway's health probes,
// which time out after 150 to 450 ms (listChangedCfg, loadProofHealth and
// their own configs), side by side with each other only.
//
// Serial (its subtests are parallel among themselves): each of them, run
// as a parallel top-level test beside the others of the package (-race, a
// second copy of the package running, or -count=3 at load average 9), saw
// starved probes time out: beta never became healthy within 10 s, alpha
// was marked unhealthy and find_tool found nothing. The other tests of the
// package (stress tests spinning on calls among them) are what starves
// them; these tests mostly wait for the next probe. A serial top-level test
// runs before every parallel one starts, so here they share the process
// with each other only.
func TestProbePaced(t *testing.T) {
	for _, tc := range []struct {
		name string
		run  func(*testing.T)
	}{
		{"HealthJSONExactKeys", testHealthJSONExactKeys},
		{"SequenceHealthyUnhealthyOpenHalfOpenClosedAfterRestart", testSequenceHealthyUnhealthyOpenHalfOpenClosedAfterRestart},
		{"ListChangedWhenBackendLeavesAndRejoins", testListChangedWhenBackendLeavesAndRejoins},
		{"ListChangedReindexesOptimizer", testListChangedReindexesOptimizer},
		{"ListChangedLateJoinOfBackendDownAtSessionStart", testListChangedLateJoinOfBackendDownAtSessionStart},
		{"ListChangedOffByDefault", testListChangedOffByDefault},
		{"HealthProbeMethodsReachTheBackend", testHealthProbeMethodsReachTheBackend},
		{"HealthProbeTimeoutIsATimeout", testHealthProbeTimeoutIsATimeout},
		{"HealthMonitorExcludesUnhealthyBackendsFromNewSessions", testHealthMonitorExcludesUnhealthyBackendsFromNewSessions},
		{"HealthUnauthenticatedOn403Probe", testHealthUnauthenticatedOn403Probe},
		{"OptimizerStatelessExclusionPerRequest", testOptimizerStatelessExclusionPerRequest},
		{"OptimizerExcludesBackendFailingProbesOnly", testOptimizerExcludesBackendFailingProbesOnly},
		{"OptimizerLiveSessionLosesEveryBackend", testOptimizerLiveSessionLosesEveryBackend},
		{"OptimizerWithHealthMonitor", testOptimizerWithHealthMonitor},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.run(t)
		})
	}
}
